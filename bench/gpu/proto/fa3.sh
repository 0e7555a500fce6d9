#!/usr/bin/env bash
# Measures FlashAttention-3's rotation before it is written as a transformation: the
# warpgroup flash kernel's CUDA (the tuner's template pinned at 64 keys and 3 stages,
# flash_wg_st3.sched), edited by mkproto.py so that tile j's scores are issued, then
# tile j-1's P.V behind them, and the softmax of tile j runs while that product is in
# flight (its wait placed before O is rescaled), with copies one tile ahead (the third
# stage holds the V of the delayed product).  Each variant is validated and timed by
# perfc --run (PERFC_CUDA_SOURCE compiles the edited file in place of the generated
# one) beside SDPA, in one call.  Measured at 846451e (docs/cuda.md); later emitter
# changes may move the code mkproto.py edits, which then stops with the line it missed.
#   bash bench/gpu/proto/fa3.sh        (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/pf /tmp/proto && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
S=bench/gpu/proto/flash_wg_st3.sched
gen() {  # gen B S NTILES OUT
  /tmp/pf/perfc stdlib/attention.pdl -D B=$1 -D H=16 -D S=$2 -D D=128 -target sm_90a --no-schedule \
      -s "$(cat $S)" -emit cuda > /tmp/proto/plain.cu && python3 bench/gpu/proto/mkproto.py /tmp/proto/plain.cu "$4" "$3"
}
gen 4 2048 32 /tmp/proto/fa3_2048.cu || exit 1
gen 1 4096 64 /tmp/proto/fa3_4096.cu || exit 1
for rep in 1 2; do
  echo "== round $rep: default (2 stages) / 3 stages as generated / 3 stages rotated by hand"
  bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  PERFC_CUDA_SOURCE=/tmp/proto/fa3_2048.cu SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
done
echo "== S=4096, B=1: default / rotated"
bash bench/gpu/attention.sh s4096 | grep -v '^NVIDIA\|^target'
PERFC_CUDA_SOURCE=/tmp/proto/fa3_4096.cu SCHEDFILE=$S bash bench/gpu/attention.sh s4096 | grep -v '^NVIDIA\|^target'
