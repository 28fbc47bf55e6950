#!/usr/bin/env python3
"""Checks a results directory of `scaling_study run tiny`: every run recorded with the fields the model
reads, the table and TSV derived from those records, and a PNG plot.

  check_scaling_study.py DIR      exit 0 when every check passes, 1 naming the first that fails
"""
import csv
import json
import os
import sys


def fail(message):
    sys.exit(f"check_scaling_study: {message}")


def check_runs(directory):
    with open(os.path.join(directory, "runs.jsonl")) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    expected = {(sweep, ranks, mode) for sweep in ("strong", "weak") for ranks in (1, 2)
                for mode in ("distributed", "compute_alone")}
    got = {(r["sweep"], r["ranks"], r["mode"]) for r in runs}
    if got != expected or len(runs) != len(expected):
        fail(f"runs.jsonl holds {sorted(got)}, expected {sorted(expected)}")
    for r in runs:
        where = f"{r['sweep']} {r['ranks']} ranks {r['mode']}"
        batch = 4 if r["sweep"] == "strong" else 2 * r["ranks"]
        if r["global_batch"] != batch or r["rank_batch"] * (r["ranks"] if r["mode"] == "compute_alone" else 1) != batch:
            fail(f"{where}: global batch {r['global_batch']}, rank batch {r['rank_batch']}; expected global {batch}")
        if not (r["step_s"] > 0 and abs(r["img_per_s"] - batch / r["step_s"]) < 1e-6 * r["img_per_s"]):
            fail(f"{where}: step {r['step_s']} s and {r['img_per_s']} img/s disagree")
        if [p["name"] for p in r["phases"]] != ["Gmain", "Greg", "Dmain", "Dreg"]:
            fail(f"{where}: phases {[p['name'] for p in r['phases']]}")
        alone = r["mode"] == "compute_alone"
        if alone and r["backend"] != "local":
            fail(f"{where}: backend {r['backend']}, expected local (no communication)")
        if r["mode"] == "distributed" and r["ranks"] == 2:
            if r["backend"] != "mpi" or r["allreduce"]["busy_s"] <= 0 or r["allreduce"]["bytes"] <= 0:
                fail(f"{where}: no MPI allreduce measured ({r['backend']}, {r['allreduce']})")
            for net in ("G", "D"):
                buckets = r["buckets"][net]
                if not buckets["bytes"] or len(buckets["bytes"]) != len(buckets["launch_fraction"]):
                    fail(f"{where}: {net} buckets {buckets}")
    return runs


def check_table(directory, runs):
    with open(os.path.join(directory, "scaling.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if sorted((r["sweep"], int(r["ranks"])) for r in rows) != [("strong", 1), ("strong", 2), ("weak", 1), ("weak", 2)]:
        fail(f"scaling.tsv rows {[(r['sweep'], r['ranks']) for r in rows]}")
    step = {(r["sweep"], r["ranks"], r["mode"]): r["step_s"] for r in runs}
    rate = {(r["sweep"], r["ranks"]): r["img_per_s"] for r in runs if r["mode"] == "distributed"}
    for row in rows:
        sweep, ranks = row["sweep"], int(row["ranks"])
        efficiency = rate[(sweep, ranks)] / ranks / rate[(sweep, 1)]
        if abs(float(row["efficiency"]) - efficiency) > 1e-4:
            fail(f"scaling.tsv {sweep} {ranks}: efficiency {row['efficiency']}, the runs give {efficiency:.5f}")
        overhead = step[(sweep, ranks, "distributed")] - step[(sweep, ranks, "compute_alone")]
        if abs(float(row["overhead_s"]) - overhead) > 1e-5 * max(1.0, abs(overhead)):
            fail(f"scaling.tsv {sweep} {ranks}: overhead {row['overhead_s']}, the runs give {overhead:.6f}")
    with open(os.path.join(directory, "table.md")) as f:
        table = f.read()
    for line in ("### strong: global batch 4", "### weak: 2 images a rank", "| 2 | 1 | 4 (2) |", "| 1 | 1 | 2 (2) |"):
        if line not in table:
            fail(f"table.md lacks '{line}':\n{table}")


def check_plot(directory):
    with open(os.path.join(directory, "scaling.png"), "rb") as f:
        head = f.read(8)
    if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(os.path.join(directory, "scaling.png")) < 10000:
        fail("scaling.png is not a plot (no PNG signature, or under 10 kB)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    runs = check_runs(directory)
    check_table(directory, runs)
    check_plot(directory)
    print(f"check_scaling_study: {directory}: {len(runs)} runs, table and plot ok")


if __name__ == "__main__":
    main()
