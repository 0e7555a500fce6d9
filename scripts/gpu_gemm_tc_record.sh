#!/usr/bin/env bash
# One device call for the record of the tensor-core GEMMs of stdlib/gemm.pdl: names
# the GPU, validates tc-f16 and tc-bf16 at small shapes against the f64
# interpreter (1 and 5 K tiles), runs compute-sanitizer racecheck and memcheck on
# tc-f16 at 256x384x160, then the documented command at 4096^3 for both and
# for tiled (f32), each validated and timed beside cuBLAS in the same process.
# Logs go to $OUT.  Usage: scripts/gpu_gemm_tc_record.sh PERFC
set -u
. "$(dirname "$0")/gemm_variants.sh"   # gemm_args LABEL: perfc arguments of a GEMM variant
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=$1
O=${OUT:-/tmp/gpu_tc_final}
mkdir -p "$O"
rc=0
echo "== GPU"; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
for k in tc-f16 tc-bf16; do
  for kk in 32 160; do
    timeout 60 "$P" stdlib/gemm.pdl $(gemm_args $k) -D M=256 -D N=384 -D K=$kk -target sm_90 --run >"$O/small.log" 2>&1; s=$?
    echo "$k 256x384x$kk: status $s $(grep -E 'valid|error' "$O/small.log" | head -2 | tr '\n' ' ')"; [ $s = 0 ] || rc=1
  done
done
for t in racecheck memcheck; do
  timeout 120 compute-sanitizer --tool $t --error-exitcode 9 "$P" stdlib/gemm.pdl -k gemm -D T=f16 --schedule tc -D M=256 -D N=384 \
      -D K=160 -target sm_90 --run >"$O/san_$t.log" 2>&1; s=$?
  echo "compute-sanitizer $t tc-f16 256x384x160: status $s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san_$t.log" | head -1)"
  [ $s = 0 ] || rc=1
done
for k in tc-f16 tc-bf16 tiled; do
  echo "== perfc stdlib/gemm.pdl $(gemm_args $k) -target sm_90 -D M=4096 -D N=4096 -D K=4096 --run --compare cublas"
  timeout 120 "$P" stdlib/gemm.pdl $(gemm_args $k) -target sm_90 -D M=4096 -D N=4096 -D K=4096 --run --compare cublas 2>&1 | tee "$O/$k.log"
  [ ${PIPESTATUS[0]} = 0 ] || rc=1
done
exit $rc
