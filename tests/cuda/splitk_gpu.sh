#!/usr/bin/env bash
# Split-K run and validated on a GPU through `perfc --run` with no schedule (the
# default takes split-K where the large tiles leave SMs idle): the kernels of
# bench/gpu/kernels/user_klarge.pdl (f32 out; nn.Linear + bias + ReLU, bf16 out) and
# a ragged size (padded tiles), as wgmma code (sm_90a) where the GPU has it and as
# mma.sync code (sm_80) on any GPU from sm_80 on.  Skipped (77) without a GPU.
# Usage: splitk_gpu.sh PERFC ROOT
set -u
perfc=$1; u=$2/bench/gpu/kernels/user_klarge.pdl
fail=0; ran=0
run() { # target kernel args...
  local t=$1 k=$2; shift 2
  out=$("$perfc" "$u" -k "$k" -target "$t" "$@" --run --seed 5 --quiet 2>&1); s=$?
  if [ $s = 3 ] && echo "$out" | grep -qE 'needs an NVIDIA GPU|no CUDA|kernel image|not compatible|no GPU|cannot run on this GPU'; then
    return 77
  fi
  ran=1
  if [ $s != 0 ]; then
    echo "FAIL: $t $k $*: exit $s"; echo "$out" | tail -5; fail=1
  elif ! "$perfc" "$u" -k "$k" -target "$t" "$@" -emit report --verbose 2>&1 | grep -q 'applies (rules: GPU.*split-K'; then
    echo "FAIL: $t $k $*: the default is not split-K"; fail=1
  fi
  return 0
}
for t in sm_80 sm_90a; do
  run $t kl -D M=1024 -D N=1024 -D K=16384 || { [ $t = sm_80 ] && { echo "no GPU: skipped"; exit 77; }; echo "no sm_90 GPU: sm_90a cases skipped"; break; }
  run $t lin -D M=1024 -D N=1024 -D K=16384
  run $t kl -D M=200 -D N=250 -D K=4096
  run $t lin -D M=384 -D N=520 -D K=8192
done
[ $ran = 1 ] || { echo "no GPU: skipped"; exit 77; }
[ $fail = 0 ] && echo "split-K validated on the GPU"
exit $fail
