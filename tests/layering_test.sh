#!/usr/bin/env bash
# layering_test.sh — keeps the simulator honest: no pipeline stage may see it. Three checks:
#   sources  outside src/sim, only the commands that host the simulator (src/cli/sim.cc, calibrate.cc,
#            optimize.cc, validate.cc, sim_pipeline.*, sim_adapt.*, perseus_baseline.*, gpoeo_train.cc) may include a simulator header or name sim:: or a kernel's hidden traits;
#   symbols  no pipeline library (libemo_<stage>.a) defines or references an emo::sim:: symbol;
#   links    every pipeline library links whole into a shared library with -Wl,--no-undefined
#            (the *_linkcheck targets of CMakeLists.txt, built with everything else).
# With --violation it runs the same checks on a deliberate violation (tests/layering_violation.cc,
# in a copy of the sources and as its own library) and succeeds only if every check catches it.
# Usage: layering_test.sh [--violation] SRC_DIR BUILD_DIR
set -u
violation=0
if [ "${1:-}" = --violation ]; then violation=1; shift; fi
src=$1
build=$2
stages="util trace graph pack device apply online model search"
[ -f "$build/libemo_mip.a" ] && stages="$stages mip"  # the search's MIP reference, built where GLPK is found

# Files under $1 that name the simulator outside the allowed places (comments stripped).
check_sources() {
  local root=$1 bad=""
  while IFS= read -r f; do
    # cli/calibrate.cc hosts the simulator's microbenchmark device for `emo calibrate`, cli/optimize.cc,
    # cli/validate.cc and sim_pipeline.* the simulated device `emo optimize` and `emo validate` run the
    # pipeline on (sim_adapt.* its online loop), and cli/gpoeo_train.cc runs the generated training corpus on it for `emo gpoeo train
    # --device sim:`, and perseus_baseline.* profiles and plays Perseus on it for `emo bench`.
    case "$f" in "$root"/sim/*|"$root"/cli/sim.cc|"$root"/cli/calibrate.cc|"$root"/cli/optimize.cc|"$root"/cli/validate.cc|"$root"/cli/sim_pipeline.*|"$root"/cli/sim_adapt.*|"$root"/cli/perseus_baseline.*|"$root"/cli/gpoeo_train.cc) continue ;; esac
    if sed 's://.*$::' "$f" | grep -q -E '#include "sim/|\bsim::|KernelTraits|\.traits\b'; then bad="$bad $f"; fi
  done < <(find "$root" -name '*.h' -o -name '*.cc')
  [ -z "$bad" ] || { echo "sources naming the simulator:$bad"; return 1; }
}

# Libraries (paths) that define or reference emo::sim:: symbols.
check_symbols() {
  local bad=""
  for lib in "$@"; do
    [ -f "$lib" ] || { echo "missing library $lib"; return 1; }
    if nm -C "$lib" 2>/dev/null | grep -q 'emo::sim::'; then bad="$bad $lib"; fi
  done
  [ -z "$bad" ] || { echo "libraries with simulator symbols:$bad"; return 1; }
}

if [ $violation = 0 ]; then
  fail=0
  check_sources "$src" || fail=1
  libs=()
  for s in $stages; do libs+=("$build/libemo_$s.a"); done
  check_symbols "${libs[@]}" || fail=1
  if [ -f "$build/libemo_graph_linkcheck.so" ]; then
    for s in $stages; do
      [ -f "$build/libemo_${s}_linkcheck.so" ] || { echo "stage $s did not link on its own"; fail=1; }
    done
  else
    echo "note: no link checks in this build (sanitizer or fuzzer build)"
  fi
  [ $fail = 0 ] || { echo FAIL; exit 1; }
  echo "ok: no pipeline stage names, references or links the simulator"
  exit 0
fi

# The failing case: each check must catch tests/layering_violation.cc.
caught=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/src"
cp "$(dirname "$0")/layering_violation.cc" "$tmp/src/graph/violation.cc"
if check_sources "$tmp/src" >/dev/null; then echo "FAIL: the source check missed the violation"; else caught=$((caught + 1)); fi
cmake --build "$build" --target emo_layering_violation >"$tmp/lib.log" 2>&1 || { cat "$tmp/lib.log"; exit 1; }
if check_symbols "$build/libemo_layering_violation.a" >/dev/null; then
  echo "FAIL: the symbol check missed the violation"
else
  caught=$((caught + 1))
fi
if [ -f "$build/libemo_graph_linkcheck.so" ]; then
  if cmake --build "$build" --target emo_layering_violation_linkcheck >"$tmp/link.log" 2>&1; then
    echo "FAIL: the violation linked"
  elif grep -q 'undefined reference to .emo::sim::' "$tmp/link.log"; then
    caught=$((caught + 1))
  else
    echo "FAIL: the link failed for another reason:"; tail -20 "$tmp/link.log"
  fi
  expected=3
else
  expected=2
fi
[ $caught = $expected ] || exit 1
echo "ok: all $caught checks caught the deliberate violation"
