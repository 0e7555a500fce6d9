#!/usr/bin/env bash
# device call: wgmma schedules validated + timed (3 alternating runs), f32 K32 script,
# GPU autotuning at 4096^3 with default budget (f16/bf16 on sm_90a, f32 on sm_90)
. "$(dirname "$0")/gemm_variants.sh"   # gemm_args LABEL: perfc arguments of a GEMM variant
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf; xz -dc ${PERFC_XZ:-carry/m3/perfc.xz} > /tmp/pf/perfc; chmod +x /tmp/pf/perfc; P=/tmp/pf/perfc
O=${OUT:-/tmp/m3}; mkdir -p $O
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
if [ "${1:-meas}" = meas ]; then
echo "== wg_gpu.sh"; bash tests/cuda/wg_gpu.sh $P stdlib 2>&1 | tail -3
j() { grep -oE '"(rel_error|vs_baseline|median|gflops)":[^,}]*' | tr '\n' ' '; }
echo "== 4096^3 vs cuBLAS, alternating"
for r in 1 2 3; do
  for spec in "wg-f16 sm_90a" "wg-bf16 sm_90a" "tc-f16 sm_90" "tc-bf16 sm_90"; do
    set -- $spec
    o=$(timeout 120 $P stdlib/gemm.pdl $(gemm_args $1) -target $2 --run --compare cublas --json 2>&1); s=$?
    echo "$r $1: exit $s $(echo "$o" | j)"; echo "$o" > $O/$1.$r.json
  done
done
echo "== gpu_gemm_f32_kstep.sh"; OUT=$O/k32 timeout 300 bash scripts/gpu_gemm_f32_kstep.sh $P 2>&1 | tail -25
fi
if [ "${1:-meas}" = tune ]; then
echo "== autotune (default budget, fresh database)"
for spec in "f32 sm_90" "f16 sm_90a" "bf16 sm_90a"; do   # T of stdlib gemm, target
  set -- $spec
  t0=$(date +%s%N)
  timeout 330 $P stdlib/gemm.pdl -D T=$1 -target $2 -D M=4096 -D N=4096 -D K=4096 --no-schedule --autotune --db $O/tune.db --compare cublas > $O/tune_$1.log 2>&1; s=$?
  t1=$(date +%s%N)
  echo "tune $1 $2: exit $s, $(( (t1 - t0) / 1000000 )) ms"; tail -14 $O/tune_$1.log
  t0=$(date +%s%N)
  timeout 60 $P stdlib/gemm.pdl -D T=$1 -target $2 -D M=4096 -D N=4096 -D K=4096 --no-schedule --autotune --db $O/tune.db --compare cublas > $O/warm_$1.log 2>&1; s=$?
  t1=$(date +%s%N); echo "warm $1: exit $s, $(( (t1 - t0) / 1000000 )) ms"; grep -iE "vs|ratio|cuBLAS" $O/warm_$1.log | head -3
done
fi
