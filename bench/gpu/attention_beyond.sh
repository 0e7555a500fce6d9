#!/usr/bin/env bash
# Attention beyond tensor cores' exact fit, on the GPU, beside torch's SDPA in the same
# run (bench/gpu/attention.sh rows): f32 (one query row a thread), head sizes 40 and 72
# (the score depth padded), three batch loops (collapsed onto the grid), a bias on the
# scores (a table staged in shared memory; ALiBi's distance term), f32 decoding; two
# controls from the flash table; the same kernels as sm_80 code; and, when a second
# perfc is carried as carry/gpu/perfc-base.xz, the rows it runs unfused under a time
# limit ("before").  Then tests/cuda/flash_gpu.sh (validation, memcheck, racecheck).
#   bash bench/gpu/attention_beyond.sh time|check   (carry carry/gpu/perfc.xz [perfc-base.xz])
# `time` runs the rows (about 5 minutes with the base), `check` the GPU test (about 7):
# each fits one device call.
set -u
mode=${1:-time}
export OUT=${OUT:-/tmp/attention_beyond}
if [ "$mode" = time ]; then
rows="d128 gqa f32-d64 f32-d128 f32-c-odd dec-f32 h40 h40-c-odd h72-bthd gqa-3b bias alibi"
bash bench/gpu/attention.sh $rows
TARGET=sm_80 bash bench/gpu/attention.sh d128 f32-d64 h40 h72-bthd gqa-3b bias
if [ -f carry/gpu/perfc-base.xz ]; then
  xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc-base && chmod +x /tmp/pf/perfc-base
  echo "before (carry/gpu/perfc-base.xz):"
  PERFC=/tmp/pf/perfc-base timeout 200 bash bench/gpu/attention.sh f32-c-odd h40-c-odd gqa-3b | grep -v '^NVIDIA\|^target'
fi
exit 0
fi
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
timeout 480 bash tests/cuda/flash_gpu.sh /tmp/pf/perfc stdlib | grep -v '^ok   attention\|^ok   flash_bthd'
echo "flash_gpu.sh exit ${PIPESTATUS[0]}"
