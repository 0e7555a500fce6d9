#!/usr/bin/env bash
# sgemm written plainly (bench/cpu/gemm_layouts.pdl, the default schedule) at one and
# two threads on the Xeon host of a GPU machine, each run validated by perfc, beside
# torch.mm on the CPU at the same thread count (the static build's OpenBLAS runs a
# generic kernel there).  ROUNDS alternating rounds; minimum times.  Writes
# $OUT/sgemm_threads.log (or /tmp) as it goes.  Carry carry/gpu/perfc.xz.
#   bash bench/cpu/host_sgemm_threads.sh      SIZES="1024 2048" THREADS="1 2" ROUNDS=2
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
LOG=${OUT:-/tmp}/sgemm_threads.log
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" >> "$LOG"
for r in $(seq ${ROUNDS:-2}); do
    for n in ${SIZES:-1024 2048}; do
        for t in ${THREADS:-1 2}; do
            p=$(/tmp/pf/perfc bench/cpu/gemm_layouts.pdl -k mm -D M=$n -D N=$n -D K=$n --threads $t --run --json 2>/dev/null |
                python3 -c "import json,sys; d=json.load(sys.stdin); print('%.3f %s' % (d['time_ms']['min'], 'valid' if d['valid'] else 'INVALID'))")
            q=$(python3 - $n $t <<'PY'
import sys, time, torch
n, t = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(t)
a = torch.randn(n, n); b = torch.randn(n, n)
for _ in range(3): torch.mm(a, b)
ts = []
for _ in range(10):
    s = time.perf_counter(); torch.mm(a, b); ts.append(time.perf_counter() - s)
print("%.3f" % (min(ts) * 1e3))
PY
)
            echo "r$r ${n}^3 threads $t: perfc min ${p% *} ms (${p#* }), torch.mm min $q ms, ratio $(python3 -c "print('%.3f' % ($q / ${p%% *}))")" >> "$LOG"
        done
    done
done
cat "$LOG"
