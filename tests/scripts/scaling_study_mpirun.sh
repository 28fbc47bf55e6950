#!/usr/bin/env bash
# scripts/bench/scaling_study without Slurm, as a cluster user without it runs it: mpirun with a
# hostfile (this host, 2 slots), the tiny preset with the real stylegan2_bench; its JSONL, table and
# plot checked by check_scaling_study.py. Then its refusals: a hostfile too small for a preset, a
# missing hostfile, a missing stylegan2_bench (exit 2 before any run).
#   scaling_study_mpirun.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
study=$src/scripts/bench/scaling_study

echo "localhost slots=2" > "$work/hosts"
"$study" run tiny --launcher mpirun --hostfile "$work/hosts" --bin "$bin" --out "$work/study" \
  --mpirun-args=--oversubscribe > "$work/study.log" 2>&1 || { cat "$work/study.log"; exit 1; }
python3 "$src/tests/scripts/check_scaling_study.py" "$work/study"
grep -q -- "--hostfile $work/hosts --map-by ppr:2:node" "$work/study/logs/strong-2gpus-distributed.txt" ||
  { echo "FAIL: the runs were not started with the hostfile"; exit 1; }

# expect_refusal EXPECTED_MESSAGE ARGS...: exit 2 with that message, and no run started.
expect_refusal() {
  local message=$1 status=0
  shift
  "$study" run "$@" > "$work/refused.log" 2>&1 || status=$?
  [ "$status" = 2 ] || { cat "$work/refused.log"; echo "FAIL: exit $status for $*, expected 2"; exit 1; }
  grep -qF -- "$message" "$work/refused.log" || { cat "$work/refused.log"; echo "FAIL: no '$message'"; exit 1; }
  ! grep -q "^== " "$work/refused.log" || { echo "FAIL: a run started for $*"; exit 1; }
}
expect_refusal "preset fig4-weak needs 8 nodes of 8 GPUs and the hostfile has 1" fig4-weak --launcher mpirun \
  --hostfile "$work/hosts" --bin "$bin" --out "$work/refused"
expect_refusal "--hostfile $work/none: No such file or directory" tiny --launcher mpirun --hostfile "$work/none" \
  --bin "$bin" --out "$work/refused"
expect_refusal "no executable $work/stylegan2_bench" tiny --launcher mpirun --bin "$work" --out "$work/refused"
echo "PASS scaling_study with mpirun and a hostfile; bad settings refused"
