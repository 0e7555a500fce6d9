#!/usr/bin/env bash
# One device call for the attention table of docs/benchmarks.md: every row of
# bench/gpu/attention.sh as sm_90a code, the flash rows again as sm_80 code (the
# issue's second bar), and the tuner on stdlib attention at the default budget
# (its wall time and its pick).  Carry carry/gpu/perfc.xz.
#   bash bench/gpu/attention_all.sh [quick]   (quick: the sm_90a rows only)
set -u
cd "$(dirname "$0")/../.."
bash bench/gpu/attention.sh
[ "${1:-}" = quick ] && exit 0
echo "== sm_80 code on the same GPU"
TARGET=sm_80 bash bench/gpu/attention.sh d128 d64 c-d128 user-f16 gqa | grep -v '^NVIDIA'
echo "== --autotune, stdlib attention 4x16x2048x128, default budget"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s.%N)
timeout 300 /tmp/pf/perfc stdlib/attention.pdl --no-schedule -D B=4 -D H=16 -D S=2048 -D D=128 -target sm_90a \
    --autotune --db /tmp/attn_tune.db 2>&1 | grep -E '^(time|valid|tuned|best|schedule|  param)' | head -12
echo "tune wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
