"""The scaling model on clusters (scripts/bench/scaling_model): the simulated cluster of
scripts/bench/simulated_cluster, whose overhead it must predict, and the paper's clusters predicted for
this project's reducer. docs/scaling.md says how to read both."""
import math
import os

from scaling_core import exposed_seconds, fail, read_jsonl

SIMULATED_TOLERANCE = 0.20


GLOO_MAX_SEGMENT_BYTES = 1 << 20  # Gloo's default maxSegmentSize (kMaxSegmentSize)


def gloo_ring_rounds(size, ranks):
    """(rounds, segment bytes) of Gloo's ring allreduce of `size` float32 bytes (its allreduce.cc):
    segments of about size / (2 ranks), at most 1 MiB, at least 2 x ranks of them and a multiple of
    ranks; the reduce-scatter and the allgather each send all but one rank's share of them, two in
    flight at a time, so a round sends two."""
    segment = min(-(-size // (2 * ranks)), GLOO_MAX_SEGMENT_BYTES)
    segment = -(-segment // 4) * 4
    segments = max(-(-size // segment), 2 * ranks)
    segments = -(-segments // ranks) * ranks
    return segments - segments // ranks, segment


def ring_seconds(size, ranks, alpha, bandwidth, delay, blend=1.0):
    """A round costs the software's turn-around (alpha) and its two segments' time on the slowest link,
    which overlap in part: their `blend`-norm (1: the sum, no overlap; larger: towards the longer of
    the two, full overlap), then the link's one-way delay."""
    rounds, segment = gloo_ring_rounds(size, ranks)
    wire = 2 * segment / bandwidth
    turn = max(alpha, wire) if blend == float("inf") else (alpha ** blend + wire ** blend) ** (1 / blend)
    return rounds * (turn + delay)


# The blends the fit tries: from no overlap of software and wire (1) to full overlap (inf).
BLENDS = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0, float("inf"))


def fabric_links(record):
    """(bytes per second, one-way delay) of the ring's slowest link: the NICs' once the ranks span nodes."""
    spans = record["ranks"] > record["gpus_per_node"]
    bits, delay = (record["nic_bits"], record["nic_delay_s"]) if spans else (record["link_bits"], record["link_delay_s"])
    return bits / 8, delay


def fit_ring(comm, nominal_bandwidth, delay):
    """(alpha, bandwidth, blend) of ring_seconds fitted to a comm record's size sweep, least squares in
    relative error: for each blend, a grid of bandwidths about the nominal, for each the best alpha
    (golden section)."""
    points = [(row["bytes"], row["seconds"]) for row in comm["rows"] if row["size_sweep"]]
    if len(points) < 3:
        fail(f"{comm['case']}: fewer than three message sizes to fit the allreduce on")

    def loss(alpha, bandwidth, blend):
        return sum((ring_seconds(size, comm["ranks"], alpha, bandwidth, delay, blend) / t - 1) ** 2
                   for size, t in points)

    def best_alpha(bandwidth, blend):
        low, high = 0.0, 0.05
        for _ in range(50):
            a, b = low + 0.382 * (high - low), low + 0.618 * (high - low)
            low, high = (low, b) if loss(a, bandwidth, blend) < loss(b, bandwidth, blend) else (a, high)
        return (low + high) / 2
    best = None
    for blend in BLENDS:
        for i in range(81):
            bandwidth = nominal_bandwidth * 10 ** (-1.5 + 1.6 * i / 80)  # 0.03x .. 1.26x the nominal
            alpha = best_alpha(bandwidth, blend)
            candidate = (loss(alpha, bandwidth, blend), alpha, bandwidth, blend)
            best = min(best, candidate) if best else candidate
    return best[1:]


def measured_cost(comm, fitted):
    """An allreduce's time at `size`: the comm bench's own measurements, interpolated linearly in the
    logarithm of the size between the two it measured nearest, and the fitted ring outside them."""
    points = sorted((row["bytes"], row["seconds"]) for row in comm["rows"] if row["size_sweep"])

    def cost(size):
        if size <= points[0][0] or size >= points[-1][0]:
            return fitted(size)
        for (s0, t0), (s1, t1) in zip(points, points[1:]):
            if s0 <= size <= s1:
                w = math.log(size / s0) / math.log(s1 / s0)
                return t0 + w * (t1 - t0)
        return fitted(size)
    return cost


def simulated_overhead(record, cost):
    """The step's allreduce time past each phase's end, amortised: the buckets due as the simulated
    backward scheduled them."""
    total = 0.0
    for phase in record["phases"]:
        buckets = record["buckets"]["G" if phase["name"].startswith("G") else "D"]
        total += exposed_seconds(buckets["bytes"], buckets["scheduled_ready"], phase["s"], record["overlap"],
                                 cost) / phase["every"]
    return total


def command_validate_simulated(args):
    records = read_jsonl(os.path.join(args.dir, "simulated.jsonl"))
    alone = {r["ranks"]: r["step_s"] for r in records if r.get("mode") == "compute_alone"}
    comm = {r["fabric"]: r for r in records if r.get("kind") == "comm"}
    fits, rows = {}, []
    for r in records:
        if r.get("kind") != "simulated" or r.get("mode") != "distributed":
            continue
        n, fabric = r["ranks"], r["fabric"]
        if n not in alone or fabric not in comm:
            fail(f"{r['case']}: no compute-alone run of {n} ranks or no comm bench of {fabric} in {args.dir}")
        bandwidth, delay = fabric_links(r)
        if fabric not in fits:
            fits[fabric] = fit_ring(comm[fabric], bandwidth, delay)
        alpha, fitted_bandwidth, blend = fits[fabric]
        measured = r["step_s"] - alone[n]
        fitted = measured_cost(comm[fabric], lambda size: ring_seconds(size, n, alpha, fitted_bandwidth, delay, blend))
        predicted = simulated_overhead(r, fitted)
        from_links = simulated_overhead(r, lambda size: ring_seconds(size, n, alpha, bandwidth, delay, blend))
        rows.append({"case": r["case"], "ranks": n, "overlap": r["overlap"], "measured_overhead_s": round(measured, 4),
                     "predicted_overhead_s": round(predicted, 4), "error": round(predicted / measured - 1, 4),
                     "nominal_link_overhead_s": round(from_links, 4),
                     "nominal_link_error": round(from_links / measured - 1, 4), "alpha_ms": round(alpha * 1e3, 3),
                     "blend": blend,
                     "fitted_MBps": round(fitted_bandwidth / 1e6, 2), "nominal_MBps": round(bandwidth / 1e6, 2),
                     "compute_step_s": round(alone[n], 4), "ranks_cpu_share": round(r.get("ranks_cpu_s", 0) / r["step_s"], 3)})
    if not rows:
        fail(f"{args.dir}/simulated.jsonl: no distributed simulated run")
    header = list(rows[0])
    out_path = os.path.join(args.dir, "model.tsv")
    with open(out_path, "w") as f:
        f.write("\t".join(header) + "\n")
        f.writelines("\t".join(str(row[k]) for k in header) + "\n" for row in rows)
    width = max(len(row["case"]) for row in rows)
    print(f"{'case':<{width}}  measured ms  predicted ms   error  | nominal links ms  error | alpha ms  blend  "
          "fitted/nominal MB/s")
    for row in rows:
        print(f"{row['case']:<{width}} {row['measured_overhead_s'] * 1e3:12.1f} {row['predicted_overhead_s'] * 1e3:13.1f} "
              f"{100 * row['error']:6.1f}% | {row['nominal_link_overhead_s'] * 1e3:16.1f} {100 * row['nominal_link_error']:6.1f}% "
              f"| {row['alpha_ms']:8.3f}  {row['blend']:5g}  {row['fitted_MBps']:.1f}/{row['nominal_MBps']:.1f}")
    worst = max(abs(row["error"]) for row in rows)
    print(f"# overhead = step - compute alone; worst error {100 * worst:.1f}% (tolerance {100 * SIMULATED_TOLERANCE:.0f}%); "
          f"written {out_path}")
    return 0 if worst <= SIMULATED_TOLERANCE else 1


# ---- the paper's clusters, predicted for this project's reducer ----------------------------------

# Phase shares of a step, per call of Gmain, Greg, Dmain, Dreg (config-f on the GPU we measured:
# docs/performance.md, conv2d_gradfix); scripts/bench/simulated_cluster waits by the same shares.
PHASE_SHARES = {"Gmain": 0.371, "Greg": 0.703, "Dmain": 0.431, "Dreg": 0.350}


class Cluster:
    """A GPU cluster from datasheets: GPUs a node, an NCCL ring inside a node (busbw, latency a hop)
    and between nodes (the NICs' busbw, latency a hop), and the compute of a step at b images a GPU,
    fixed + b x per_image, with where those two numbers come from."""

    def __init__(self, name, gpus_per_node, inside, between, fixed, per_image, compute_source):
        self.name, self.gpus_per_node = name, gpus_per_node
        self.inside, self.between = inside, between  # (busbw B/s, alpha s)
        self.fixed, self.per_image, self.compute_source = fixed, per_image, compute_source

    def ring(self, ranks):
        return self.inside if ranks <= self.gpus_per_node else self.between


# Table 1: 4 V100 SXM2 a node, NVLink (NCCL ring busbw about 120 GB/s on 4 GPUs), one HDR100 port a
# node (12.5 GB/s, 90% of it as busbw). Fig. 4: DGX A100, NVLink 3 through NVSwitch (busbw 230 GB/s),
# eight HDR200 ports a node (8 x 25 GB/s at 90%). NCCL's latency a ring hop: 5 us inside, 10 us between.
V100_INSIDE, V100_BETWEEN = (120e9, 5e-6), (0.9 * 12.5e9, 10e-6)
A100_INSIDE, A100_BETWEEN = (230e9, 5e-6), (0.9 * 8 * 25e9, 10e-6)


def paper_layout(path):
    """G's and D's buckets (bytes, due fractions) from a record of `stylegan2_bench simulate --byte-scale 1`."""
    for record in read_jsonl(path):
        if record.get("kind") == "simulated" and record.get("byte_scale") == 1:
            return {net: (b["bytes"], b["scheduled_ready"]) for net, b in record["buckets"].items()}
    fail(f"{path}: no record of `stylegan2_bench simulate --byte-scale 1` (config-f's buckets at full size)")


def cluster_step(cluster, layout, ranks, gpu_batch, overlap=True):
    """(step, compute) in seconds: the compute of `gpu_batch` images a GPU plus each phase's allreduce past
    its end, NCCL's ring (2(N-1) hops, 2(N-1)/N of the bytes over busbw) on the ring's slowest level."""
    compute = cluster.fixed + gpu_batch * cluster.per_image
    per_call = compute / sum(share / every for share, every in zip(PHASE_SHARES.values(), (1, 4, 1, 16)))
    if ranks < 2:
        return compute, compute
    busbw, alpha = cluster.ring(ranks)

    def cost(size):
        return 2 * (ranks - 1) * alpha + 2 * (ranks - 1) / ranks * size / busbw
    step = compute
    for (name, share), every in zip(PHASE_SHARES.items(), (1, 4, 1, 16)):
        sizes, ready = layout[name[0]]
        step += exposed_seconds(sizes, ready, share * per_call, overlap, cost) / every
    return step, compute


def efficiency(cluster, layout, points, batch_for, overlap=True):
    """{GPUs: (s/kimg, efficiency against the first point per GPU)}."""
    out, base = {}, None
    for gpus in points:
        step, _ = cluster_step(cluster, layout, gpus, batch_for(gpus) / gpus, overlap)
        rate = batch_for(gpus) / step
        base = base or rate / gpus
        out[gpus] = (1000 / rate, rate / gpus / base)
    return out


def fixed_for(cluster, layout, gpus, target, batch=64):
    """The fixed per-step compute at which strong scaling at `gpus` (global `batch`) reaches `target`
    against one node (bisection), or None when none does."""
    def at(fixed):
        trial = Cluster(cluster.name, cluster.gpus_per_node, cluster.inside, cluster.between, fixed,
                        cluster.per_image, "")
        return efficiency(trial, layout, [cluster.gpus_per_node, gpus], lambda n: batch)[gpus][1]
    low, high = 0.0, 1.0
    if at(low) < target:
        return None
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if at(middle) >= target else (low, middle)
    return low


def v100_cluster(layout):
    """Table 1's cluster, its compute fitted to the 4-GPU row (28.5 s/kimg at 8 images a GPU, a 0.912 s
    step, less the allreduce the model puts inside that node) with no fixed part: NVlabs' own single-V100
    figure, 112.5 s/kimg at 4 images a round, is within 2% of the same 114 ms an image."""
    cluster = Cluster("V100", 4, V100_INSIDE, V100_BETWEEN, 0.0, 0.114, "")
    for _ in range(3):  # the 4-GPU overhead depends on the compute it overlaps with
        step, compute = cluster_step(cluster, layout, 4, 8)
        cluster.per_image = (0.912 - (step - compute)) / 8
    cluster.compute_source = (f"fitted: {cluster.per_image * 1e3:.1f} ms an image from Table 1's 4-GPU row, "
                              "no fixed part")
    return cluster


def a100_cluster(fixed=0.104, per_image=0.018):
    return Cluster("A100", 8, A100_INSIDE, A100_BETWEEN, fixed, per_image,
                   f"not from the paper: {fixed * 1e3:.0f} ms + {per_image * 1e3:.1f} ms an image, stylegan3's "
                   "docs (stylegan2-ada at 256x256 on 1 and 8 A100) scaled to config-f (scaling_model predict-gpu)")


def command_predict_paper(args):
    layout = paper_layout(args.layout)
    v100 = v100_cluster(layout)
    table1 = efficiency(v100, layout, [4, 16], lambda n: 32)
    table1_without_overlap = efficiency(v100, layout, [4, 16], lambda n: 32, overlap=False)
    a100 = a100_cluster()
    strong = efficiency(a100, layout, [8, 16, 32], lambda n: 64)
    weak = efficiency(a100, layout, [8, 16, 32, 64], lambda n: 8 * n)
    print(f"# V100 compute {v100.compute_source}; A100 compute {a100.compute_source}")
    print("# links from datasheets (scaling_clusters.py: V100_*, A100_*); every row below is predicted")
    print(f"{'run':<38} {'GPUs':>5} {'s/kimg':>8} {'efficiency':>11}   paper")
    paper_table1 = {4: "28.5 s/kimg (fitted to)", 16: "9.3 s/kimg, 77%"}
    rows = [("Table 1, global 32", gpus, values, paper_table1[gpus]) for gpus, values in table1.items()]
    rows.append(("Table 1, global 32, overlap off", 16, table1_without_overlap[16], "9.3 s/kimg, 77%"))
    rows += [("Fig. 4 strong, global 64", gpus, values, {32: "63%"}.get(gpus, "")) for gpus, values in strong.items()]
    rows += [("Fig. 4 weak, 8 a GPU", gpus, values, {64: "98%"}.get(gpus, "")) for gpus, values in weak.items()]
    for name, gpus, (s_per_kimg, eff), paper in rows:
        print(f"{name:<38} {gpus:>5} {s_per_kimg:>8.2f} {100 * eff:>10.0f}%   {paper}")
    s16 = table1_without_overlap[16][0]
    paper_fixed = fixed_for(a100, layout, 32, 0.63)
    eighty = fixed_for(a100, layout, 32, 0.80)
    print(f"# Table 1 at 16 GPUs: {table1[16][0]:.2f} s/kimg against the paper's 9.3 ({9.3 / table1[16][0]:.2f}x) with "
          f"the same compute; {s16:.2f} without overlap")
    print("# Fig. 4 strong at 32 GPUs: 63% (the paper) needs a fixed compute of "
          + (f"{paper_fixed * 1e3:.0f} ms a step" if paper_fixed is not None else "none (communication alone bounds it)")
          + "; 80% needs " + (f"{eighty * 1e3:.0f} ms" if eighty is not None else "more than the allreduce allows")
          + f" (the assumed {a100.fixed * 1e3:.0f} ms gives {100 * strong[32][1]:.0f}%)")
    return 0
