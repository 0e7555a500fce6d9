#!/usr/bin/env bash
# cp.async into wgmma's swizzled stages by 32-bit shared addresses against the
# generic pointers of the build before (carry carry/gpu/perfc.xz and BASE, default
# carry/gpu/perfc-c41.xz): ResNet-50's 3x3 layers at batch 1 and 32 with the
# default schedule (bench/gpu/conv.sh), each binary twice, then the new one's
# sanitizer cases and the GPU tests that take wgmma with cp.async (wg_gpu, pad_gpu).
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/sw && xz -dc "${BASE:-carry/gpu/perfc-c41.xz}" > /tmp/sw/base && xz -dc carry/gpu/perfc.xz > /tmp/sw/new &&
  chmod +x /tmp/sw/base /tmp/sw/new
rows="3x3-56-b1 3x3-28-b1 3x3-14-b1 3x3-7-b1 3x3-56-b32 3x3-28-b32 3x3-14-b32 3x3-7-b32"
for rep in 1 2; do
  for b in base new; do
    echo "== $b, round $rep"
    PERFC=/tmp/sw/$b OUT=/tmp/sw/$b MODE=run bash bench/gpu/conv.sh $rows 2>&1 | grep -E "^3x3|geomean" | cut -c1-110
  done
done
PERFC=/tmp/sw/new OUT=/tmp/sw/san MODE=sanitize bash bench/gpu/conv.sh 2>&1 | tail -6
for t in "wg_gpu $PWD/stdlib" "pad_gpu $PWD/bench/gpu/contractions"; do
  set -- $t
  bash tests/cuda/$1.sh /tmp/sw/new "$2" > /tmp/sw/$1.log 2>&1; echo "$1 rc=$? $(tail -1 /tmp/sw/$1.log)"
done
