#!/usr/bin/env bash
# Products with two batch loops on the GPU (attention's scores, einsum
# bhqd,bhkd->bhqk) and kernels of two products (an MLP's gate and up projections): the padded-tile validations of tests/cuda/pad_gpu.sh, then the
# scores rows of bench/gpu/contractions.sh as a user who never tunes gets them
# (MODE=run: the default schedule), with bmm and a square GEMM as controls, then the
# scores kernel with no default schedule (one thread per element: what such a
# product got before its batch loops were collapsed), validated and timed.
#   bash bench/gpu/two_batch.sh        (carry carry/gpu/perfc.xz; OUT=/tmp/... for logs)
set -u
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
bash tests/cuda/pad_gpu.sh /tmp/pf/perfc bench/gpu/contractions; echo "pad_gpu exit $?"
MODE=run bash bench/gpu/contractions.sh scores scores-odd swiglu swiglu-odd bmm mm-4096 linear
echo "scores 4x16x2048x128 with no default schedule:"
/tmp/pf/perfc bench/gpu/contractions/scores.pdl -target sm_90a --no-default-schedule --run --quiet 2>&1 | grep -E '^valid|^time'
echo "swiglu 1000x3000x1000 with no default schedule:"
/tmp/pf/perfc bench/gpu/contractions/swiglu.pdl -D M=1000 -D N=3000 -D K=1000 -target sm_90a --no-default-schedule --run --quiet 2>&1 | grep -E '^valid|^time'
