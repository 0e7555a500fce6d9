#!/usr/bin/env bash
# One call's worth of GPU checking on a lent GPU machine: names the GPU, runs the
# CUDA compile-only test (NVRTC + ptxas), the GPU validation test, compute-sanitizer
# memcheck and racecheck on stdlib-shaped kernels (the padded convolution and the
# shared-memory tiled GEMM), then the benchmark against cuBLAS.  Logs go to $OUT
# when set (the device tool brings them back), else to /tmp/gpu_check.
#
# Usage: scripts/gpu_check.sh DIR   (DIR holds test_cuda_compile and test_cuda_gpu)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${1:-build-static/tests/cuda}
O=${OUT:-/tmp/gpu_check}
mkdir -p "$O"
rc=0
step() { echo "== $*"; }
step "GPU"; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv 2>&1
step "compile-only"; mkdir -p /tmp/gpu_check_cu; "$B/test_cuda_compile" /usr/local/cuda/bin/ptxas /tmp/gpu_check_cu >"$O/compile.log" 2>&1 || rc=1; tail -3 "$O/compile.log"
step "validation"; "$B/test_cuda_gpu" 2>&1 | tee "$O/gpu.log"; [ "${PIPESTATUS[0]}" = 0 ] || rc=1
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in "memcheck conv_odd" "memcheck tiled_odd" "memcheck softmax_odd" "racecheck tiled_odd" "synccheck tiled_odd"; do
  set -- $t
  step "compute-sanitizer $1 on $2"
  "$CS" --tool "$1" --error-exitcode 9 "$B/test_cuda_gpu" --only "$2" >"$O/san_$1_$2.log" 2>&1; s=$?
  tail -2 "$O/san_$1_$2.log"; [ $s = 0 ] || { rc=1; echo "sanitizer status $s"; }
done
step "benchmark"; "$B/test_cuda_gpu" --bench 2>&1 | tee "$O/bench.log"; [ "${PIPESTATUS[0]}" = 0 ] || rc=1
exit $rc
