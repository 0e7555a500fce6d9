#!/usr/bin/env bash
# Contractions at sizes no tensor-core tile divides, run and validated on a GPU
# through `perfc --run` with no schedule: the default schedule pads the tiles
# (tile(.., tail=pad), split(k, .., tail=pad)), fills the staging copies with zeros
# past the edges and drops the stores there.  Every layout and result dtype the
# templates read, row lengths that allow 16-byte, 8-byte and only one-element
# copies (and, from 2^24 multiply-adds, operands read from realigned copies), a
# batch (two batch loops, collapsed: scores.pdl) and a fused epilogue; wgmma code (sm_90a) where the GPU has it,
# and mma.sync code (sm_80) on any GPU from sm_80 on.  Skipped (77) without a GPU.
# Usage: pad_gpu.sh PERFC KERNEL_DIR (bench/gpu/contractions)
set -u
perfc=$1; dir=$2
fail=0; ran=0
run() { # target file args...
  local t=$1 f=$2; shift 2
  out=$("$perfc" "$dir/$f" -target "$t" "$@" --run --seed 5 --quiet 2>&1); s=$?
  if [ $s = 3 ] && echo "$out" | grep -qE 'needs an NVIDIA GPU|no CUDA|kernel image|not compatible|no GPU|cannot run on this GPU'; then
    return 77
  fi
  ran=1
  if [ $s != 0 ]; then
    echo "FAIL: $t $f $*: exit $s"; echo "$out" | tail -5; fail=1
  elif ! "$perfc" "$dir/$f" -target "$t" "$@" -emit report --verbose 2>&1 | grep -q 'tail=pad'; then
    echo "FAIL: $t $f $*: the default schedule did not pad"; fail=1
  fi
  return 0
}
for t in sm_80 sm_90a; do
  run $t mm.pdl -D U=bf16 -D M=200 -D N=300 -D K=100 || { [ $t = sm_80 ] && { echo "no GPU: skipped"; exit 77; }; echo "no sm_90 GPU: sm_90a cases skipped"; break; }
  run $t mm.pdl -D U=f32 -D M=129 -D N=65 -D K=97
  run $t mm.pdl -D T=f16 -D U=f16 -D M=255 -D N=257 -D K=1000
  run $t linear.pdl -D M=100 -D N=200 -D K=72
  run $t mm_tn.pdl -D M=130 -D N=96 -D K=50
  run $t bmm.pdl -D NB=3 -D M=100 -D N=70 -D K=40
  run $t linear_gelu.pdl -D M=129 -D N=130 -D K=96
  run $t mm.pdl -D U=bf16 -D M=300 -D N=301 -D K=251
  run $t linear.pdl -D M=257 -D N=260 -D K=255
  run $t bmm.pdl -D NB=8 -D M=200 -D N=130 -D K=101
  run $t linear_gelu.pdl -D M=1000 -D N=1001 -D K=999
  run $t mm.pdl -D T=f16 -D U=f16 -D M=700 -D N=333 -D K=264
  # two batch loops collapsed into one (attention's scores), a length no tile divides
  run $t scores.pdl -D B=2 -D H=3 -D T=200 -D E=64
  run $t scores.pdl -D B=3 -D H=2 -D T=333 -D E=40
  # two products in one kernel, a template each (the SiLU product fused into the second)
  run $t swiglu.pdl -D M=200 -D N=300 -D K=136
done
[ $ran = 1 ] || { echo "no GPU: skipped"; exit 77; }
[ $fail = 0 ] && echo "padded tensor-core tiles validated on the GPU"
exit $fail
