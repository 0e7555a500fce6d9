#!/usr/bin/env bash
# One device call for the tensor-core GEMMs (stdlib/gemm.pdl: gemm's variant tc with
# T = f16 and bf16, mma.sync.m16n8k16): names the GPU, checks the generated code
# without running it (PTX holds mma.sync and ldmatrix, ptxas's resource report),
# validates both at a small shape, times them at 4096^3 against cuBLAS in the same
# run (`--run --compare cublas --json`, validated first; f32 `tiled` again for
# comparison), and runs compute-sanitizer racecheck and memcheck on the f16 kernel at
# a small shape.  Logs go to $OUT when set (the device tool brings them back), else
# /tmp/gpu_tc.  Usage: scripts/gpu_gemm_tc.sh [PERFC]   (default build-static/perfc)
set -u
. "$(dirname "$0")/gemm_variants.sh"   # gemm_args LABEL: perfc arguments of a GEMM variant
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=${1:-build-static/perfc}
O=${OUT:-/tmp/gpu_tc}
mkdir -p "$O"
rc=0
step() { echo "== $*"; }
small=(-D M=256 -D N=384 -D K=96)
step GPU; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for k in tc-f16 tc-bf16; do
  step "$k: PTX and ptxas (no run)"
  "$P" stdlib/gemm.pdl $(gemm_args $k) -target sm_90 -emit ptx -o "$O/$k.ptx" || rc=1
  echo "mma.sync: $(grep -c 'mma.sync.aligned.m16n8k16' "$O/$k.ptx")  ldmatrix: $(grep -c ldmatrix "$O/$k.ptx")"
  [ -x "$PTXAS" ] && "$PTXAS" -arch=sm_90 -v "$O/$k.ptx" -o /dev/null 2>&1 | grep -E 'registers|spill'
  step "$k small shape, validated"
  timeout 60 "$P" stdlib/gemm.pdl $(gemm_args $k) "${small[@]}" -target sm_90 --run 2>&1 | tail -6; [ ${PIPESTATUS[0]} = 0 ] || rc=1
done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in racecheck memcheck; do
  step "compute-sanitizer $t on tc-f16 256x384x96"
  timeout 90 "$CS" --tool $t --error-exitcode 9 "$P" stdlib/gemm.pdl -k gemm -D T=f16 --schedule tc -D M=4096 -D N=4096 -D K=4096 "${small[@]}" \
      -target sm_90 --run >"$O/san_$t.log" 2>&1; s=$?
  tail -3 "$O/san_$t.log"; echo "status $s"; [ $s = 0 ] || rc=1
done
for k in tc-f16 tc-bf16 tiled; do
  step "$k 4096^3 vs cuBLAS"
  timeout 100 "$P" stdlib/gemm.pdl $(gemm_args $k) -target sm_90 --run --compare cublas --json >"$O/$k.json" 2>"$O/$k.err"; s=$?
  echo "status $s"; cat "$O/$k.json"; tail -5 "$O/$k.err"; [ $s = 0 ] || rc=1
done
exit $rc
