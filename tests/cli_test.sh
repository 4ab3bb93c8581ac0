#!/usr/bin/env bash
# cli_test.sh — end-to-end checks of the emo executable: help, JSON keys of `emo analyze`, and
# clear one-line errors with a non-zero exit on bad input.
# Usage: cli_test.sh EMO_BINARY TRACES_DIR
set -u
emo=$1
traces=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; fail=1; fi
}

"$emo" --help >"$tmp/help" 2>&1
check "emo --help lists analyze" grep -q analyze "$tmp/help"
"$emo" analyze --help >"$tmp/ahelp" 2>&1
check "emo analyze --help mentions --json" grep -q -- --json "$tmp/ahelp"

if [ -d "$traces" ]; then
  "$emo" analyze --json "$traces/HolisticTraceAnalysis/critical_path/simple_add" >"$tmp/out.json" 2>"$tmp/err"
  check "analyze --json exits 0" test $? -eq 0
  for key in ranks nodes edges observed_ms replayed_ms replay_error critical_path gpu_slack_ms; do
    check "JSON has key $key" python3 -c "import json,sys; d=json.load(open('$tmp/out.json')); sys.exit(0 if '$key' in d else 1)"
  done
  "$emo" analyze "$traces/param/dlrm_kineto" >"$tmp/out.txt" 2>&1
  check "analyze text over 8 ranks" grep -q "rank 7" "$tmp/out.txt"
fi

# Bad input: one line on stderr naming the file, non-zero exit, no crash (exit code 1, not a signal).
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 12' >"$tmp/truncated.json"
"$emo" analyze "$tmp/truncated.json" >/dev/null 2>"$tmp/err"; rc=$?
check "truncated JSON exits 1" test $rc -eq 1
check "truncated JSON error names the file" grep -q "truncated.json: byte" "$tmp/err"
check "error is one line" test "$(wc -l <"$tmp/err")" -eq 1
printf 'SQLite format 3\000garbage' >"$tmp/bad.sqlite"
"$emo" analyze "$tmp/bad.sqlite" >/dev/null 2>"$tmp/err"; rc=$?
check "corrupt SQLite exits 1" test $rc -eq 1
check "corrupt SQLite error names the file" grep -q "bad.sqlite" "$tmp/err"
"$emo" analyze "$tmp/missing.json" >/dev/null 2>"$tmp/err"; rc=$?
check "missing file exits 1" test $rc -eq 1
"$emo" analyze >/dev/null 2>&1; rc=$?
check "missing argument exits non-zero" test $rc -ne 0

exit $fail
