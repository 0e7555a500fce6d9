#!/usr/bin/env bash
# One device call after merging work on several areas: the GPU checks each area
# left behind, run back to back on one GPU with a time limit each, logs under $OUT.
#   1. the language's new constructs on the GPU (bench/gpu/lang_ops.sh)
#   2. generated libraries: general GPU variant at unseen sizes, C and PyTorch
#      callers against perfc --run (bench/gpu/lib_gemm.sh)
#   3. the CUDA back end before and after the GPU target passes: CUDA C diffed and
#      timed, old and new alternating (bench/gpu/passes_compare.sh), old = the
#      static perfc of a base commit
# Carry (carry: carry/gpu): perfc.xz (this tree, -DPERFC_LLVM_STATIC=ON),
# perfc-base.xz (the base commit, same build), lib_check (build-static/tests/lib).
#   bash scripts/gpu_integration_check.sh
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/gpu_integration}
mkdir -p "$O" /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc_new && chmod +x /tmp/pf/perfc_new || exit 1
xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc_old && chmod +x /tmp/pf/perfc_old || exit 1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
section() {  # section NAME SECONDS COMMAND...
    local name=$1 secs=$2; shift 2
    echo "=== $name ($(date -u +%T), limit ${secs}s)"
    OUT="$O/$name" timeout "$secs" "$@" > "$O/$name.log" 2>&1
    local s=$?
    tail -40 "$O/$name.log"
    echo "=== $name: exit $s"
}
section lang 150 env PERFC=/tmp/pf/perfc_new bash bench/gpu/lang_ops.sh
section lib 240 bash bench/gpu/lib_gemm.sh
section passes 200 env ROUNDS=1 bash bench/gpu/passes_compare.sh
date -u
