#!/usr/bin/env bash
# One device call for the GPU checks of a working tree, back to back with a time limit each,
# logs under $OUT:
#   1. the GPU tests (test_cuda_gpu, test_rt_gpu of a build without LLVM, and
#      tests/cuda/wg_gpu.sh, pad_gpu.sh and flash_gpu.sh with the static perfc)
#   2. the CUDA back end before and after (bench/gpu/passes_compare.sh: stdlib rows
#      diffed, validated and timed against the static perfc of a base commit)
#   3. random legal GPU schedules, every state validated (bench/gpu/gpu_property.sh)
#   4. the GEMM-family suite with no tuning (MODE=run bench/gpu/contractions.sh):
#      the default schedule a user who never tunes gets
# Carry: carry/gpu/perfc.xz (this tree, -DPERFC_LLVM_STATIC=ON), perfc_old.xz and
# stdlib_old/ (the base), build-gpu/tests/cuda/test_cuda_gpu and
# build-gpu/tests/runtime/test_rt_gpu (-DPERFC_WITH_LLVM=OFF -DPERFC_WITH_OPENBLAS=OFF).
#   bash scripts/gpu_tree_check.sh [SECTIONS...]   (default: tests passes property defaults)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/gpu_tree_check}
mkdir -p "$O" /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc || exit 1
cp /tmp/pf/perfc /tmp/pf/perfc_new
[ -f carry/gpu/perfc_old.xz ] && { xz -dc carry/gpu/perfc_old.xz > /tmp/pf/perfc_old && chmod +x /tmp/pf/perfc_old; }
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
section() {  # section NAME SECONDS COMMAND...
    local name=$1 secs=$2; shift 2
    echo "=== $name ($(date -u +%T), limit ${secs}s)"
    OUT="$O/$name" timeout "$secs" "$@" > "$O/$name.log" 2>&1
    local s=$?
    tail -${TAILN:-30} "$O/$name.log"
    echo "=== $name: exit $s"
}
run_tests() {
    local rc=0
    for t in build-gpu/tests/cuda/test_cuda_gpu build-gpu/tests/runtime/test_rt_gpu; do
        echo "--- $t"; "$t" 2>&1 | tail -5; r=${PIPESTATUS[0]}; echo "--- $t: exit $r"; [ "$r" = 0 ] || rc=1
    done
    echo "--- wg_gpu.sh"; bash tests/cuda/wg_gpu.sh /tmp/pf/perfc stdlib 2>&1 | tail -5; r=${PIPESTATUS[0]}
    echo "--- wg_gpu.sh: exit $r"; [ "$r" = 0 ] || rc=1
    echo "--- pad_gpu.sh"; bash tests/cuda/pad_gpu.sh /tmp/pf/perfc bench/gpu/contractions 2>&1 | tail -8; r=${PIPESTATUS[0]}
    echo "--- pad_gpu.sh: exit $r"; [ "$r" = 0 ] || rc=1
    echo "--- flash_gpu.sh"; bash tests/cuda/flash_gpu.sh /tmp/pf/perfc stdlib 2>&1 | tail -8; r=${PIPESTATUS[0]}
    echo "--- flash_gpu.sh: exit $r"; [ "$r" = 0 ] || rc=1
    return $rc
}
want=${*:-tests passes property defaults}
for s in $want; do
    case $s in
    tests) export -f run_tests; section tests 150 bash -c run_tests ;;
    passes) section passes 200 env ROUNDS=1 bash bench/gpu/passes_compare.sh ;;
    property) section property 150 env WORK=/tmp/pf/prop SEEDS=${SEEDS:-3} STEPS=${STEPS:-10} bash -c 'mkdir -p /tmp/pf/prop && cp /tmp/pf/perfc /tmp/pf/prop/perfc && bash bench/gpu/gpu_property.sh' ;;
    defaults) section defaults 200 env MODE=run bash bench/gpu/contractions.sh ;;
    sm80) section sm80 400 env TARGET=sm_80 BUDGET=${BUDGET:-8} TLIMIT=${TLIMIT:-25} bash bench/gpu/contractions.sh ;;
    esac
done
date -u
