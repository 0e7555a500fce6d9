#!/usr/bin/env bash
# Measures the mma.sync flash template (sm_80 code, run on the GPU at hand) with 16
# rows a warp and 8 warps a block (flash_mma_w8*.sched) against its 32 rows a warp and
# 4 warps (flash_mma_w4*.sched, the template as generated), at 64 and 32 keys a tile,
# and the 8-warp form with __launch_bounds__(256, 2) by hand (two blocks an SM where
# the H100's shared memory admits them), each validated and timed by perfc --run beside
# SDPA, two rounds.   bash bench/gpu/proto/mma_rows.sh   (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/pf /tmp/proto && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=bench/gpu/proto
/tmp/pf/perfc stdlib/attention.pdl -D B=4 -D H=16 -D S=2048 -D D=128 -target sm_80 --no-schedule \
    -s "$(cat $P/flash_mma_w8.sched)" -emit cuda > /tmp/proto/w8.cu || exit 1
sed 's/__launch_bounds__(256)/__launch_bounds__(256, 2)/' /tmp/proto/w8.cu > /tmp/proto/w8_lb2.cu
for rep in 1 2; do
  echo "== round $rep"
  for v in w4 w8 w4_k32 w8_k32; do
    echo "-- $v"; TARGET=sm_80 SCHEDFILE=$P/flash_mma_$v.sched bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  done
  echo "-- w8 with __launch_bounds__(256, 2)"
  PERFC_CUDA_SOURCE=/tmp/proto/w8_lb2.cu TARGET=sm_80 SCHEDFILE=$P/flash_mma_w8.sched bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
done
