#!/usr/bin/env bash
# Runs scripts/slurm/*.sbatch for real on a throwaway one-node Slurm cluster (this host): its own
# munged, slurmctld and slurmd, with every key, socket, spool, state and log file in a temp dir.
#
# Usage: local_slurm.sh BIN_DIR SOURCE_DIR
#   BIN_DIR     holds stylegan2_train and stylegan2_bench (e.g. build/bin)
#   SOURCE_DIR  the repository (scripts/slurm, tests/slurm, configs)
#
# Always (the preflight, ~20 s on 2 cores): tests/slurm/mpi_hello.c, built with mpicc, stands in for
# the apps (installed as stylegan2_train and stylegan2_bench in a temp dir). train.sbatch runs it on
# 2 ranks with srun --mpi=pmix and with mpirun (world size, MPI_Allreduce, the arguments passed
# through), checks that the time-limit warning (SIGUSR1 to the batch shell) reaches the ranks as one
# SIGTERM and no SIGKILL (exit 143), and that errors end the job non-zero.
# Options:
#   SG2_SLURM_TRAIN=0  skips run_training_job: stylegan2_train from BIN_DIR through train.sbatch on 2 ranks
#                      (fashion32, 0.064 kimg): exit 0 and a network-snapshot-*.pt; then a run under
#                      mpirun stopped by the time-limit warning (exit 143, snapshot) and resumed
#                      under srun with --resume latest; srun --mpi=none refused (~15 s in all).
#                      SG2_SLURM_DATA=DIR overrides the config's dataset.
#   SG2_SLURM_STUDY=0  skips scaling_study.sbatch: the tiny preset with stylegan2_bench from BIN_DIR (1 and
#                      2 ranks, strong and weak, distributed and compute alone), its table and plot
#                      checked (tests/scripts/check_scaling_study.py); and its refusals of bad settings.
#   SG2_SLURM_KEEP=1   keep the temp dir (logs, job outputs) for inspection.
# Exit status: 0 passed, 1 failed, 77 skipped (no Slurm/munge/MPI tools, or not root). Every wait is
# bounded; the daemons, jobs and temp dir go away on any exit (a watchdog covers SIGKILL).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BIN_DIR SOURCE_DIR" >&2; exit 1; }
bin=$(realpath "$1")
src=$(realpath "$2")
export PATH=$PATH:/usr/sbin:/sbin
job_timeout=120 # seconds for one job (the real benchmark gets more)
work='' munged_pid='' slurmctld_pid='' slurmd_pid='' watchdog_pid='' job_id='' job_rc=0

say() { echo "local_slurm: $*"; }
skip() { echo "SKIP: $*"; exit 77; }

require_tools() {
  local tool missing=()
  for tool in munged slurmctld slurmd sbatch srun scancel scontrol sinfo squeue mpicc mpirun; do
    command -v "$tool" > /dev/null || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] || skip "missing ${missing[*]} (apt-get install slurm-wlm munge libopenmpi-dev)"
  [ "$(id -u)" = 0 ] || skip "needs root: slurmd runs the test jobs as SlurmUser=root"
  [ -f "$src/scripts/slurm/train.sbatch" ] || { echo "FAIL: $src/scripts/slurm/train.sbatch not found" >&2; exit 1; }
}

