#!/usr/bin/env bash
# The GEMM-family suite in two device calls (each under the 10-minute limit):
#   bash bench/gpu/round_suite.sh tune    every row tuned (BUDGET 12, 35 s a row)
#   bash bench/gpu/round_suite.sh rest    every row untuned (MODE=run), the odd and
#                                         thin rows as sm_80 code tuned, then check
#   bash bench/gpu/round_suite.sh check   the padded-tile test, memcheck of
#                                         realigned and result-staged products
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
case "${1:-tune}" in
tune)
  BUDGET=12 TLIMIT=35 bash bench/gpu/contractions.sh ;;
rest)
  MODE=run bash bench/gpu/contractions.sh
  TARGET=sm_80 BUDGET=8 TLIMIT=25 bash bench/gpu/contractions.sh odd odd-lin thin16
  bash "$0" check ;;
check)
  xz -dc carry/gpu/perfc.xz > /tmp/perfc-rs && chmod +x /tmp/perfc-rs
  bash tests/cuda/pad_gpu.sh /tmp/perfc-rs bench/gpu/contractions 2>&1 | tail -3
  for t in sm_90a sm_80; do
    for f in "mm.pdl -D U=bf16 -D M=300 -D N=301 -D K=251" "linear_gelu.pdl -D M=257 -D N=259 -D K=255" \
             "linear.pdl -D M=100 -D N=200 -D K=72" "bmm.pdl -D NB=3 -D M=100 -D N=136 -D K=40"; do
      echo "memcheck $t $f: $(compute-sanitizer --tool memcheck /tmp/perfc-rs bench/gpu/contractions/$f -target $t --run --quiet 2>&1 | tail -1)"
    done
  done ;;
esac
