#!/usr/bin/env bash
# Attention decoding on a GPU (label gpu): the default schedule of the decoding
# kernels users write (bench/gpu/kernels/user_attention.pdl `cross` with one and four
# query rows, at a cache length no tile divides, and `gqa_dec`) as sm_80 and sm_90a
# code, validated on fresh inputs by --run, and under compute-sanitizer memcheck and
# racecheck at a small size when the tool is there.  Exit 77 without a GPU.
# Usage: decode_gpu.sh PERFC ROOT
set -u
perfc=$1; root=$2
. "$(dirname "$0")/gpu_check.sh"   # exits 77 without a GPU; sets tmp and fail
u="$root/bench/gpu/kernels/user_attention.pdl"
for t in sm_80 sm_90a; do
  for sz in "-k cross -D B=2 -D H=3 -D SQ=1 -D SK=3000 -D D=128" "-k cross -D B=2 -D H=2 -D SQ=4 -D SK=1000 -D D=64" \
            "-k gqa_dec -D B=2 -D H=8 -D KVH=2 -D SQ=1 -D SK=2048 -D D=128"; do
    # shellcheck disable=SC2086
    valid "$t $sz" "$u" $sz -target $t
  done
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$cs" ]; then
  for tool in memcheck racecheck; do
    clean "$cs" $tool "cross" "$u" -k cross -D B=1 -D H=2 -D SQ=2 -D SK=700 -D D=64 -target sm_90a
  done
fi
exit $fail
