#!/usr/bin/env bash
# A product's epilogue apart or in the write-back (reverse_compute_at), on the idle
# Xeon of a GPU machine, one thread, in one device call: f32 nn.Linear + bias + ReLU
# and + GELU (bench/cpu/epilogue.pdl) on the AVX-512 micro-kernel, then bf16
# Linear + bias + GELU (bench/gpu/contractions/linear_gelu.pdl) on AMX tiles beside
# torch's F.gelu(F.linear(..) + bias) in bf16.  Each perfc run validated; alternating
# rounds (bench/cpu/epilogue_ab.py).  Writes $OUT/epilogue.log (or /tmp) as it goes.
# Carry carry/gpu/perfc.xz.
#   bash bench/cpu/host_epilogue.sh          ROUNDS=3
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
LOG=${OUT:-/tmp}/epilogue.log
R=${ROUNDS:-3}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(grep -o -E 'avx512f|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')" >> "$LOG"
python3 bench/cpu/epilogue_ab.py /tmp/pf/perfc --rounds "$R" \
    bench/cpu/epilogue.pdl:linear_relu:N=512,K=768,F=3072 bench/cpu/epilogue.pdl:linear_relu:N=512,K=256,F=3072 \
    bench/cpu/epilogue.pdl:linear_gelu:N=512,K=768,F=3072 bench/cpu/epilogue.pdl:linear_gelu:N=512,K=256,F=3072 \
    bench/cpu/epilogue.pdl:linear_relu:N=4096,K=256,F=4096 >> "$LOG" 2>&1
if grep -q amx_bf16 /proc/cpuinfo; then
    python3 bench/cpu/epilogue_ab.py /tmp/pf/perfc --rounds "$R" --lanes 16 \
        bench/gpu/contractions/linear_gelu.pdl:linear_gelu:M=2048,N=2048,K=2048 \
        bench/gpu/contractions/linear_gelu.pdl:linear_gelu:M=333,N=1000,K=1001 \
        bench/gpu/contractions/linear_gelu.pdl:linear_gelu:M=4096,N=4096,K=1024 >> "$LOG" 2>&1
    for s in "2048 2048 2048" "333 1000 1001" "4096 4096 1024"; do
        set -- $s
        python3 - "$@" >> "$LOG" 2>&1 <<'PY'
import sys, time, torch
import torch.nn.functional as F
m, n, k = map(int, sys.argv[1:4])
torch.set_num_threads(1)
x = torch.randn(m, k).bfloat16(); w = torch.randn(n, k).bfloat16(); b = torch.randn(n).bfloat16()
f = lambda: F.gelu(F.linear(x, w) + b)
for _ in range(3): f()
ts = []
for _ in range(10):
    s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
ts.sort()
print("torch linear+bias+gelu bf16 %dx%dx%d, 1 thread: median %.3f ms, min %.3f ms" % (m, n, k, ts[5] * 1e3, ts[0] * 1e3))
PY
    done
fi
cat "$LOG"
