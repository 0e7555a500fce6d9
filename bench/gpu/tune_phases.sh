#!/usr/bin/env bash
# Where the first seconds of a GPU tune go: one --autotune of stdlib gemm (T = f16) at 4096^3
# (sm_90a, no schedule, fresh database) with its progress lines and profile, and
# one plain --run of the same kernel for the fixed costs (context, inputs, golden,
# compile, timing).  Carry carry/gpu/perfc.xz (static perfc, see tune_time.sh).
#   bash bench/gpu/tune_phases.sh          BUDGET=16 by default
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=${WORK:-/tmp/perfc_tune_phases}; mkdir -p "$W"
[ -x "$W/perfc" ] || { xz -dc carry/gpu/perfc.xz > "$W/perfc" && chmod +x "$W/perfc"; } || exit 1
P=$W/perfc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "=== --run (schedule as written)"
/usr/bin/time -f "wall %e s" "$P" stdlib/gemm.pdl -D T=f16 --schedule tc -D M=4096 -D N=4096 -D K=4096 -target sm_90a --run 2>&1 | grep -v "^  " | head -30
echo "=== --autotune --budget ${BUDGET:-16} (fresh database)"
rm -f "$W/t.db"
/usr/bin/time -f "wall %e s" "$P" stdlib/gemm.pdl -D T=f16 -D M=4096 -D N=4096 -D K=4096 --no-schedule -target sm_90a --autotune \
    --budget "${BUDGET:-16}" --db "$W/t.db" --compare cublas 2>&1 | head -60
