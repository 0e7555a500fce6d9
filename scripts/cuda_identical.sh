#!/usr/bin/env bash
# Compares the CUDA C two perfc binaries emit, byte for byte: every stdlib kernel
# with its default GPU schedule, unscheduled, and each named GPU variant (gemm in
# each dtype its variants take), at two sizes, on sm_80 and sm_90a; then every
# `-emit cuda`-able RUN line of the GPU goldens in tests/check/ on the same two
# targets.  A row where both binaries refuse the kernel (a wgmma variant on sm_80)
# counts as identical when their messages are.  For a change that must not alter
# the generated code (a decision moved from the back end into a pass).
#   scripts/cuda_identical.sh PERFC_A PERFC_B      (from the repository root)
# Prints one line per difference and a count; exit status 1 when any row differs.
set -u
A=$1 B=$2
O=$(mktemp -d)
trap 'rm -rf "$O"' EXIT
rows=0 same=0 diffs=0

one() {  # one ARGS...: emit with both binaries and compare
  rows=$((rows + 1))
  "$A" "$@" -emit cuda >"$O/a" 2>&1; local ra=$?
  "$B" "$@" -emit cuda >"$O/b" 2>&1; local rb=$?
  if [ $ra = $rb ] && cmp -s "$O/a" "$O/b"; then
    same=$((same + 1))
  else
    diffs=$((diffs + 1))
    echo "DIFF (exit $ra/$rb): $*"
    diff "$O/a" "$O/b" | head -10
  fi
}

for t in sm_80 sm_90a; do
  for sz in small large; do
    if [ $sz = small ]; then g="-D M=96 -D N=80 -D K=48"; else g="-D M=1024 -D N=1024 -D K=512"; fi
    # shellcheck disable=SC2086
    {
      for T in f32 f16 bf16; do
        one stdlib/gemm.pdl -k gemm -target $t -D T=$T $g
        one stdlib/gemm.pdl -k gemm -target $t -D T=$T $g --no-schedule
      done
      for v in tiled tiled32; do one stdlib/gemm.pdl -k gemm -target $t -D T=f32 $g --schedule $v; done
      for T in f16 bf16; do  # the tensor-core tiles need multiples of 128: 256 for the small size
        for v in tc wg; do
          one stdlib/gemm.pdl -k gemm -target $t -D T=$T -D M=256 -D N=256 -D K=256 --schedule $v
          [ $sz = small ] || one stdlib/gemm.pdl -k gemm -target $t -D T=$T $g --schedule $v
        done
      done
      for k in gemm_nt gemm_tn gemm_bias_relu; do
        one stdlib/$k.pdl -k $k -target $t $g
      done
      one stdlib/batched_gemm.pdl -target $t -D B=4 $g
      one stdlib/batched_gemm.pdl -target $t -D B=4 $g --schedule tiled
    }
    if [ $sz = small ]; then r="-D R=37 -D C=300"; c=""; a="-D B=2 -D H=2 -D S=40 -D D=16"
    else r="-D R=1024 -D C=4096"; c="-D N=8 -D C=128 -D H=28 -D W=28 -D K=128 -D U=1"; a="-D B=2 -D H=8 -D S=512 -D D=64"; fi
    # shellcheck disable=SC2086
    {
      for k in softmax layernorm; do
        one stdlib/$k.pdl -target $t $r
        one stdlib/$k.pdl -target $t $r --no-schedule
      done
      one stdlib/conv2d.pdl -target $t $c
      one stdlib/conv2d.pdl -target $t $c --schedule tiled
      one stdlib/depthwise_conv2d.pdl -target $t
      one stdlib/attention.pdl -target $t $a
      one stdlib/attention_causal.pdl -target $t $a
    }
  done
  # the GPU goldens' own schedules (the RUN line's arguments, its target replaced)
  for f in tests/check/gpu_*.pdl tests/check/emit_cuda*.pdl; do
    line=$(sed -n 's/^# RUN: //p' "$f" | head -1)
    [ -n "$line" ] || continue
    line=$(echo "$line" | sed -e 's/-target [a-z0-9_]*//' -e 's/-emit [a-z]*//' -e 's/-dump-after=[a-z-]*//')
    eval "set -- $line"
    one "$f" -target $t "$@"
  done
done
echo "$rows rows: $same identical, $diffs different"
[ $diffs = 0 ]
