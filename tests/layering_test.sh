#!/usr/bin/env bash
# layering_test.sh — keeps the simulator honest: outside src/sim, only the simulator's own
# adapters (apply/sim_gpu_control.h) and the command line may include simulator headers, so no
# stage of the pipeline can read a kernel's hidden characteristics.
# Usage: layering_test.sh SRC_DIR
set -u
src=$1
bad=$(grep -rln --include='*.h' --include='*.cc' '#include "sim/' "$src" \
      | grep -v -E "^$src/(sim/|cli/|apply/sim_gpu_control\.h$)")
if [ -n "$bad" ]; then
  echo "FAIL: these files include simulator headers:"; echo "$bad"; exit 1
fi
echo "ok: no pipeline stage includes the simulator"
