#!/usr/bin/env bash
# Distributed training end to end, through real mpirun and stylegan2_launch processes:
#  1. equivalence: with dist.rng = global, 1 rank x 4 accumulation rounds, 2 ranks x 2 and 4 ranks x 1
#     (4 images per pass everywhere) end with the same G, D, G_ema, w_avg and pl_mean (one step
#     without path-length regularization to rounding, four steps with it within the bound below);
#  2. a torchrun-style launch (stylegan2_launch + Gloo over loopback) matches the mpirun run, and
#     so do stylegan2_train --gpus 2 and a launch by PyPI torch's own torchrun (its agent serves the
#     store);
#  3. the same across two emulated nodes (scripts/bench/netns_cluster.sh: network namespaces, veth, a
#     bridge, 10 Gbit/s links), when the machine allows it;
#  4. an exception on one rank (rank 0 cannot write its snapshot) and a kill -9 of one rank both end
#     the job non-zero within a bound; the last snapshot then resumes with another world size; SIGTERM
#     to one rank stops every rank at one step with exit 143 and a snapshot; a stalled rank ends the
#     job through its peer's watchdog after dist.timeout; ranks started with other network options
#     fail naming the option;
#  5. ada: adaptive augmentation gives 1 rank and 2 ranks the same p (dist.rng global), and a run
#     snapshotted mid-interval on 2 ranks resumes on 1 rank to the same p as without the stop.
# Usage: train_distributed.sh BIN_DIR TESTS_BIN_DIR SOURCE_DIR [section...]
# Exit status: 0 passed, 1 failed, 77 when every section asked for was skipped (no Gloo, no netns).
set -euo pipefail
bin=$1 tests_bin=$2 src=$3
shift 3
sections=${*:-"equivalence launch torchrun two_nodes failure"}
if [ "${SG2_WITH_GLOO:-ON}" = OFF ]; then  # stylegan2_launch and torchrun on CPUs need the Gloo backend
  echo "launch, torchrun and two_nodes skipped: this build has no Gloo backend (a pip wheel's LibTorch)"
  sections=$(echo "$sections" | sed 's/launch//; s/torchrun//; s/two_nodes//')
  [ -n "${sections// /}" ] || exit 77
