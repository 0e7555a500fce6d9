#!/usr/bin/env bash
# One device call: the odd rows of the GEMM-family suite (misaligned rows read from
# a realigned copy) with the aligned product alone beside them (4096 x 4104 x 1024,
# the odd row's core: the difference is the copies), untuned; the padded-tile test
# on the GPU and memcheck of one realigned product.
set -u
cd "$(dirname "$0")/../.."
xz -dc carry/gpu/perfc.xz > /tmp/perfc-ot && chmod +x /tmp/perfc-ot
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
MODE=run bash bench/gpu/contractions.sh odd odd-lin odd-core
bash tests/cuda/pad_gpu.sh /tmp/perfc-ot bench/gpu/contractions 2>&1 | tail -6
for t in sm_90a sm_80; do
  compute-sanitizer --tool memcheck /tmp/perfc-ot bench/gpu/contractions/linear.pdl -D M=257 -D N=260 -D K=255 -target $t --run --quiet 2>&1 | tail -1
done
