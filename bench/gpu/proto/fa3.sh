#!/usr/bin/env bash
# Measures the FlashAttention-3 rotation before it is written as a transformation: the
# warpgroup flash kernel's CUDA, edited by hand (bench/gpu/proto/mkproto.py) so that
# tile j's scores are issued, then tile j-1's P.V behind them, and the softmax of tile
# j runs while that product is in flight (its wait placed before O is rescaled), with
# three stages and copies one tile ahead (the third holds the V of the delayed product).
# Each variant is validated and timed by perfc --run (PERFC_CUDA_SOURCE compiles the
# edited file in place of the generated one) beside SDPA in the same call.
#   bash bench/gpu/proto/fa3.sh        (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
S=bench/gpu/proto/flash_wg_st3.sched
for rep in 1 2; do
  echo "== round $rep: default (2 stages) / 3 stages as generated / 3 stages rotated by hand"
  bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  PERFC_CUDA_SOURCE=bench/gpu/proto/flash_fa3_b4h16s2048d128.cu SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
done
echo "== S=4096, B=1: default / rotated"
bash bench/gpu/attention.sh s4096 | grep -v '^NVIDIA\|^target'
PERFC_CUDA_SOURCE=bench/gpu/proto/flash_fa3_b1h16s4096d128.cu SCHEDFILE=$S bash bench/gpu/attention.sh s4096 | grep -v '^NVIDIA\|^target'
grep -h "PERFC_CUDA_SOURCE" "${OUT:-/tmp/attention}"/*.err | sort | uniq -c
