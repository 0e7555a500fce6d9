#!/usr/bin/env bash
# One device call for the one-warpgroup wgmma tiles and the pipeline
# depths capped by the reduction (tune/rules_tc.c): the thin, batched and K-large rows of the
# GEMM-family suite tuned and untuned, the square product as the run's control,
# then the GPU tests of padded tiles and split-K and memcheck on the new shapes.
#   bash bench/gpu/round_thin.sh [tune|run|check|all]   (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ROWS=${ROWS:-thin16 thin128 bmm klarge mm-4096}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
case "${1:-all}" in
tune) BUDGET=${BUDGET:-12} TLIMIT=${TLIMIT:-27} bash bench/gpu/contractions.sh $ROWS ;;
run) MODE=run bash bench/gpu/contractions.sh $ROWS ;;
check)
  xz -dc carry/gpu/perfc.xz > /tmp/perfc-rt && chmod +x /tmp/perfc-rt
  for t in pad_gpu.sh:bench/gpu/contractions splitk_gpu.sh:. wg_gpu.sh:stdlib; do
    echo "--- ${t%%:*}: $(bash tests/cuda/${t%%:*} /tmp/perfc-rt ${t#*:} 2>&1 | tail -2 | tr '\n' ' ') exit ${PIPESTATUS[0]}"
  done
  for f in "mm.pdl -D U=bf16 -D M=16 -D N=4096 -D K=4096" "mm.pdl -D U=bf16 -D M=128 -D N=4096 -D K=4096" \
           "mm.pdl -D U=bf16 -D M=16 -D N=200 -D K=300" "mm.pdl -D U=bf16 -D M=100 -D N=300 -D K=4096" \
           "mm.pdl -D T=f16 -D U=f16 -D M=40 -D N=1000 -D K=520" "bmm.pdl" "bmm.pdl -D NB=3 -D M=100 -D N=136 -D K=40" \
           "linear.pdl -D M=100 -D N=200 -D K=72"; do
    echo "memcheck $f: $(compute-sanitizer --tool memcheck /tmp/perfc-rt bench/gpu/contractions/$f -target sm_90a --run --quiet 2>&1 | tail -1)"
  done ;;
all) bash "$0" check; bash "$0" tune; bash "$0" run ;;
esac
