#!/usr/bin/env bash
# Measures three candidate changes to the warpgroup flash kernels before any is written
# into perfc (mklazy.py: exact, thr, lpt) and a fourth, `mb2`: __launch_bounds__ with a
# minimum of two blocks per SM, for a kernel whose registers (above 128 at 256 threads)
# leave one block per SM where shared memory admits two.  Each is a hand edit of the
# CUDA perfc generates for its default schedule, validated and timed by perfc --run
# (PERFC_CUDA_SOURCE) beside SDPA, two rounds.
#   bash bench/gpu/proto/lazy.sh        (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/pf /tmp/proto && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
M=bench/gpu/proto/mklazy.py
gen() {  # gen NAME PDL ARGS... : the default kernel's CUDA and its variants
  local n=$1 f=$2; shift 2
  /tmp/pf/perfc "$f" "$@" -target sm_90a -emit cuda > /tmp/proto/$n.cu || exit 1
  for v in exact thr lpt lpt,thr; do python3 $M /tmp/proto/$n.cu /tmp/proto/$n-$v.cu $v; done
  for v in "" -thr -lpt,thr; do
    sed 's/__launch_bounds__(256)/__launch_bounds__(256, 2)/' /tmp/proto/$n$v.cu > /tmp/proto/$n$v-mb2.cu
  done
}
gen plain stdlib/attention.pdl -D B=4 -D H=16 -D S=2048 -D D=128
gen causal stdlib/attention_causal.pdl -D B=4 -D H=16 -D S=2048 -D D=128
for rep in 1 2; do
  echo "== round $rep"
  bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  for v in exact thr; do
    echo "-- $v"; PERFC_CUDA_SOURCE=/tmp/proto/plain-$v.cu bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  done
  bash bench/gpu/attention.sh c-d128 | grep -v '^NVIDIA\|^target'
  for v in mb2 thr thr-mb2 lpt,thr-mb2; do
    echo "-- causal $v"; PERFC_CUDA_SOURCE=/tmp/proto/causal-$v.cu bash bench/gpu/attention.sh c-d128 | grep -v '^NVIDIA\|^target'
  done
done