show_logs() {
  local f
  for f in "$work"/*.log "$work"/*.daemon; do
    [ -s "$f" ] || continue
    echo "----- $f (last 30 lines)"
    tail -n 30 "$f"
  done
}

fail() {
  echo "FAIL: $*" >&2
  show_logs >&2
  exit 1
}

# A job's output file, then the failure.
fail_job() {
  local name=$1; shift
  echo "----- job output $work/$name.out" >&2
  cat "$work/$name.out" >&2 2> /dev/null || echo "(none)" >&2
  cat "$work/$name.sbatch" >&2 2> /dev/null || true
  fail "$name: $*"
}

alive() { [ -n "$1" ] && kill -0 "$1" 2> /dev/null; }

# stop_daemon PID: SIGTERM, SIGKILL after 10 s, then reap it.
stop_daemon() {
  local pid=$1 _
  alive "$pid" || return 0
  kill -TERM "$pid" 2> /dev/null || true
  for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
  alive "$pid" && { echo "local_slurm: pid $pid ignored SIGTERM, sending SIGKILL" >&2; kill -KILL "$pid" 2> /dev/null; }
  wait "$pid" 2> /dev/null || true
}

# Cancel the jobs (so that no slurmstepd outlives the cluster), stop the daemons, remove the dir.
teardown() {
  local _
  if alive "$slurmctld_pid"; then
    scancel --user="$(id -un)" 2> /dev/null
    for _ in $(seq 30); do [ -z "$(squeue -h 2> /dev/null)" ] && break; sleep 0.5; done
  fi
  stop_daemon "$slurmd_pid"
  stop_daemon "$slurmctld_pid"
  stop_daemon "$munged_pid"
  if [ -n "$work" ]; then
    if [ "${SG2_SLURM_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
  fi
}

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  alive "$watchdog_pid" && kill "$watchdog_pid" 2> /dev/null && wait "$watchdog_pid" 2> /dev/null
  teardown
  exit "$rc"
}

# Should this script be killed outright (SIGKILL: no trap runs), the watchdog tears down instead.
start_watchdog() {
  local parent=$$
  (
    trap - EXIT INT TERM
    set +e
    while kill -0 "$parent" 2> /dev/null; do sleep 1; done
    teardown
  ) < /dev/null > /dev/null 2>&1 &
  watchdog_pid=$!
}

# Two free TCP ports (base, base + 1) for slurmctld and slurmd.
pick_ports() {
  local base _
  for _ in $(seq 50); do
    base=$((20000 + RANDOM % 30000))
    # grep -c reads everything: grep -q could end first and fail the pipeline (SIGPIPE, pipefail).
    if ! command -v ss > /dev/null || [ "$(ss -Htan | awk '{print $4}' | grep -Ec ":($base|$((base + 1)))\$")" = 0 ]; then
      echo "$base"; return 0
    fi
  done
  fail "no free port pair found between 20000 and 50000"
}

start_munge() {
  mkdir -m 711 "$work/munge"
  if command -v mungekey > /dev/null; then
    mungekey --create --keyfile="$work/munge/munge.key"
  else
    (umask 077; dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none)
  fi
  munged --foreground --force --socket="$munge_socket" --key-file="$work/munge/munge.key" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed" \
    < /dev/null > "$work/munged.daemon" 2>&1 &
  munged_pid=$!
  local _
  for _ in $(seq 100); do [ -S "$munge_socket" ] && return 0; alive "$munged_pid" || break; sleep 0.1; done
  fail "munged did not create its socket $munge_socket"
}

write_slurm_conf() {
  local port
  port=$(pick_ports)
  mkdir -p "$work/state" "$work/spool/$node" "$work/tmp"
  # The hardware as slurmd sees it, but at least 2 CPUs so that 2 tasks fit (config_overrides makes
  # slurmd accept a node description that differs from the hardware).
  # Job ids unlike those of a concurrent instance: a direct-launched Open MPI job derives its
  # shared-memory names from the Slurm job and step ids, and two jobs 3.0 on one host collide.
  local first_job_id=$((1000 + RANDOM * 1000))
  local hw
  hw=$(slurmd -C 2> /dev/null | sed -n 's/^NodeName=[^ ]* \(CPUs=.*ThreadsPerCore=[0-9]*\).*/\1/p')
  [[ $hw =~ ^CPUs=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 2 ] || hw="CPUs=2"
  cat > "$SLURM_CONF" << EOF
ClusterName=sg2local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
TmpFS=$work/tmp
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
ReturnToService=2
JobRequeue=0
FirstJobId=$first_job_id
KillWait=2
MailProg=/bin/true
InactiveLimit=0
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
}

start_slurm() {
  slurmctld -D -f "$SLURM_CONF" < /dev/null > "$work/slurmctld.daemon" 2>&1 &
  slurmctld_pid=$!
  slurmd -D -f "$SLURM_CONF" -N "$node" < /dev/null > "$work/slurmd.daemon" 2>&1 &
  slurmd_pid=$!
  local _ state=
  for _ in $(seq 120); do
    alive "$slurmctld_pid" || fail "slurmctld exited during startup"
    alive "$slurmd_pid" || fail "slurmd exited during startup"
    state=$(sinfo -h -N -n "$node" -o %t 2> /dev/null || true)
    [ "$state" = idle ] && return 0
    sleep 0.5
  done
  fail "node $node not idle after 60 s (sinfo state: '${state:-none}')"
}

# The stand-in payload: mpi_hello installed under both app names.
build_preflight() {
  mkdir -p "$work/preflight-bin"
  mpicc -O1 -o "$work/preflight-bin/stylegan2_train" "$src/tests/slurm/mpi_hello.c" ||
    fail "mpicc could not build tests/slurm/mpi_hello.c"
  cp "$work/preflight-bin/stylegan2_train" "$work/preflight-bin/stylegan2_bench"
}

# submit NAME SCRIPT [sbatch options...] [-- SCRIPT ARGS...]: a job on 2 tasks of the one node, no GPUs;
# its id in job_id, its output in $work/NAME.out. (Not sbatch --wait: that polls after 2, 10 and 42 s.)
submit() {
  local name=$1 script=$2 options=() arguments=(); shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do options+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; arguments=("$@"); }
  job_id=$(sbatch --parsable --job-name="$name" --output="$work/$name.out" --chdir="$work" \
    --nodes=1 --ntasks=2 --ntasks-per-node=2 --gpus-per-task=0 --time=10 "${options[@]}" "$script" \
    "${arguments[@]}" 2> "$work/$name.sbatch") || fail_job "$name" "sbatch refused the job"
}

