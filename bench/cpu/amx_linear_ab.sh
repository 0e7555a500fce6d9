#!/usr/bin/env bash
# nn.Linear (and Aᵀ·B) on AMX tiles, two builds alternating, beside torch: the weight
# W[j, k] is packed into pairs of k (Wp[p, j, q] = W[j, 2p + q]) on every call, Aᵀ
# into rows of k, and this times the whole kernel with one build's packing against
# another's (carry both:
# carry/gpu/perfc.xz and carry/gpu/perfc-base.xz), one thread, each run validated by
# perfc, torch's F.linear (and + bias + GELU) in bf16 in the same call.  Writes
# $OUT/amx_linear.log (or /tmp) as it goes.
#   bash bench/cpu/amx_linear_ab.sh          ROUNDS=2 KERNELS="linear linear_gelu mm_tn"
#                                            SIZES="2048,2048,2048 333,1000,1001 1024,4096,1024"
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc-base
chmod +x /tmp/pf/perfc /tmp/pf/perfc-base
LOG=${OUT:-/tmp}/amx_linear.log
K=bench/gpu/contractions
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(grep -o -E 'amx_bf16' /proc/cpuinfo | sort -u)" >> "$LOG"
one() { # build label, kernel, M N K
    local p=$1 f=$2 m=$3 n=$4 k=$5
    "$p" $K/$f.pdl -D M=$m -D N=$n -D K=$k --threads 1 --run --json --quiet 2>/dev/null |
        python3 -c "import json,sys; d=json.load(sys.stdin); print('median %.3f min %.3f ms valid %s' % (d['time_ms']['median'], d['time_ms']['min'], d['valid']))" 2>&1 | tail -1
}
KERNELS=${KERNELS:-"linear linear_gelu mm_tn"}
SIZES=${SIZES:-"2048,2048,2048 333,1000,1001 1024,4096,1024"}
for r in $(seq ${ROUNDS:-2}); do
    for f in $KERNELS; do
        for s in $SIZES; do
            set -- ${s//,/ }
            echo "r$r $f $1x$2x$3  base: $(one /tmp/pf/perfc-base $f $1 $2 $3)   new: $(one /tmp/pf/perfc $f $1 $2 $3)" >> "$LOG"
        done
    done
done
for f in $KERNELS; do
    for s in $SIZES; do
        set -- ${s//,/ }
        python3 - $f "$@" >> "$LOG" 2>&1 <<'PY'
import sys, time, torch
import torch.nn.functional as F
op = sys.argv[1]
m, n, k = map(int, sys.argv[2:5])
torch.set_num_threads(1)
x = torch.randn(m, k).bfloat16(); w = torch.randn(n, k).bfloat16(); b = torch.randn(n).bfloat16()
at = torch.randn(k, m).bfloat16(); bk = torch.randn(k, n).bfloat16()
f = {"linear": lambda: F.linear(x, w), "linear_gelu": lambda: F.gelu(F.linear(x, w) + b),
     "mm_tn": lambda: torch.mm(at.t(), bk)}[op]
for _ in range(3): f()
ts = []
for _ in range(10):
    s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
ts.sort()
print("torch %s bf16 %dx%dx%d, 1 thread: median %.3f ms, min %.3f ms" % (op, m, n, k, ts[5] * 1e3, ts[0] * 1e3))
PY
    done
done
cat "$LOG"
