# Sourced by the end-to-end scripts: a scratch directory removed on exit ($work), and the checks of
# a command a user runs. Needs bin (the programs' directory) set by the caller.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error PATTERN COMMAND...: the command exits 1 (an error, not a crash's 128 + n or an
# abort's 134) and its output matches PATTERN (grep).
expect_error() {
  local pattern=$1 rc=0; shift
  "$@" > "$work/err.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "expected failure: $*"
  [ "$rc" -eq 1 ] || { cat "$work/err.log"; fail "exit status $rc, not 1: $*"; }
  grep -q -- "$pattern" "$work/err.log" || { cat "$work/err.log"; fail "message lacks '$pattern'"; }
}
