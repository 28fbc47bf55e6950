# Sourced by the GPU bench scripts: runs that share one device call's time (run_clock_start, then
# budgeted_run per run), and the settings their stylegan2_bench runs share.

# config-f at 256 in the reference's mixed precision (float16 in the 4 highest resolutions, clamped).
config_f_precision=(--G.num_fp16_res 4 --D.num_fp16_res 4 --G.conv_clamp 256 --D.conv_clamp 256)
# A dry run's bench on a CPU: tiny float32 networks, one warm-up and one timed cycle.
tiny_bench=(--G.channel_base 256 --D.channel_base 256 --train.batch 8 --D.mbstd_group_size 4 --warmup 1 --repeats 1)

# Seconds the next run may take: LIMIT, or what is left of BUDGET seconds since START (epoch
# seconds); 0 when under MIN (default 30) are left, not worth starting.
run_seconds_left() {  # run_seconds_left START BUDGET LIMIT [MIN]
  local left=$(($2 - ($(date +%s) - $1)))
  [ "$left" -le "$3" ] || left=$3
  [ "$left" -ge "${4:-30}" ] || left=0
  echo "$left"
}

# Why a run under `timeout` ended, for a log line: "exit N", with ", out of time" for timeout's codes.
run_outcome() {  # run_outcome STATUS
  case "$1" in
    124 | 137) echo "exit $1, out of time" ;;
    *) echo "exit $1" ;;
  esac
}

# stdbuf -oL where there is one: a program's standard output line by line into a pipe, so a run
# stopped by its time limit leaves every line it printed.
line_buffered=()
command -v stdbuf > /dev/null && line_buffered=(stdbuf -oL)

# The clock of a script's runs: BUDGET seconds from now, at most LIMIT a run, none started with
# under MIN (default 30) left; NAME's log is LOG.
run_clock_start() {  # run_clock_start NAME LOG BUDGET LIMIT [MIN]
  run_name=$1 run_log=$2 run_budget=$3 run_limit=$4 run_min=${5:-30}
  run_start=$(date +%s)
  run_failures=0
}

# Runs COMMAND within run_seconds_left: its standard output, line by line, into FILE and the log,
# its errors into the log. A run skipped for want of time, failed or stopped is named in the log and
# on stderr and counted in run_failures; the script goes on either way.
budgeted_run() {  # budgeted_run FILE COMMAND...
  local file=$1 left status errexit=$-
  shift
  : > "$file"
  left=$(run_seconds_left "$run_start" "$run_budget" "$run_limit" "$run_min")
  if [ "$left" -eq 0 ]; then
    run_failures=$((run_failures + 1))
    echo "$run_name: SKIPPED (the ${run_budget} s budget is spent): $*" | tee -a "$run_log" >&2
    return 0
  fi
  set +e
  timeout --kill-after=5 "$left" "${line_buffered[@]}" "$@" 2>> "$run_log" | tee "$file" >> "$run_log"
  status=${PIPESTATUS[0]}
  [[ $errexit == *e* ]] && set -e
  [ "$status" -eq 0 ] && return 0
  run_failures=$((run_failures + 1))
  echo "$run_name: FAILED ($(run_outcome "$status")): $*" | tee -a "$run_log" >&2
}
