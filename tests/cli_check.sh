# cli_check.sh — sourced by the CLI test scripts: a scratch directory $tmp removed at exit, and
# `check NAME CONDITION...`, which prints ok or FAIL and leaves $fail at 1 after any failure.
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {
  local name=$1; shift
  if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; fail=1; fi
}
