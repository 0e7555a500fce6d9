#!/usr/bin/env bash
# Measures candidate changes to the warpgroup flash kernel's softmax before they are
# written into the emitter: bench/gpu/proto/mkdiet.py's hand edits of the generated CUDA
# (4x16x2048x128, the tuner's default schedule pinned in flash_wg_st2.sched), each
# validated and timed by perfc --run (PERFC_CUDA_SOURCE) beside SDPA, two rounds.
#   bash bench/gpu/proto/diet.sh        (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
S=bench/gpu/proto/flash_wg_st2.sched
for rep in 1 2; do
  echo "== round $rep: as generated / sum of f32 exponentials / and the scale in the exponent"
  SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  for v in sum sum_scale; do
    PERFC_CUDA_SOURCE=bench/gpu/proto/flash_diet_$v.cu SCHEDFILE=$S bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  done
done
grep -h "PERFC_CUDA_SOURCE" "${OUT:-/tmp/attention}"/*.err | sort | uniq -c
