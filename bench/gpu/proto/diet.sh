#!/usr/bin/env bash
# Measures candidate changes to the warpgroup flash kernel's softmax before they are
# written into the emitter: hand edits of the generated CUDA (4x16x2048x128, the
# tuner's default schedule pinned in flash_wg_st2.sched), each validated and timed by
# perfc --run (PERFC_CUDA_SOURCE) beside SDPA, two rounds.  Make the files first:
#   perfc stdlib/attention.pdl -D B=4 -D H=16 -D S=2048 -D D=128 -target sm_90a \
#     --no-schedule -s "$(cat bench/gpu/proto/flash_wg_st2.sched)" -emit cuda > /tmp/wg.cu
#   python3 bench/gpu/proto/mkdiet.py /tmp/wg.cu bench/gpu/proto/flash_scale.cu scale
#   python3 bench/gpu/proto/mksplit.py /tmp/wg.cu bench/gpu/proto/flash_split2.cu 2   (and 4)
#   python3 bench/gpu/proto/mksplit.py bench/gpu/proto/flash_scale.cu bench/gpu/proto/flash_split4_scale.cu 4
#   bash bench/gpu/proto/diet.sh        (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
S=bench/gpu/proto/flash_wg_st2.sched
for rep in 1 2; do
  echo "== round $rep: as generated / ${VARIANTS:-split2 split4 scale split4_scale}"
  SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  for v in ${VARIANTS:-split2 split4 scale split4_scale}; do
    echo "-- $v"
    PERFC_CUDA_SOURCE=bench/gpu/proto/flash_$v.cu SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  done
done
