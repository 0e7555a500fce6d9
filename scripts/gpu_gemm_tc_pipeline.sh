#!/usr/bin/env bash
# One device call for the cp.async software pipeline (`pipeline(ko, S)` in the
# tc-f16 / tc-bf16 schedules of stdlib/gemm.pdl): names the GPU, checks
# the generated code without running it (PTX holds cp.async, its waits and
# mma.sync; ptxas's resource report), validates both kernels at small shapes that
# give fewer, as many and more K tiles than stages, runs compute-sanitizer
# racecheck and memcheck on the pipelined f16 kernel at a small shape, then times
# both at 4096^3 against cuBLAS in the same process (`--run --compare cublas
# --json`, validated first), with two variants of the f16 schedule (4 stages;
# the 16-deep k step unrolled) written to $O so the best choice is measured rather
# than guessed, and tiled again for comparison.  Logs go to $OUT when set
# (the device tool brings them back), else /tmp/gpu_pipe.
# Usage: scripts/gpu_gemm_tc_pipeline.sh [PERFC]   (default build-pipe-static/perfc)
set -u
. "$(dirname "$0")/gemm_variants.sh"   # gemm_args LABEL: perfc arguments of a GEMM variant
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=${1:-build-pipe-static/perfc}
O=${OUT:-/tmp/gpu_pipe}
mkdir -p "$O"
rc=0
step() { echo "== $*"; }
step GPU; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for k in tc-f16 tc-bf16; do
  step "$k: PTX and ptxas (no run)"
  "$P" stdlib/gemm.pdl $(gemm_args $k) -target sm_90 -emit ptx -o "/tmp/$k.ptx" || rc=1
  echo "cp.async: $(grep -c 'cp.async.cg.shared.global' "/tmp/$k.ptx")  wait_group: $(grep -c 'cp.async.wait_group' "/tmp/$k.ptx")  mma.sync: $(grep -c 'mma.sync.aligned.m16n8k16' "/tmp/$k.ptx")"
  [ -x "$PTXAS" ] && "$PTXAS" -arch=sm_90 -v "/tmp/$k.ptx" -o /dev/null 2>&1 | grep -E 'registers|spill'
  for kk in 32 96 160; do
    step "$k 256x384x$kk validated"
    timeout 60 "$P" stdlib/gemm.pdl $(gemm_args $k) -D M=256 -D N=384 -D K=$kk -target sm_90 --run 2>&1 | tail -3
    [ ${PIPESTATUS[0]} = 0 ] || rc=1
  done
done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in racecheck memcheck; do
  step "compute-sanitizer $t on tc-f16 256x384x160 (5 K tiles, 3 stages)"
  timeout 90 "$CS" --tool $t --error-exitcode 9 "$P" stdlib/gemm.pdl -k gemm -D T=f16 --schedule tc -D M=256 -D N=384 -D K=160 \
      -target sm_90 --run >"$O/san_$t.log" 2>&1; s=$?
  tail -3 "$O/san_$t.log"; echo "status $s"; [ $s = 0 ] || rc=1
done
# Variants of the f16 schedule, as files beside the stdlib one.
sed 's/pipeline(ko, 3)/pipeline(ko, 4)/' stdlib/gemm.pdl >/tmp/gemm_s4.pdl
sed 's/^  pipeline(ko, 3)/  unroll(ks)\n  pipeline(ko, 3)/' stdlib/gemm.pdl >/tmp/gemm_uk.pdl
time_one() {  # label file variant-label
  step "$1 4096^3 vs cuBLAS"
  timeout 100 "$P" "$2" $(gemm_args $3) -target sm_90 --run --compare cublas --json >"$O/$1.json" 2>"/tmp/$1.err"; s=$?
  echo "status $s"; cat "$O/$1.json"; tail -4 "/tmp/$1.err"; [ $s = 0 ] || rc=1
}
time_one tc-f16 stdlib/gemm.pdl tc-f16
time_one tc-bf16 stdlib/gemm.pdl tc-bf16
time_one f16_4stages /tmp/gemm_s4.pdl tc-f16
time_one f16_unroll_ks /tmp/gemm_uk.pdl tc-f16
time_one tiled stdlib/gemm.pdl tiled
exit $rc
