#!/usr/bin/env bash
# Triton's GEMM as sm_80 code and as native code on this GPU, beside torch.mm:
# the reference for perfc's sm_80 suite (bench/gpu/proto/triton80.py).  Writes
# $OUT/ref80.log as it goes.   bash bench/gpu/proto/ref80.sh ["4096 4096 4096" ...]
set -u
cd "$(dirname "$0")/../../.."
LOG=${OUT:-/tmp}/ref80.log
nvidia-smi -L >> "$LOG" 2>&1
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)" >> "$LOG" 2>&1
[ $# -gt 0 ] || set -- "4096 4096 4096" "8192 8192 8192" "4096 4096 4096 nt" "1024 1024 16384"
for s in "$@"; do
    for arch in sm80 native; do
        if [ $arch = sm80 ]; then
            TRITON_OVERRIDE_ARCH=sm80 timeout 150 python3 bench/gpu/proto/triton80.py $s >> "$LOG" 2>&1
        else
            timeout 150 python3 bench/gpu/proto/triton80.py $s >> "$LOG" 2>&1
        fi
    done
done
