"""The scaling model's core (scripts/bench/scaling_model): the parsers of stylegan2_bench's outputs, the ring
allreduce and the overlap of each phase's buckets with its backward. docs/scaling.md says how it is used."""
import json
import re
import sys

PHASES = (("Gmain", "G", "G_reg_interval", False), ("Greg", "G", "G_reg_interval", True),
          ("Dmain", "D", "D_reg_interval", False), ("Dreg", "D", "D_reg_interval", True))

def fail(message):
    sys.exit(f"scaling_model: {message}")


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")


# ---- parsing stylegan2_bench output ----------------------------------------------------------

def parse_comm(path):
    """{ranks, sweep: [(bytes, seconds)], buckets: {"G": [bytes...], "D": [...]}} of a comm bench."""
    text = read_text(path)
    header = re.search(r"# allreduce \(sum\), backend (\S+), (\d+) ranks", text)
    if not header:
        fail(f"{path}: no '# allreduce (sum), backend B, N ranks' line: not a stylegan2_bench comm output")
    sweep, buckets = [], {"G": [], "D": []}
    for line in text.splitlines():
        bucket = re.match(r"\s*([GD]) bucket (\d+)\s+(\d+)\s+([\d.]+)", line)
        size = re.match(r"\s*(\d+)\s+(\d+)\s+([\d.]+)\s", line)
        if bucket:
            buckets[bucket.group(1)].append(int(bucket.group(3)))
        elif size:
            sweep.append((int(size.group(2)), float(size.group(3)) * 1e-6))
    if not sweep:
        fail(f"{path}: no message-size rows")
    return {"path": path, "backend": header.group(1), "ranks": int(header.group(2)), "sweep": sweep,
            "buckets": buckets}


def parse_bench(path):
    """{phases: {name: seconds per call}, step: seconds, batch, intervals: {G_reg_interval, D_reg_interval},
    launch: {network: fractions}, buckets: {network: bytes}} of a training bench."""
    text = read_text(path)
    phases = {m.group(1): float(m.group(2)) * 1e-3
              for m in re.finditer(r"^(Gmain|Greg|Dmain|Dreg)\s+([\d.]+)\s", text, re.M)}
    step = re.search(r"^step\s+([\d.]+)\s", text, re.M)
    batch = re.search(r"batch (\d+)", text)
    if not step or not batch:
        fail(f"{path}: no 'step' row: not a finished stylegan2_bench output")
    intervals = {f"{m.group(1)}_reg_interval": int(m.group(2))
                 for m in re.finditer(r"^([GD])reg\s+[\d.]+\s+[\d.]+\s+(\d+) steps?(?:\s+[\d.]+)?$", text, re.M)}
    launch = {m.group(1): [float(f) for f in m.group(2).split()]
              for m in re.finditer(r"^# ([GD]) buckets launched at ([\d. ]*) of their pass", text, re.M)}
    buckets = {m.group(1): [int(b) for b in m.group(2).split()]
               for m in re.finditer(r"^# ([GD]) bucket bytes ([\d ]*) \(launch order\)", text, re.M)}
    reducer = re.search(r"allreduce per step busy ([\d.]+) s, exposed after backward ([\d.]+) s", text)
    allreduce = {"busy": float(reducer.group(1)), "exposed": float(reducer.group(2))} if reducer else None
    return {"path": path, "phases": phases, "step": float(step.group(1)) * 1e-3, "batch": int(batch.group(1)),
            "intervals": intervals, "launch": launch, "buckets": buckets, "allreduce": allreduce}


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
