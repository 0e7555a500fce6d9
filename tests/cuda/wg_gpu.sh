#!/usr/bin/env bash
# The Hopper warpgroup GEMM schedule (stdlib/gemm.pdl, gemm's variant `wg`, T = f16 and bf16)
# run and validated on a GPU through `perfc --run`: at the schedule's smallest
# shape, at one with fewer k steps than pipeline stages, and at one with many.
# Skipped (77) where there is no GPU, or no sm_90 one.  Usage: wg_gpu.sh PERFC STDLIB_DIR
set -u
perfc=$1; dir=$2
g="$dir/gemm.pdl"
fail=0
for t in f16 bf16; do
  k=wg-$t
  for sz in "128 256 64" "256 512 192" "384 768 1024"; do
    set -- $sz
    out=$("$perfc" "$g" -k gemm -D T=$t --schedule wg -target sm_90a -D M=$1 -D N=$2 -D K=$3 --run --seed 11 2>&1); s=$?
    if [ $s = 3 ] && echo "$out" | grep -qE 'needs an NVIDIA GPU|kernel image|not compatible'; then
      echo "no sm_90 GPU here: skipped ($(echo "$out" | tail -1))"; exit 77
    fi
    [ $s = 0 ] || { echo "FAIL: $k $sz: exit $s"; echo "$out" | tail -5; fail=1; }
  done
done
[ $fail = 0 ] && echo "wgmma schedules validated on the GPU"
exit $fail
