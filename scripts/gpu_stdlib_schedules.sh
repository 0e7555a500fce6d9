#!/usr/bin/env bash
# One device call for the scheduled GPU kernels: names the GPU, validates and times
# the stdlib kernels that have GPU schedules against cuBLAS through the perfc command
# (`--run --compare cublas --json`, validated in the same run), runs the GPU
# validation test and its benchmark (softmax beside the device copy bandwidth), and
# runs compute-sanitizer memcheck and racecheck on the scheduled GEMM at a small shape.
# Logs go to $OUT when set (the device tool brings them back), else /tmp/gpu_sched.
# Usage: scripts/gpu_stdlib_schedules.sh [BUILD_DIR]   (default build-static)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${1:-build-static}
P=$B/perfc
O=${OUT:-/tmp/gpu_sched}
mkdir -p "$O"
rc=0
step() { echo "== $*"; }
step GPU; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
step "gemm --schedule tiled, f32 4096^3 vs cuBLAS SGEMM"
timeout 120 "$P" stdlib/gemm.pdl -k gemm --schedule tiled -D M=4096 -D N=4096 -D K=4096 -target sm_90 --run --compare cublas --json >"$O/gemm-tiled.json" 2>"$O/gemm-tiled.err"; s=$?
echo "status $s"; cat "$O/gemm-tiled.json"; tail -5 "$O/gemm-tiled.err"; [ $s = 0 ] || rc=1
step "gemm --schedule tiled, odd-free small shape, validated"
timeout 60 "$P" stdlib/gemm.pdl -k gemm --schedule tiled -D M=256 -D N=384 -D K=48 -target sm_90 --run 2>&1 | tail -8
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in memcheck racecheck; do
  step "compute-sanitizer $t on gemm --schedule tiled 256x256x64"
  timeout 120 "$CS" --tool $t --error-exitcode 9 "$P" stdlib/gemm.pdl -k gemm --schedule tiled -D M=256 -D N=256 -D K=64 \
      -target sm_90 --run >"$O/san_$t.log" 2>&1; s=$?
  tail -3 "$O/san_$t.log"; echo "status $s"; [ $s = 0 ] || rc=1
done
step "GPU tests and benchmark (softmax vs copy bandwidth)"
timeout 200 "$B/tests/cuda/test_cuda_gpu" >"$O/gpu.log" 2>&1 || rc=1; tail -4 "$O/gpu.log"
timeout 200 "$B/tests/cuda/test_cuda_gpu" --bench 2>&1 | tee "$O/bench.log"
exit $rc