fi
work=$(mktemp -d)
job_pid='' skipped=0
# A job still running (a failed check) goes too: mpirun ends its ranks on SIGTERM; what is left of
# them (a stopped rank) has this test's directory on its command line.
cleanup() {
  if [ -n "$job_pid" ] && kill -0 "$job_pid" 2> /dev/null; then
    kill -TERM "$job_pid" 2> /dev/null || true
    timeout 10 tail --pid="$job_pid" -f /dev/null || true
  fi
  pkill -KILL -f "stylegan2_.*$work" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_n() { local n=$1; shift; mpirun --oversubscribe -np "$n" "$@"; }

# Tolerance: the runs differ only in float summation order (the rounds' gradients add in .grad on
# one rank, in the allreduce on several), which moves the weights after each phase by an ulp.
#  - Without path-length regularization one step agrees to rounding (measured: max 1e-5, RMS 3e-8
#    with LibTorch 1.13 and 2.11): max 1e-4, RMS 1e-6.
#  - With it, a pre-activation within rounding of a leaky ReLU kink can take the other slope in a
#    later phase (path length differentiates through those kinks twice), changing a cancelling
#    gradient sum such as a noise strength by a few percent; Adam's first steps (beta1 = 0, eps
#    1e-8) are lr * sign(g), so a gradient whose sign rounding flips moves one element by two
#    learning-rate steps. After 4 steps: RMS 2.7e-7 (max 5e-5) with LibTorch 1.13, RMS 1.9e-4 (max
#    1.4e-2) with 2.11, whose CPU convolutions round differently; per-rank randomness, the control,
#    is RMS 5e-3 with both. So: RMS 1e-3 and max 5e-2 (twenty learning-rate steps).
# One Adam step with beta1 = 0 moves a weight by lr x g / (|g| + eps): a gradient element within a few
# eps (1e-8) of zero moves a fraction of lr that its rounding decides (up to about 4e-4 here, on
# D.b16.conv0.weight, with OpenBLAS's AVX2 kernels), so the largest difference is bounded by that;
# the RMS over every weight stays at rounding.
exact_max=1e-3 exact_rms=2e-6
max_tolerance=5e-2 rms_tolerance=1e-3
common=(--config "$src/configs/fashion32.yaml" --dist.rng global --train.batch 16 --train.batch_gpu 4
        --kimg 0.064 --train.kimg_per_tick 0.032 --run.image_snapshot_ticks 0 --run.threads 1
        --data.workers 0 --data.max_images 512 --run.grid_w 4 --run.grid_h 2)
snapshot_of() { ls "$work/$1"/*/network-snapshot-*.pt | sort -V | tail -n 1; }  # the run's last
same_weights() {  # same_weights RUN_A RUN_B MAX_TOLERANCE [RMS_TOLERANCE]
  "$tests_bin/snapshot_diff" "$(snapshot_of "$1")" "$(snapshot_of "$2")" --tolerance "$3" --rms-tolerance "${4:--1}" \
      --prefixes G.,D.,G_ema.,loss.pl_mean > "$work/diff.log" || { cat "$work/diff.log"; fail "$1 and $2 differ"; }
  echo "$1 vs $2:"; sed 's/^/  /' "$work/diff.log"
}

equivalence() {
  # One step without path-length regularization: the same to rounding.
  local step=(--kimg 0.016 --train.kimg_per_tick 0.016 --loss.pl_weight 0)
  "$bin/stylegan2_train" "${common[@]}" "${step[@]}" --outdir "$work/one-step" > "$work/one-step.log" 2>&1 ||
    { cat "$work/one-step.log"; fail "1 rank, one step"; }
  mpirun_n 4 "$bin/stylegan2_train" "${common[@]}" "${step[@]}" --outdir "$work/mpi4-step" > "$work/mpi4-step.log" 2>&1 ||
    { cat "$work/mpi4-step.log"; fail "mpirun -np 4, one step"; }
  same_weights one-step mpi4-step "$exact_max" "$exact_rms"
  "$bin/stylegan2_train" "${common[@]}" --outdir "$work/one" > "$work/one.log" 2>&1 || { cat "$work/one.log"; fail "1 rank"; }
  grep -q "World: 1 processes, backend local, rng global, 4 rounds of 4 images" "$work/one.log" || fail "1-rank layout"
  for n in 2 4; do
    mpirun_n "$n" "$bin/stylegan2_train" "${common[@]}" --outdir "$work/mpi$n" > "$work/mpi$n.log" 2>&1 ||
      { cat "$work/mpi$n.log"; fail "mpirun -np $n"; }
    grep -q "World: $n processes, backend mpi, rng global, $((4 / n)) rounds of 4 images" "$work/mpi$n.log" ||
      fail "mpirun -np $n: wrong layout"
    same_weights one "mpi$n" "$max_tolerance" "$rms_tolerance"
  done
  # The comparison discriminates: per-rank randomness (the paper's mode) is another run.
  mpirun_n 2 "$bin/stylegan2_train" "${common[@]}" --dist.rng rank --outdir "$work/rank2" > "$work/rank2.log" 2>&1
  if (same_weights one rank2 "$max_tolerance" "$rms_tolerance" > /dev/null 2>&1); then
    fail "rng rank gave the same run as rng global"
  fi
}

launch() {
  [ -d "$work/mpi2" ] || mpirun_n 2 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/mpi2" > "$work/mpi2.log" 2>&1
  # One launcher per node as mpirun or srun --mpi=pmix starts it: its ranks see the launcher's MPI
  # variables and must still take theirs (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), not MPI_Init.
  mpirun_n 1 "$bin/stylegan2_launch" --nproc-per-node 2 --master-port 29611 -- \
      "$bin/stylegan2_train" "${common[@]}" --outdir "$work/launch" > "$work/launch.log" 2>&1 ||
      { cat "$work/launch.log"; fail "stylegan2_launch"; }
  grep -q "World: 2 processes, backend gloo" "$work/launch.log" || fail "launch did not use gloo"
  same_weights mpi2 launch 1e-6
  # stylegan2_train --gpus 2: the same ranks without a launcher of the user's (CPU ranks here).
  "$bin/stylegan2_train" --gpus 2 "${common[@]}" --outdir "$work/gpus" > "$work/gpus.log" 2>&1 ||
      { cat "$work/gpus.log"; fail "stylegan2_train --gpus 2"; }
  grep -q "Starting 2 ranks on this node" "$work/gpus.log" && grep -q "World: 2 processes, backend gloo" "$work/gpus.log" ||
      { cat "$work/gpus.log"; fail "--gpus 2 did not start 2 gloo ranks"; }
  same_weights mpi2 gpus 1e-6
  if mpirun_n 1 "$bin/stylegan2_train" --gpus 2 "${common[@]}" --outdir "$work/gpus-mpi" > "$work/gpus-mpi.log" 2>&1; then
    fail "--gpus under mpirun started ranks of ranks"
  fi
  grep -q "already one of a launch (mpi)" "$work/gpus-mpi.log" || { cat "$work/gpus-mpi.log"; fail "--gpus under mpirun: no clear error"; }
}

two_nodes() {
  if ! ip netns add sg2probe 2> "$work/netns.log"; then
    echo "SKIP two_nodes: cannot create network namespaces here ($(cat "$work/netns.log"))"
    skipped=$((skipped + 1)); return 0
  fi
  ip netns del sg2probe
  [ -d "$work/mpi2" ] || mpirun_n 2 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/mpi2" > "$work/mpi2.log" 2>&1
  # Two emulated nodes (scripts/bench/netns_cluster.sh), each link shaped to 10 Gbit/s.
  LOG_DIR="$work/nodes-logs" "$src/scripts/bench/netns_cluster.sh" 2 10gbit -- sh -c \
      'exec "$0" --nproc-per-node 1 --nnodes 2 --node-rank "$SG2_NODE_RANK" --master-addr "$SG2_MASTER_ADDR" \
           --master-port 29612 -- "$@"' "$bin/stylegan2_launch" "$bin/stylegan2_train" "${common[@]}" \
      --outdir "$work/nodes" > "$work/nodes.log" 2>&1 || { cat "$work/nodes.log" "$work"/nodes-logs/node*.log; fail "two nodes"; }
  grep -q "World: 2 processes, backend gloo" "$work/nodes-logs/node0.log" || fail "the two nodes did not use gloo"
  same_weights mpi2 nodes 1e-6
}

# PyPI torch's torchrun (scripts/torch_wheel.sh caches the wheel), not --standalone: its agent
# serves the TCPStore on MASTER_PORT and tells the workers so (TORCHELASTIC_USE_AGENT_STORE=True).
torchrun() {
  [ -d "$work/mpi2" ] || mpirun_n 2 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/mpi2" > "$work/mpi2.log" 2>&1
  local wheel
  wheel=$("$src/scripts/torch_wheel.sh")
  PYTHONPATH="$wheel" python3 -m torch.distributed.run --nproc-per-node 2 --master-port 29651 --no-python \
      "$bin/stylegan2_train" "${common[@]}" --outdir "$work/torchrun" > "$work/torchrun.log" 2>&1 ||
      { cat "$work/torchrun.log"; fail "torchrun"; }
  grep -q "World: 2 processes, backend gloo" "$work/torchrun.log" || fail "torchrun did not use gloo"
  same_weights mpi2 torchrun 1e-6
}

# Waits until FILE exists (at most SECONDS).
wait_for() { for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done; fail "no $1 after $2 s"; }
# Runs COMMAND in the background and fails unless it ends non-zero within BOUND seconds after TRIGGER runs.
expect_job_failure() {  # expect_job_failure NAME BOUND TRIGGER_FUNCTION [EXIT_CODE]
  local name=$1 bound=$2 trigger=$3 expected_rc=${4:-} start rc elapsed
  $trigger
  start=$(date +%s.%N)
  rc=0; timeout $((bound + 30)) tail --pid="$job_pid" -f /dev/null || kill -TERM "$job_pid" 2> /dev/null || true
  wait "$job_pid" || rc=$?
  elapsed=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
  echo "$name: exit $rc after ${elapsed} s"
  [ "$rc" -ne 0 ] || fail "$name: the job exited 0"
  [ -z "$expected_rc" ] || [ "$rc" -eq "$expected_rc" ] || fail "$name: exit $rc, expected $expected_rc"
  awk -v e="$elapsed" -v b="$bound" 'BEGIN { exit !(e < b) }' || fail "$name: took ${elapsed} s, bound $bound s"
}

start_long_job() {  # start_long_job NAME [OPTION...]: a 2-rank job with a snapshot every tick
  local name=$1; shift
  mpirun --oversubscribe -np 2 "$bin/stylegan2_train" "${common[@]}" --kimg 10 --train.kimg_per_tick 0.016 \
      --run.network_snapshot_ticks 1 --outdir "$work/$name" "$@" > "$work/$name.log" 2>&1 &
  job_pid=$!  # mpirun's own: a signal to it ends the ranks
  wait_for "$work/$name/00000-fashion-mnist-fashion32/network-snapshot-000000.pt" 120
}

# The pid of rank 1 of the job named NAME: the child of mpirun that Open MPI told it is rank 1.
rank1_of() {
  local pid
  for pid in $(pgrep -P "$job_pid" -f "stylegan2_train.*$work/$1"); do
    tr '\0' '\n' < "/proc/$pid/environ" | grep -qx OMPI_COMM_WORLD_RANK=1 && { echo "$pid"; return 0; }
  done
  fail "no rank 1 among the children of mpirun (pid $job_pid)"
}
kill_rank1() { kill -9 "$(rank1_of killed)"; }
terminate_rank1() { kill -TERM "$(rank1_of terminated)"; }
stop_rank1() { kill -STOP "$(rank1_of stalled)"; }
no_trigger() { :; }
block_rank0_snapshot() {  # the run directory becomes a file: rank 0's next snapshot write throws
  local dir="$work/broken/00000-fashion-mnist-fashion32"
  mv "$dir" "$work/broken-saved" && touch "$dir"
}

failure() {
  start_long_job broken
  expect_job_failure "exception on rank 0" 30 block_rank0_snapshot
  grep -q "error on rank 0 of 2" "$work/broken.log" || { cat "$work/broken.log"; fail "no message naming rank 0"; }
  grep -q "error on rank 0 of 2" "$work/broken-saved/log.txt" || fail "the run's log.txt lacks the error"

  # SIGTERM to rank 1 only (a scheduler's preemption of one task): every rank stops at the same step,
  # says which signal, writes a snapshot and exits 128 + 15, whatever the launcher.
  start_long_job terminated
  expect_job_failure "SIGTERM to rank 1" 60 terminate_rank1 143
  grep -q "Stopped by signal 15 at" "$work/terminated.log" || { cat "$work/terminated.log"; fail "no stop message"; }

  # A rank that stalls (SIGSTOP: alive, silent) blocks its peer inside a collective; the peer's
  # watchdog ends the job after dist.timeout, naming the collective.
  start_long_job stalled --dist.timeout 5
  expect_job_failure "a stalled rank" 40 stop_rank1
  grep -q "error on rank 0 of 2 (host .*): MPI collective #[0-9]* has not completed after" "$work/stalled.log" ||
    { cat "$work/stalled.log"; fail "the watchdog did not name the stalled collective"; }

  # Ranks started with different network options: an error naming the option, not a failed collective.
  mpirun --oversubscribe -np 1 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/mismatch" : \
      -np 1 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/mismatch" --G.channel_max 32 > "$work/mismatch.log" 2>&1 &
  job_pid=$!
  expect_job_failure "ranks with different options" 60 no_trigger
  grep -q "the config of rank 1 differs from rank 0's: 'G.channel_max: 32' here" "$work/mismatch.log" ||
    { cat "$work/mismatch.log"; fail "the mismatch does not name G.channel_max"; }

  # A rank that fails while starting its session (here: a backend its launch lacks) ends the job at
  # once, naming itself, instead of waiting in MPI_Finalize for ranks that wait for it.
  mpirun --oversubscribe -np 1 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/start" --dist.timeout 30 : \
      -np 1 "$bin/stylegan2_train" "${common[@]}" --outdir "$work/start" --dist.timeout 30 --dist.backend gloo \
      > "$work/start.log" 2>&1 &
  job_pid=$!
  expect_job_failure "a rank failing to start" 15 no_trigger
  grep -q "error on rank 1 of 2 (host .*): dist.backend = gloo needs" "$work/start.log" ||
    { cat "$work/start.log"; fail "the failing rank was not named"; }

  start_long_job killed
  expect_job_failure "kill -9 of one rank" 30 kill_rank1
  local run_dir="$work/killed/00000-fashion-mnist-fashion32" last
  last=$(ls "$run_dir"/network-snapshot-*.pt | sort -V | tail -1)
  # Resume on one process (another world size) from the last snapshot the killed job wrote.
  "$bin/stylegan2_train" --resume "$run_dir" --kimg 0.096 --train.kimg_per_tick 0.016 > "$work/resume.log" 2>&1 ||
    { cat "$work/resume.log"; fail "resume after the kill"; }
  grep -q "Resumed from $last" "$work/resume.log" || fail "did not resume from $last"
  grep -q "World: 1 processes" "$work/resume.log" || fail "resume did not run on one process"
  # The ticks the killed job logged past its snapshot are gone from stats.jsonl and, read as
  # TensorBoard reads the two event files, from the events: both show each step once.
  python3 -c 'import json, sys; k = [json.loads(l)["Progress/kimg"]["mean"] for l in open(sys.argv[1])]
sys.exit(any(b <= a for a, b in zip(k, k[1:])))' "$run_dir/stats.jsonl" || fail "stats.jsonl repeats ticks"
  /usr/bin/python3 "$src/tests/e2e/check_events.py" "$run_dir" "$src/src/train/event.proto" --no-images ||
    fail "the resumed run's events"
}

# The augmentation probability at the end of a run (the last tick's Progress/augment), exactly.
p_of() { python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["Progress/augment"]["mean"])' \
           "$(ls "$work/$1"/*/stats.jsonl)"; }

ada() {
  # p starts at 0.5 and moves by 16 x 4 / 1000 = 0.064 at steps 4, 8, 12 (3 adjustments).
  local aug=(--aug ada --augment.p 0.5 --augment.kimg 1 --kimg 0.192 --train.kimg_per_tick 0.048
             --run.network_snapshot_ticks 1)
  "$bin/stylegan2_train" "${common[@]}" "${aug[@]}" --outdir "$work/ada1" > "$work/ada1.log" 2>&1 ||
    { cat "$work/ada1.log"; fail "1 rank with ada"; }
  mpirun_n 2 "$bin/stylegan2_train" "${common[@]}" "${aug[@]}" --outdir "$work/ada2" > "$work/ada2.log" 2>&1 ||
    { cat "$work/ada2.log"; fail "2 ranks with ada"; }
  local p1 p2
  p1=$(p_of ada1) p2=$(p_of ada2)
  echo "p after 12 steps: 1 rank $p1, 2 ranks $p2"
  [ -n "$p1" ] && [ "$p1" = "$p2" ] || fail "ada: p differs between 1 rank ($p1) and 2 ranks ($p2)"
  python3 -c "import sys; sys.exit(abs($p1 - 0.5) < 0.06)" || fail "ada: p stayed at 0.5 ($p1)"
  # The weights after 4 steps within the equivalence section's bounds (the augmentation draws alike).
  "$tests_bin/snapshot_diff" "$work"/ada1/*/network-snapshot-000000.064.pt "$work"/ada2/*/network-snapshot-000000.064.pt \
      --tolerance "$max_tolerance" --rms-tolerance "$rms_tolerance" --prefixes G.,D.,G_ema.,loss.pl_mean ||
      fail "ada: the weights of 1 and 2 ranks differ"
  # Stopped after step 7 (mid-interval: the signs of 3 steps summed over both ranks in the snapshot;
  # tick 0 is step 1, then a tick every 3 steps), resumed on 1 rank.
  cp "$(ls "$work"/ada2/*/network-snapshot-000000.112.pt)" "$work/ada-stopped.pt"
  "$bin/stylegan2_train" --resume "$work/ada-stopped.pt" --outdir "$work/ada-resumed" > "$work/ada-resumed.log" 2>&1 ||
    { cat "$work/ada-resumed.log"; fail "ada: resume on 1 rank"; }
  local p_resumed
  p_resumed=$(p_of ada-resumed)
  echo "p resumed on 1 rank from a 2-rank snapshot after step 7: $p_resumed"
  [ "$p_resumed" = "$p2" ] || fail "ada: resumed on 1 rank to p $p_resumed, uninterrupted $p2"
}

ran=0
for section in $sections; do
  echo "== $section"
  $section
  ran=$((ran + 1))
done
[ "$skipped" -lt "$ran" ] || exit 77
echo "PASS"
