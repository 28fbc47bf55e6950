"""The scaling model's core (scripts/bench/scaling_model): the readers of stylegan2_bench's records, the ring
allreduce and the overlap of each phase's buckets with its backward. docs/scaling.md says how it is used."""
import json
import sys

PHASES = (("Gmain", "G", "G_reg_interval", False), ("Greg", "G", "G_reg_interval", True),
          ("Dmain", "D", "D_reg_interval", False), ("Dreg", "D", "D_reg_interval", True))

def fail(message):
    sys.exit(f"scaling_model: {message}")


# ---- reading stylegan2_bench's records (--jsonl) ------------------------------------------------

def last_record(path, kind):
    """The last record of `kind` in a stylegan2_bench --jsonl file."""
    records = [r for r in read_jsonl(path) if r.get("kind") == kind]
    if not records:
        fail(f"{path}: no '{kind}' record: not the --jsonl file of a stylegan2_bench {kind} run")
    return records[-1]


def parse_comm(path):
    """{ranks, backend, sweep: [(bytes, seconds)], buckets: {"G": [bytes...], "D": [...]}} of a comm bench's
    --jsonl record."""
    record = last_record(path, "comm")
    sweep = [(row["bytes"], row["seconds"]) for row in record["rows"] if row.get("size_sweep")]
    buckets = {"G": [], "D": []}
    for row in record["rows"]:
        network, _, rest = row["label"].partition(" ")
        if network in buckets and rest.startswith("bucket "):
            buckets[network].append(row["bytes"])
    if not sweep:
        fail(f"{path}: the comm record has no message-size rows")
    return {"path": path, "backend": record["backend"], "ranks": record["ranks"], "sweep": sweep, "buckets": buckets}


def parse_bench(path):
    """{phases: {name: seconds per call}, step: seconds, batch, intervals: {G_reg_interval, D_reg_interval},
    launch: {network: fractions}, buckets: {network: bytes}, allreduce} of a training bench's --jsonl record."""
    record = last_record(path, "train")
    phases = {phase["name"]: phase["s"] for phase in record["phases"]}
    intervals = {f"{phase['name'][0]}_reg_interval": phase["every"] for phase in record["phases"]
                 if phase["name"] in ("Greg", "Dreg")}
    buckets = record.get("buckets", {})
    reduced = record["allreduce"]
    allreduce = {"busy": reduced["busy_s"], "exposed": reduced["exposed_s"]} if reduced.get("measured", True) else None
    return {"path": path, "phases": phases, "step": record["step_s"], "batch": record["rank_batch"],
            "intervals": intervals,
            "launch": {net: b["launch_fraction"] for net, b in buckets.items() if b["launch_fraction"]},
            "buckets": {net: b["bytes"] for net, b in buckets.items() if b["bytes"]}, "allreduce": allreduce}


# The values the bench scripts tabulate, by name (`scaling_model fields`): one parser for every script.
BENCH_FIELDS = {
    "step_s": lambda b: b["step"],
    "batch": lambda b: b["batch"],
    "img_per_s": lambda b: b["batch"] / b["step"],
    "allreduce_busy_s": lambda b: b["allreduce"]["busy"] if b["allreduce"] else None,
    "allreduce_exposed_s": lambda b: b["allreduce"]["exposed"] if b["allreduce"] else None,
    **{f"{phase}_s": (lambda b, phase=phase: b["phases"].get(phase)) for phase, *_ in PHASES},
}


# ---- the model ---------------------------------------------------------------------------------

def ring_factor(ranks):
    return 2.0 * (ranks - 1) / ranks


def fit_allreduce(comm, min_bytes=65536):
    """(alpha per hop in s, busbw in B/s): least squares in relative error over sizes >= min_bytes."""
    n, path = comm["ranks"], comm.get("path", "the comm bench")
    if n < 2:
        fail(f"{path}: a comm bench of one rank cannot calibrate an allreduce")
    points = [(ring_factor(n) * size, t) for size, t in comm["sweep"] if size >= min_bytes]
    if len(points) < 2:
        fail(f"{path}: fewer than two message sizes of at least 64 KiB")
    # t ~ a + b x, weights 1 / t^2 (relative error): normal equations of a 2x2 system.
    s11 = sum(1 / t**2 for _, t in points)
    s12 = sum(x / t**2 for x, t in points)
    s22 = sum(x * x / t**2 for x, t in points)
    r1 = sum(1 / t for _, t in points)
    r2 = sum(x / t for x, t in points)
    det = s11 * s22 - s12 * s12
    a, b = (r1 * s22 - r2 * s12) / det, (s11 * r2 - s12 * r1) / det
    if b <= 0:
        fail(f"{path}: the times do not grow with the message size (too noisy to give a bandwidth): "
             "rerun the comm bench with more --iters and a larger --max-bytes, on an idle machine")
    return max(a, 0.0) / (2 * (n - 1)), 1.0 / b


def allreduce_seconds(size, ranks, alpha, busbw):
    if ranks < 2:
        return 0.0
    return 2 * (ranks - 1) * alpha + ring_factor(ranks) * size / busbw


def ready_fractions(buckets, backward_fraction):
    """Without a measurement: bucket i ready when backward (the phase's last backward_fraction) has
    produced the bytes of buckets 0..i, at a constant rate."""
    total, produced, fractions = float(sum(buckets)), 0.0, []
    for size in buckets:
        produced += size
        fractions.append(1 - backward_fraction + backward_fraction * produced / total)
    return fractions


def exposed_seconds(buckets, ready, phase_seconds, overlap, cost):
    """Allreduce time past the end of a phase whose bucket i is ready at ready[i] x phase_seconds."""
    costs = [cost(size) for size in buckets]
    if not overlap:
        return sum(costs)
    end = 0.0
    for fraction, c in zip(ready, costs):
        end = max(end, fraction * phase_seconds) + c
    return max(0.0, end - phase_seconds)


def predict_step(compute_step, phases, buckets, intervals, cost, overlap, ready):
    """ready: {network: [fraction of the phase at which each bucket is ready]}."""
    step = compute_step
    for name, network, interval_key, regularization in PHASES:
        if name in phases:
            every = intervals[interval_key] if regularization else 1
            step += exposed_seconds(buckets[network], ready[network], phases[name], overlap, cost) / every
    return step


def layout_and_ready(comm_buckets, bench, backward_fraction):
    """({network: bucket bytes}, {network: ready fractions}). Measured launch fractions pair only with
    the bucket sizes the same bench printed (both in the training's launch order, which the comm
    bench, reading the layout before any backward, does not have); without them, the comm bench's
    layout with the byte-rate estimate."""
    buckets, ready = {}, {}
    for net in ("G", "D"):
        sizes, launch = bench.get("buckets", {}).get(net), bench.get("launch", {}).get(net)
        if sizes and launch:
            if len(sizes) != len(launch):
                fail(f"{bench['path']}: {len(launch)} {net} launch fractions for {len(sizes)} {net} buckets")
            buckets[net], ready[net] = sizes, launch
        else:
            buckets[net] = comm_buckets[net]
            ready[net] = ready_fractions(comm_buckets[net], backward_fraction)
    return buckets, ready


def read_jsonl(path):
    records = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        fail(f"{path}:{number}: not a JSON record ({e.msg})")
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    return records
