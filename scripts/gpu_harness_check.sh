#!/usr/bin/env bash
# One device call for a change to the run harness (runtime/harness.c): the GPU test
# binaries of a build without LLVM, the wgmma and padded-tile checks with the static
# perfc, then `perfc --run` at full size (bench/gpu/golden_scale.sh) with this tree's
# perfc and a base perfc alternated, so their wall times come from one machine.
# Carry: carry/gpu/perfc.xz (this tree), carry/gpu/perfc-base.xz (the base, optional),
# build-gpu/tests/cuda/test_cuda_gpu and build-gpu/tests/runtime/test_rt_gpu
# (-DPERFC_WITH_LLVM=OFF -DPERFC_WITH_OPENBLAS=OFF).
#   bash scripts/gpu_harness_check.sh            ROUNDS=2 TARGET=sm_90
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc || exit 1
[ -f carry/gpu/perfc-base.xz ] && xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc-base && chmod +x /tmp/pf/perfc-base
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rc=0
for t in build-gpu/tests/runtime/test_rt_gpu build-gpu/tests/cuda/test_cuda_gpu; do
    [ -x "$t" ] || { echo "--- $t: not carried"; continue; }
    timeout 240 "$t" > /tmp/pf/test.log 2>&1; r=$?
    tail -3 /tmp/pf/test.log; echo "--- $t: exit $r"; [ "$r" = 0 ] || rc=1
done
for s in wg_gpu:stdlib pad_gpu:bench/gpu/contractions; do
    timeout 150 bash tests/cuda/${s%%:*}.sh /tmp/pf/perfc "${s#*:}" > /tmp/pf/test.log 2>&1; r=$?
    tail -2 /tmp/pf/test.log; echo "--- ${s%%:*}: exit $r"; [ "$r" = 0 ] || rc=1
done
for ((round = 1; round <= ${ROUNDS:-2}; round++)); do
    for who in new base; do
        p=/tmp/pf/perfc; [ $who = base ] && p=/tmp/pf/perfc-base
        [ -x "$p" ] || continue
        echo "=== $who, round $round"
        PERFC=$p OUT=/tmp/gs_${who}_$round bash bench/gpu/golden_scale.sh "${TARGET:-sm_90}" 2>&1 | grep -v '^    perfc'
    done
done
exit $rc
