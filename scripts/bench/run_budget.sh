# Sourced by the GPU bench scripts: runs that share one device call's time.

# Seconds the next run may take: LIMIT, or what is left of BUDGET seconds since START (epoch
# seconds); 0 when under 30 are left (not worth starting).
run_seconds_left() {  # run_seconds_left START BUDGET LIMIT
  local left=$(($2 - ($(date +%s) - $1)))
  [ "$left" -le "$3" ] || left=$3
  [ "$left" -ge 30 ] || left=0
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