# wait_job NAME: until job_id has ended (job_timeout at most); its exit status in job_rc.
wait_job() {
  local name=$1 info state _
  for _ in $(seq $((job_timeout * 5))); do
    info=$(scontrol -o show job "$job_id" 2> /dev/null) || fail_job "$name" "job $job_id vanished from slurmctld"
    state=$(sed -nE 's/.* JobState=([A-Z_]+) .*/\1/p' <<< "$info")
    case $state in
      PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | RESIZING) sleep 0.2 ;;
      *)
        job_rc=$(sed -nE 's/.* ExitCode=([0-9]+):([0-9]+) .*/\1/p' <<< "$info")
        [ -n "$job_rc" ] || fail_job "$name" "cannot read the exit code: $info"
        return 0 ;;
    esac
  done
  fail_job "$name" "job $job_id still ${state:-unknown} after $job_timeout s"
}

# What --signal=B:USR1@300 in train.sbatch does 300 s before the time limit.
time_limit_warning() {
  scancel --batch --signal=USR1 "$job_id" || fail_job "$1" "scancel --batch --signal=USR1 $job_id failed"
}

# run_job NAME SCRIPT [sbatch options...] [-- SCRIPT ARGS...]: submit and wait.
run_job() { submit "$@"; wait_job "$1"; }

expect_rc() { [ "$job_rc" = "$2" ] || fail_job "$1" "exit status $job_rc, expected $2"; }
expect_out() { grep -qE -- "$2" "$work/$1.out" || fail_job "$1" "output lacks /$2/"; }

# wait_for_output NAME REGEX COUNT: until COUNT lines of the running job's output match (30 s at most).
wait_for_output() {
  local _
  for _ in $(seq 150); do
    [ "$(grep -cE -- "$2" "$work/$1.out" 2> /dev/null)" -ge "$3" ] 2> /dev/null && return 0
    [ -n "$(squeue -h -j "$job_id" 2> /dev/null)" ] || fail_job "$1" "job ended before printing /$2/"
    sleep 0.2
  done
  fail_job "$1" "no $3 lines matching /$2/ within 30 s"
}

preflight_train() {  # preflight_train srun|mpirun
  local name=preflight-$1
  SG2_BIN=$work/preflight-bin SG2_CONFIG=$src/configs/fashion32.yaml SG2_ARGS="--expect-size 2 --marker $1" \
    SG2_MPI_LAUNCH=$1 run_job "$name" "$src/scripts/slurm/train.sbatch"
  expect_rc "$name" 0
  expect_out "$name" "command: $1 "
  expect_out "$name" "argv: --config $src/configs/fashion32.yaml --expect-size 2 --marker $1\$"
  expect_out "$name" "rank 0 of 2 on .* ok"
  expect_out "$name" "rank 1 of 2 on .* ok"
  say "PASS train.sbatch with $1: 2 ranks, MPI_Allreduce ok"
}

