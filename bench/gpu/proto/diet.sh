#!/usr/bin/env bash
# Measures candidate changes to the warpgroup flash kernel's softmax before they are
# written into the emitter: hand edits (mkdiet.py, mksplit.py) of the generated CUDA
# of 4x16x2048x128 under the tuner's template pinned at 64 keys and 2 stages
# (flash_wg_st2.sched, which predates exp_scale), each validated and timed by perfc
# --run (PERFC_CUDA_SOURCE) beside SDPA, two rounds.  Measured at d8368a7 and
# 846451e (docs/cuda.md, docs/benchmarks.md): since then the back end forwards the
# row sum's values itself (mkdiet's `sum` finds nothing to edit) and exp_scale does
# what `scale` does by hand.
#   bash bench/gpu/proto/diet.sh        (carry carry/gpu/perfc.xz; VARIANTS="split2 ...")
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/pf /tmp/proto && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
S=bench/gpu/proto/flash_wg_st2.sched
/tmp/pf/perfc stdlib/attention.pdl -D B=4 -D H=16 -D S=2048 -D D=128 -target sm_90a --no-schedule \
    -s "$(cat $S)" -emit cuda > /tmp/proto/plain.cu || exit 1
python3 bench/gpu/proto/mkdiet.py /tmp/proto/plain.cu /tmp/proto/flash_scale.cu scale
python3 bench/gpu/proto/mksplit.py /tmp/proto/plain.cu /tmp/proto/flash_split2.cu 2
python3 bench/gpu/proto/mksplit.py /tmp/proto/plain.cu /tmp/proto/flash_split4.cu 4
python3 bench/gpu/proto/mksplit.py /tmp/proto/flash_scale.cu /tmp/proto/flash_split4_scale.cu 4
for rep in 1 2; do
  echo "== round $rep: as generated / ${VARIANTS:-split2 split4 scale split4_scale}"
  SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  for v in ${VARIANTS:-split2 split4 scale split4_scale}; do
    echo "-- $v"
    PERFC_CUDA_SOURCE=/tmp/proto/flash_$v.cu SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  done
done
