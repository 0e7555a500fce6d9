#!/usr/bin/env bash
# One device call: the batched product (32 x 512 x 512 x 128, bf16 out), whose
# short reduction makes writing the result a large share of each tile, with the
# result written back through shared memory in 16-byte rows: tuned and untuned on
# sm_90a, and memcheck of the staged schedule at a small batch.
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=/tmp/bmm-t BUDGET=12 TLIMIT=35 bash bench/gpu/contractions.sh bmm
grep -A6 'rank  median' /tmp/bmm-t/bmm-sm_90a.err | cut -c1-110
OUT=/tmp/bmm-r MODE=run bash bench/gpu/contractions.sh bmm
xz -dc carry/gpu/perfc.xz > /tmp/pb && chmod +x /tmp/pb
for t in sm_90a sm_80; do
  echo "memcheck $t: $(compute-sanitizer --tool memcheck /tmp/pb bench/gpu/contractions/bmm.pdl -D NB=3 -target $t --run --quiet 2>&1 | tail -1)"
done