preflight_stop() {  # preflight_stop srun|mpirun
  local name=stop-$1
  SG2_BIN=$work/preflight-bin SG2_CONFIG=$src/configs/fashion32.yaml SG2_ARGS="--until-signal --stop-seconds 4" \
    SG2_MPI_LAUNCH=$1 submit "$name" "$src/scripts/slurm/train.sbatch"
  wait_for_output "$name" "waiting for a stop signal" 2
  time_limit_warning "$name"
  wait_job "$name"
  expect_rc "$name" 143
  expect_out "$name" "stop requested"
  [ "$(grep -c 'stopping on signal 15' "$work/$name.out")" = 2 ] || fail_job "$name" "not both ranks saw SIGTERM"
  # Longer than KillWait: no SIGKILL may follow the SIGTERM.
  [ "$(grep -c 'stopped after 4.0 s' "$work/$name.out")" = 2 ] || fail_job "$name" "ranks killed while stopping"
  say "PASS train.sbatch with $1: SIGUSR1 to the batch shell -> one SIGTERM to the ranks -> exit 143"
}

# Errors end the job non-zero: a bad setting in the script (2) and a failing rank (its status).
preflight_failures() {
  local name=bad-bin
  SG2_BIN=$work/no-such-dir SG2_CONFIG=$src/configs/fashion32.yaml run_job "$name" "$src/scripts/slurm/train.sbatch"
  expect_rc "$name" 2
  expect_out "$name" "no executable $work/no-such-dir/stylegan2_train"
  name=rank-fails
  SG2_BIN=$work/preflight-bin SG2_CONFIG=$src/configs/fashion32.yaml SG2_ARGS="--expect-size 3" \
    run_job "$name" "$src/scripts/slurm/train.sbatch"
  expect_rc "$name" 1
  expect_out "$name" "rank 0 of 2 on .* WRONG"
  say "PASS train.sbatch failures: bad SG2_BIN -> exit 2, failing ranks -> exit 1"
}

# The real thing: stylegan2_train on 2 ranks (skipped with SG2_SLURM_TRAIN=0).
train_args() {  # train_args OUTDIR
  echo "--kimg 0.064 --train.kimg_per_tick 0.032 --run.image_snapshot_ticks 0 --run.threads 1" \
    "--data.workers 0 --data.max_images 512 --run.grid_w 4 --run.grid_h 2 --outdir $1" \
    "${SG2_SLURM_DATA:+--data $SG2_SLURM_DATA}"
}

run_training_job() {
  local name=train
  SG2_BIN=$bin SG2_CONFIG=$src/configs/fashion32.yaml SG2_ARGS="$(train_args "$work/runs")" \
    run_job "$name" "$src/scripts/slurm/train.sbatch"
  expect_rc "$name" 0
  expect_out "$name" "World: 2 processes"
  local snapshot
  snapshot=$(compgen -G "$work/runs/*/network-snapshot-*.pt" | head -n 1) ||
    fail_job "$name" "no network-snapshot-*.pt under $work/runs"
  say "PASS training job: 2 ranks, exit 0, $(basename "$snapshot")"
}

# srun without an MPI plugin: stylegan2_train refuses on every task instead of training 2 runs of 1.
# Whichever task refuses first ends the step (--kill-on-bad-exit), so either may be the one logged.
run_training_without_mpi_plugin() {
  local name=train-no-plugin
  SG2_BIN=$bin SG2_CONFIG=$src/configs/fashion32.yaml SG2_ARGS="$(train_args "$work/runs-no-plugin")" \
    SG2_SRUN_MPI=none run_job "$name" "$src/scripts/slurm/train.sbatch"
  [ "$job_rc" != 0 ] || fail_job "$name" "exit status 0, expected a refusal"
  expect_out "$name" "task [01] of 2 .*without an MPI plugin"
  ! compgen -G "$work/runs-no-plugin/*/network-snapshot-*.pt" > /dev/null || fail_job "$name" "it trained"
  say "PASS srun --mpi=none: stylegan2_train refused (exit $job_rc)"
}

