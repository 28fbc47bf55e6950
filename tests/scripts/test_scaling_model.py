#!/usr/bin/env python3
"""Tests of scripts/bench/scaling_model (the scaling performance model) and scripts/bench/plot_scaling:
the allreduce fit recovers a known alpha and busbw, the overlap simulation matches hand-computed
timelines, the readers read stylegan2_bench's --jsonl records (run here, the comm bench on 2 MPI
ranks), and the plot is a PNG.

  test_scaling_model.py SOURCE_DIR BIN_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from importlib.machinery import SourceFileLoader

SOURCE_DIR, BIN_DIR = sys.argv[1], sys.argv[2]
model = SourceFileLoader("scaling_model", os.path.join(SOURCE_DIR, "scripts/bench/scaling_model")).load_module()
import scaling_clusters as clusters  # noqa: E402 (on the path scaling_model put it on)
BENCH = os.path.join(BIN_DIR, "stylegan2_bench")
CONFIG = os.path.join(SOURCE_DIR, "configs/bench-cpu-32.yaml")


def run_bench(*arguments):
    result = subprocess.run([BENCH, "--config", CONFIG, "--run.threads", "1", *arguments],
                            capture_output=True, text=True, check=True)
    return result.stdout


class AllreduceFit(unittest.TestCase):
    def test_recovers_alpha_and_busbw_of_a_ring(self):
        alpha, busbw, ranks = 20e-6, 3e9, 4
        sweep = [(size, 2 * (ranks - 1) * alpha + 1.5 * size / busbw) for size in (2**k for k in range(10, 27, 2))]
        fitted_alpha, fitted_busbw = model.fit_allreduce({"ranks": ranks, "sweep": sweep})
        self.assertAlmostEqual(fitted_alpha / alpha, 1, places=6)
        self.assertAlmostEqual(fitted_busbw / busbw, 1, places=6)

    def test_times_that_do_not_grow_with_the_size_are_an_error(self):
        sweep = [(1 << 16, 3e-3), (1 << 20, 2e-3), (1 << 22, 1e-3)]  # noise, not bandwidth
        with self.assertRaises(SystemExit) as raised:
            model.fit_allreduce({"ranks": 2, "sweep": sweep})
        self.assertIn("too noisy", str(raised.exception))

    def test_one_rank_costs_nothing(self):
        self.assertEqual(model.allreduce_seconds(1 << 20, 1, 1e-5, 1e9), 0.0)


class Overlap(unittest.TestCase):
    # A phase of 3 s; each bucket's allreduce costs 0.5 s.
    def exposed(self, ready, overlap, cost=0.5):
        return model.exposed_seconds([1] * len(ready), ready, 3.0, overlap, lambda size: cost)

    def test_without_overlap_every_bucket_is_exposed(self):
        self.assertAlmostEqual(self.exposed([0.5, 0.6, 0.7, 0.8], False), 2.0)

    def test_a_bucket_ready_at_the_end_is_exposed_whole(self):
        self.assertAlmostEqual(self.exposed([1.0], True), 0.5)

    def test_buckets_hide_behind_the_rest_of_the_phase(self):
        # Ready at 1.5, 2.0, 2.5, 3.0 s: the allreduces end at 2.0, 2.5, 3.0, 3.5.
        self.assertAlmostEqual(self.exposed([0.5, 2 / 3, 5 / 6, 1.0], True), 0.5)

    def test_a_queue_of_slow_buckets_runs_past_the_phase(self):
        # Ready at 1.5 and 2.0 s, 1.5 s each: the second starts at 3.0 and ends at 4.5.
        self.assertAlmostEqual(self.exposed([0.5, 2 / 3], True, cost=1.5), 1.5)

    def test_without_a_measurement_bytes_arrive_at_a_constant_rate_during_backward(self):
        fractions = model.ready_fractions([1, 1, 2], 0.5)
        for got, want in zip(fractions, [0.625, 0.75, 1.0]):
            self.assertAlmostEqual(got, want)

    def test_measured_launch_fractions_come_with_the_bucket_sizes_of_the_same_bench(self):
        comm_buckets = {"G": [1, 1], "D": [1, 1, 1]}  # the comm bench's layout: not the launch order
        bench = {"path": "bench.jsonl", "launch": {"G": [0.2, 0.9]}, "buckets": {"G": [5, 7]}}
        buckets, ready = model.layout_and_ready(comm_buckets, bench, 0.5)
        self.assertEqual((buckets["G"], ready["G"]), ([5, 7], [0.2, 0.9]))
        self.assertEqual((buckets["D"], ready["D"]), ([1, 1, 1], model.ready_fractions([1, 1, 1], 0.5)))

    def test_launch_fractions_that_do_not_match_their_buckets_are_an_error(self):
        bench = {"path": "bench.jsonl", "launch": {"G": [0.2, 0.9]}, "buckets": {"G": [5, 7, 9]}}
        with self.assertRaises(SystemExit) as raised:
            model.layout_and_ready({"G": [1], "D": [1]}, bench, 0.5)
        self.assertIn("bench.jsonl: 2 G launch fractions for 3 G buckets", str(raised.exception))

    def test_step_adds_regularization_phases_at_their_intervals(self):
        phases = {"Gmain": 3.0, "Greg": 3.0, "Dmain": 3.0, "Dreg": 3.0}
        step = model.predict_step(10.0, phases, {"G": [1], "D": [1]}, {"G_reg_interval": 4, "D_reg_interval": 16},
                                  lambda size: 1.0, False, {"G": [1.0], "D": [1.0]})
        self.assertAlmostEqual(step, 10.0 + 1 + 1 / 4 + 1 + 1 / 16)


class Readers(unittest.TestCase):
    def test_reads_the_comm_bench_and_the_bucket_layout(self):
        with tempfile.TemporaryDirectory() as directory:
            record = os.path.join(directory, "comm.jsonl")
            subprocess.run([BENCH, "comm", "--config", CONFIG, "--run.threads", "1", "--max-bytes", "65536",
                            "--iters", "1", "--warmup", "0", "--jsonl", record], capture_output=True, check=True)
            comm = model.parse_comm(record)
        self.assertEqual(comm["ranks"], 1)
        self.assertEqual([size for size, _ in comm["sweep"]][-1], 65536)
        self.assertGreater(sum(comm["buckets"]["G"]), 1e6)
        self.assertGreater(sum(comm["buckets"]["D"]), 1e6)

    @unittest.skipUnless(os.environ.get("SG2_WITH_MPI", "").upper() in ("ON", "TRUE", "1", "YES"), "built without MPI")
    def test_two_ranks_list_every_rank_verify_and_parse(self):
        # Behaviour only: the fit of measured times is a benchmark's business (on a loaded 2-core
        # machine the times need not grow with the size); test_recovers_alpha_and_busbw_of_a_ring
        # tests the fit itself.
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        with tempfile.TemporaryDirectory() as directory:
            record = os.path.join(directory, "comm.jsonl")
            output = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", BENCH, "comm", "--config", CONFIG,
                                     "--run.threads", "1", "--min-bytes", "65536", "--max-bytes", "1048576",
                                     "--step-factor", "2", "--iters", "2", "--warmup", "1", "--jsonl", record],
                                    capture_output=True, text=True, env=env, check=True).stdout
            comm = model.parse_comm(record)
            with open(record) as f:
                rows = json.loads(f.readline())["rows"]
        for rank in (0, 1):  # the table for people lists every rank
            self.assertRegex(output, rf"#  rank +{rank}  host \S+  pid \d+  device cpu")
        self.assertTrue(all(row["verified"] for row in rows))
        self.assertEqual(comm["ranks"], 2)
        self.assertEqual([size for size, _ in comm["sweep"]], [65536 << k for k in range(5)])
        self.assertTrue(all(seconds > 0 for _, seconds in comm["sweep"]))
        self.assertGreater(sum(comm["buckets"]["G"]), 1e6)

    def test_reads_phases_and_step_of_the_training_bench(self):
        with tempfile.TemporaryDirectory() as directory:
            record = os.path.join(directory, "bench.jsonl")
            run_bench("--train.batch", "4", "--optim.G_reg_interval", "1", "--optim.D_reg_interval", "1",
                      "--warmup", "0", "--repeats", "1", "--cycles", "1", "--no-op-families", "--jsonl", record)
            bench = model.parse_bench(record)
            # What the bench scripts tabulate comes from this reader (scaling_model fields).
            fields = subprocess.run([os.path.join(SOURCE_DIR, "scripts/bench/scaling_model"), "fields", record,
                                     "step_s", "img_per_s", "Gmain_s", "allreduce_busy_s", "allreduce_exposed_s"],
                                    capture_output=True, text=True, check=True).stdout.rstrip("\n").split("\t")
        self.assertEqual(len(fields), 5)
        self.assertAlmostEqual(float(fields[0]), bench["step"], places=5)
        self.assertAlmostEqual(float(fields[1]), 4 / bench["step"], places=3)
        self.assertAlmostEqual(float(fields[2]), bench["phases"]["Gmain"], places=5)
        self.assertEqual(fields[3:], [f"{bench['allreduce'][key]:.6g}" for key in ("busy", "exposed")])
        self.assertEqual(sorted(bench["phases"]), ["Dmain", "Dreg", "Gmain", "Greg"])
        self.assertEqual(bench["batch"], 4)
        self.assertGreater(bench["step"], 0)
        for network in ("G", "D"):  # the reducer's measured launch times, one per bucket, within the pass
            self.assertTrue(bench["launch"][network])
            self.assertTrue(all(0 <= f <= 1 for f in bench["launch"][network]))
            self.assertEqual(len(bench["buckets"][network]), len(bench["launch"][network]))
        self.assertEqual(bench["intervals"], {"G_reg_interval": 1, "D_reg_interval": 1})

    def test_names_the_file_that_is_not_a_bench_record(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write('{"kind": "train", "step_s": 1.0}\n')
            f.flush()
            with self.assertRaises(SystemExit) as raised:
                model.parse_comm(f.name)
        self.assertIn(f.name, str(raised.exception))
        self.assertIn("no 'comm' record", str(raised.exception))


class SimulatedCluster(unittest.TestCase):
    def test_gloo_cuts_a_message_in_at_least_two_segments_a_rank(self):
        # 8 ranks, 160 KiB: 16 segments of 10 KiB, 14 rounds (reduce-scatter and allgather each send 14).
        self.assertEqual(clusters.gloo_ring_rounds(160 * 1024, 8), (14, 10 * 1024))
        # A message too small for 2 segments a rank still has 2 x ranks of them (some empty).
        rounds, segment = clusters.gloo_ring_rounds(10, 4)
        self.assertEqual((rounds, segment), (6, 4))
        # Segments of at most 1 MiB: 25 MiB on 4 ranks is 28 of them (7 a rank), 21 rounds.
        self.assertEqual(clusters.gloo_ring_rounds(25 << 20, 4), (21, 1 << 20))

    def test_a_round_blends_the_software_and_the_link_then_adds_the_delay(self):
        size, ranks = 160 * 1024, 8  # 14 rounds of two 10 KiB segments
        link = 10 * 1024 / 1e-3  # a segment a millisecond: 2 ms a round on the wire
        inf = float("inf")
        self.assertAlmostEqual(clusters.ring_seconds(size, ranks, 1e-3, link, 0, inf), 28e-3)  # the longer: the wire
        self.assertAlmostEqual(clusters.ring_seconds(size, ranks, 3e-3, link, 0, inf), 42e-3)  # the longer: software
        self.assertAlmostEqual(clusters.ring_seconds(size, ranks, 1e-3, link, 0, 1.0), 42e-3)  # the sum
        self.assertAlmostEqual(clusters.ring_seconds(size, ranks, 1e-3, link, 0, 2.0), 14 * 5 ** 0.5 * 1e-3)
        self.assertAlmostEqual(clusters.ring_seconds(size, ranks, 1e-3, link, 5e-4, inf), 35e-3)  # + the delay

    def test_the_fit_recovers_alpha_bandwidth_and_blend(self):
        alpha, bandwidth, delay, ranks, blend = 0.8e-3, 15e6, 1e-4, 8, 2.0
        rows = [{"bytes": size, "seconds": clusters.ring_seconds(size, ranks, alpha, bandwidth, delay, blend),
                 "size_sweep": True} for size in (16384 << k for k in range(9))]
        fitted = clusters.fit_ring({"case": "test", "ranks": ranks, "rows": rows}, 16e6, delay)
        self.assertAlmostEqual(fitted[0] / alpha, 1, delta=0.03)
        self.assertAlmostEqual(fitted[1] / bandwidth, 1, delta=0.05)
        self.assertEqual(fitted[2], blend)

    def test_between_the_sizes_it_measured_an_allreduce_costs_what_the_comm_bench_measured(self):
        comm = {"rows": [{"bytes": 1000, "seconds": 1.0, "size_sweep": True},
                         {"bytes": 4000, "seconds": 3.0, "size_sweep": True},
                         {"bytes": 2000, "seconds": 9.0, "size_sweep": False}]}  # a bucket row: not the sweep's
        cost = clusters.measured_cost(comm, lambda size: -1.0)
        self.assertAlmostEqual(cost(2000), 2.0)  # halfway in the logarithm of the size
        self.assertAlmostEqual(cost(4000), -1.0)  # at and beyond the ends: the fitted ring
        self.assertAlmostEqual(cost(500), -1.0)

    def test_the_overhead_of_a_run_is_each_phase_exposed_once_per_interval(self):
        record = {"overlap": False, "phases": [{"name": "Gmain", "s": 1.0, "every": 1}, {"name": "Dreg", "s": 1.0, "every": 16}],
                  "buckets": {"G": {"bytes": [1, 1], "scheduled_ready": [0.5, 1.0]},
                              "D": {"bytes": [1], "scheduled_ready": [1.0]}}}
        self.assertAlmostEqual(clusters.simulated_overhead(record, lambda size: 0.25), 0.5 + 0.25 / 16)

    @unittest.skipUnless(os.environ.get("SG2_WITH_MPI", "").upper() in ("ON", "TRUE", "1", "YES"), "built without MPI")
    def test_two_ranks_simulate_a_step_and_record_it(self):
        # The real reducer over MPI, compute as waits: the record holds what the model reads.
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        with tempfile.TemporaryDirectory() as directory:
            jsonl = os.path.join(directory, "sim.jsonl")
            for mode in ([], ["--compute-alone"]):
                subprocess.run(["mpirun", "--oversubscribe", "-np", "2", BENCH, "simulate", "--config", CONFIG,
                                "--run.threads", "1", "--data", "synthetic", "--data.resolution", "16",
                                "--phase-ms", "20,30,10,40", "--byte-scale", "4", "--optim.G_reg_interval", "2",
                                "--optim.D_reg_interval", "2", "--sim-warmup", "1", "--jsonl", jsonl, *mode],
                               capture_output=True, text=True, env=env, check=True)
            distributed, alone = model.read_jsonl(jsonl)
        self.assertEqual((distributed["mode"], alone["mode"]), ("distributed", "compute_alone"))
        self.assertEqual((distributed["backend"], alone["backend"]), ("mpi", "local"))
        self.assertEqual([p["name"] for p in distributed["phases"]], ["Gmain", "Greg", "Dmain", "Dreg"])
        # A step of the cycle waits 20 + 30/2 + 10 + 40/2 ms: computing alone takes no less.
        self.assertGreaterEqual(alone["step_s"], 0.065)
        self.assertGreater(distributed["allreduce"]["busy_s"], 0)
        for net in ("G", "D"):
            buckets = distributed["buckets"][net]
            self.assertEqual(len(buckets["bytes"]), len(buckets["scheduled_ready"]))
            self.assertTrue(all(0 < f <= 1 for f in buckets["scheduled_ready"]))
            self.assertEqual(buckets["scheduled_ready"], sorted(buckets["scheduled_ready"]))

    def test_the_paper_is_predicted_from_a_layout_record(self):
        record = {"kind": "simulated", "byte_scale": 1,
                  "buckets": {"G": {"bytes": [25 << 20] * 4 + [20 << 20], "scheduled_ready": [0.8, 0.9, 0.95, 1, 1]},
                              "D": {"bytes": [25 << 20] * 4 + [15 << 20], "scheduled_ready": [0.4, 0.5, 0.6, 0.8, 1]}}}
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            output = subprocess.run([os.path.join(SOURCE_DIR, "scripts/bench/scaling_model"), "predict-paper", f.name],
                                    capture_output=True, text=True, check=True).stdout
        self.assertRegex(output, r"Table 1, global 32 +4 +28\.50 +100% +28\.5 s/kimg \(fitted to\)")  # the fitted row
        self.assertRegex(output, r"Fig\. 4 strong, global 64 +32 +\d+\.\d+ +\d+% +63%")
        self.assertRegex(output, r"Table 1, global 32, overlap off +16 +\d+\.\d+ +\d+% +9\.3 s/kimg, 77%")
        layout = {net: (b["bytes"], b["scheduled_ready"]) for net, b in record["buckets"].items()}
        v100 = clusters.v100_cluster(layout)
        with_overlap, _ = clusters.cluster_step(v100, layout, 16, 2)
        without, _ = clusters.cluster_step(v100, layout, 16, 2, overlap=False)
        self.assertLess(with_overlap, without)  # overlap hides part of the allreduce


class GpuComputeTerm(unittest.TestCase):
    def test_the_compute_term_is_the_line_through_the_steps(self):
        terms = model.stated_compute_terms("4:0.07,8:0.08,16:0.1,32:0.14")
        self.assertAlmostEqual(terms["fixed"], 0.06, places=9)
        self.assertAlmostEqual(terms["per_image"], 0.0025, places=9)

    def test_a_malformed_or_single_batch_is_an_error(self):
        for text in ("4:0.07,8", "4:0.07,4:0.08"):
            with self.assertRaises(SystemExit):
                model.stated_compute_terms(text)


class Plot(unittest.TestCase):
    def test_writes_a_png(self):
        with tempfile.TemporaryDirectory() as directory:
            results = os.path.join(directory, "scaling.tsv")
            with open(results, "w") as f:
                f.write("sweep\tranks\ts_per_kimg\tefficiency\n"
                        "strong\t1\t400\t1\nstrong\t2\t220\t0.91\nweak\t1\t410\t1\nweak\t2\t215\t0.95\n")
            png = os.path.join(directory, "scaling.png")
            subprocess.run([os.path.join(SOURCE_DIR, "scripts/bench/plot_scaling"), results, "--out", png],
                           check=True, capture_output=True)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
