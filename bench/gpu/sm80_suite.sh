#!/usr/bin/env bash
# The GEMM-family suite of issue 19 as sm_80 code (mma.sync) on the GPU at hand, then
# attention as sm_80 code, in one device call (carry carry/gpu/perfc.xz):
#   bench/gpu/contractions.sh with TARGET=sm_80 over the twelve suite rows (BUDGET,
#   TLIMIT as there), then bench/gpu/attention.sh d64 d128 c-d128 gqa with TARGET=sm_80.
#   bash bench/gpu/sm80_suite.sh        (BUDGET=12 TLIMIT=40 by default)
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/sm80}; mkdir -p "$O"
OUT=$O/c TARGET=sm_80 BUDGET=${BUDGET:-12} TLIMIT=${TLIMIT:-40} bash bench/gpu/contractions.sh \
    mm-4096 mm-8192 mm-bf16out mm-f16out odd thin16 thin128 klarge bmm linear tn linear-gelu
[ -n "${NO_ATTN:-}" ] || OUT=$O/a TARGET=sm_80 bash bench/gpu/attention.sh d64 d128 c-d128 gqa
