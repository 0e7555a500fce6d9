#!/usr/bin/env bash
# One device call after merging work on several areas: the GPU checks each area
# left behind, run back to back on one GPU with a time limit each, logs under $OUT.
#   1. scatters with atomics and block scans (bench/gpu/lang_scan.sh)
#   2. random legal GPU schedules, every state validated (bench/gpu/gpu_property.sh)
#   3. the CUDA back end before and after: CUDA C diffed and timed, old and new
#      alternating (bench/gpu/passes_compare.sh), old = the static perfc of a base
#      commit with that commit's stdlib/
# Carry (carry: carry/gpu): perfc.xz (this tree, -DPERFC_LLVM_STATIC=ON),
# perfc_old.xz and stdlib_old/ (the base commit).
#   bash scripts/gpu_integration_check.sh
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/gpu_integration}
mkdir -p "$O" /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc_new && chmod +x /tmp/pf/perfc_new || exit 1
xz -dc carry/gpu/perfc_old.xz > /tmp/pf/perfc_old && chmod +x /tmp/pf/perfc_old || exit 1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
section() {  # section NAME SECONDS COMMAND...
    local name=$1 secs=$2; shift 2
    echo "=== $name ($(date -u +%T), limit ${secs}s)"
    OUT="$O/$name" timeout "$secs" "$@" > "$O/$name.log" 2>&1
    local s=$?
    tail -40 "$O/$name.log"
    echo "=== $name: exit $s"
}
section scan 150 env PERFC=/tmp/pf/perfc_new bash bench/gpu/lang_scan.sh
section property 150 env WORK=/tmp/pf/prop SEEDS=${SEEDS:-3} STEPS=${STEPS:-10} bash -c 'mkdir -p /tmp/pf/prop && cp /tmp/pf/perfc_new /tmp/pf/prop/perfc && bash bench/gpu/gpu_property.sh'
section passes 200 env ROUNDS=1 bash bench/gpu/passes_compare.sh
date -u
