#!/usr/bin/env bash
# Row-wise kernels written fresh (bench/gpu/kernels/user_rows.pdl: RMSNorm, softmax,
# layernorm over [B, T, D], softmax under a causal mask) with no schedule on a GPU (label gpu): the default is the
# template of a row a block (tune/rules_rows.c), validated on fresh inputs by --run at
# rows that are and are not a multiple of the block's threads, as sm_80 and sm_90a
# code, and run under compute-sanitizer memcheck and racecheck when the tool is there.
# Exit 77 without a GPU.  Usage: rows_gpu.sh PERFC REPO_DIR
set -u
perfc=$1; dir=$2
. "$(dirname "$0")/gpu_check.sh"   # exits 77 without a GPU; sets tmp and fail
f="$dir/bench/gpu/kernels/user_rows.pdl"
rows=("-k rmsnorm -D N=300 -D D=4096" "-k rmsnorm -D N=77 -D D=1000" "-k softmax_rows -D N=333 -D C=1000"
      "-k softmax_rows -D N=64 -D C=8192" "-k layernorm3 -D B=2 -D T=100 -D D=768" "-k causal_softmax -D N=1000")
for t in sm_80 sm_90a; do
  for r in "${rows[@]}"; do
    # shellcheck disable=SC2086
    valid "user_rows.pdl $r $t" "$f" $r -target $t
  done
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$cs" ]; then
  for tool in memcheck racecheck; do
    for r in "-k rmsnorm -D N=5 -D D=1000" "-k softmax_rows -D N=3 -D C=777" "-k layernorm3 -D B=1 -D T=3 -D D=512" \
             "-k causal_softmax -D N=300"; do
      # shellcheck disable=SC2086
      clean "$cs" $tool "user_rows.pdl $r" "$f" $r -target sm_90a
    done
  done
fi
exit $fail