# A long run under mpirun stopped by the time-limit warning, then continued under srun with
# --resume latest.
run_training_stop_resume() {
  local name=train-stop kimg
  SG2_BIN=$bin SG2_CONFIG=$src/configs/fashion32.yaml SG2_ARGS="$(train_args "$work/runs-stop") --kimg 100" \
    SG2_MPI_LAUNCH=mpirun submit "$name" "$src/scripts/slurm/train.sbatch"
  wait_for_output "$name" "^tick 1 " 1
  time_limit_warning "$name"
  wait_job "$name"
  expect_rc "$name" 143
  kimg=$(sed -nE 's/^Stopped by signal 15 at ([0-9.]+) kimg.*/\1/p' "$work/$name.out" | head -n 1)
  [ -n "$kimg" ] || fail_job "$name" "no 'Stopped by signal 15' line from rank 0"
  compgen -G "$work/runs-stop/*/network-snapshot-*.pt" > /dev/null || fail_job "$name" "no snapshot after the stop"

  name=train-resume  # no SG2_CONFIG: the snapshot's configuration
  kimg=$(awk -v k="$kimg" 'BEGIN { print k + 0.064 }')
  SG2_BIN=$bin SG2_ARGS="$(train_args "$work/runs-stop") --kimg $kimg --resume latest" \
    run_job "$name" "$src/scripts/slurm/train.sbatch"
  expect_rc "$name" 0
  expect_out "$name" "Resumed from $work/runs-stop/"
  say "PASS training stopped under mpirun (exit 143, snapshot), resumed under srun up to $kimg kimg (exit 0)"
}

# The scaling study's tiny preset with the real stylegan2_bench through scaling_study.sbatch: strong and
# weak sweeps on 1 and 2 ranks, each with its allreduce and computing alone; then its JSONL, table and
# plot (tests/scripts/check_scaling_study.py says what each must hold).
run_scaling_study_job() {
  local name=scaling-study job_timeout=600 out=$work/study
  SG2_BIN=$bin SG2_REPO=$src SG2_STUDY_OUT=$out run_job "$name" "$src/scripts/slurm/scaling_study.sbatch" -- tiny
  expect_rc "$name" 0
  python3 "$src/tests/scripts/check_scaling_study.py" "$out" || fail_job "$name" "the study's results are wrong"
  say "PASS scaling study (tiny): $(wc -l < "$out/runs.jsonl") runs, table.md and scaling.png"
}

# Bad settings end the study before any run, naming what to change.
scaling_study_failures() {
  local name=scaling-study-too-big
  SG2_BIN=$bin SG2_REPO=$src SG2_STUDY_OUT=$work/study-too-big run_job "$name" \
    "$src/scripts/slurm/scaling_study.sbatch" -- table1
  expect_rc "$name" 2
  expect_out "$name" "preset table1 needs 4 nodes of 4 GPUs and the allocation has 1"
  name=scaling-study-no-preset
  SG2_BIN=$bin SG2_REPO=$src run_job "$name" "$src/scripts/slurm/scaling_study.sbatch" -- fig5
  expect_rc "$name" 2
  expect_out "$name" "unknown preset 'fig5'"
  say "PASS scaling study failures: too small an allocation, an unknown preset -> exit 2"
}

main() {
  require_tools
  work=$(mktemp -d "${TMPDIR:-/tmp}/sg2-slurm.XXXXXX")
  chmod 755 "$work"
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  # Nothing of an enclosing Slurm job may leak into this cluster's clients, nor the caller's
  # settings of the sbatch scripts into the jobs.
  local leaked
  mapfile -t leaked < <(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN)_|^SG2_' | grep -v '^SG2_SLURM_' || true)
  [ ${#leaked[@]} -eq 0 ] || unset "${leaked[@]}"
  node=$(hostname -s)
  munge_socket=$work/munge/munge.socket
  export SLURM_CONF=$work/slurm.conf
  # The jobs inherit this environment (sbatch --export=ALL).
  mkdir "$work/jobtmp"
  export TMPDIR=$work/jobtmp OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_vader_backing_directory=$work/jobtmp  # not /dev/shm, shared with other instances

  local start=$SECONDS
  start_munge
  write_slurm_conf
  start_slurm
  start_watchdog
  say "cluster up in $((SECONDS - start)) s (node $node, $SLURM_CONF)"
  build_preflight
  preflight_train srun
  preflight_train mpirun
  preflight_stop srun
  preflight_stop mpirun
  preflight_failures
  if [ "${SG2_SLURM_TRAIN:-1}" = 1 ]; then
    run_training_job
    run_training_without_mpi_plugin
    run_training_stop_resume
  else
    say "training job not run (SG2_SLURM_TRAIN=0)"
  fi
  if [ "${SG2_SLURM_STUDY:-1}" = 1 ]; then
    scaling_study_failures
    run_scaling_study_job
  else
    say "scaling study not run (SG2_SLURM_STUDY=0)"
  fi
  say "PASS ($((SECONDS - start)) s)"
}

main
