#!/usr/bin/env bash
# Elementwise transcendental functions, perfc against NumPy at one thread:
# `Y[i] = f(X[i])` for f in exp, log, tanh (f32 and f64) and erf (f32, against
# SciPy when it is installed), N elements.  perfc's time is the median of
# `perfc --run --json --threads 1` (validated in the same run against the f64
# interpreter; caches flushed before every repetition); NumPy's is the median of
# 30 calls of `np.f(x, out=y)`, each after writing a 64 MiB buffer so that x and y
# start out of cache as perfc's do.  Prints time per element and the ratio
# NumPy / perfc (above 1: perfc faster).  OMP/OpenBLAS threads are pinned to 1.
#
#   bench/cpu/vmath.sh [PERFC] [N]        (defaults build/perfc, 4194304)
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${1:-build/perfc}
N=${2:-4194304}
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg), N=$N, $(date -u +%FT%TZ)"
printf '%-6s %-4s %12s %12s %8s %s\n' fn type "perfc ns/el" "numpy ns/el" "np/perfc" "perfc rel. error"
for t in f32 f64; do
  for f in exp log tanh erf; do
    [ "$f" = erf ] && [ "$t" = f64 ] && continue
    arg='X[i]'; [ "$f" = log ] && arg='abs(X[i]) + 1'
    printf 'kernel k(N) {\n  in  X: %s[N]\n  out Y: %s[N]\n  Y[i] = %s(%s)\n}\n' "$t" "$t" "$f" "$arg" > "$tmp/k.pdl"
    json=$("$PERFC" "$tmp/k.pdl" -D N="$N" --run --json --quiet --threads 1) || { echo "$f $t: perfc failed"; continue; }
    read -r pms valid err < <(echo "$json" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["time_ms"]["median"], d["valid"], d["rel_error"])')
    nms=$("$PY" - "$f" "$t" "$N" <<'PYEOF'
import sys, time, numpy as np
f, t, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
dt = np.float32 if t == 'f32' else np.float64
x = (np.random.default_rng(1).random(n, dtype=np.float64) * 2 - 1).astype(dt)
if f == 'log':
    x = np.abs(x) + 1
y = np.empty_like(x)
if f == 'erf':
    try:
        from scipy.special import erf as fn
    except ImportError:
        print('nan'); sys.exit(0)
else:
    fn = getattr(np, f)
flush = np.zeros(8 << 20)
ts = []
for _ in range(30):
    flush += 1.0
    s = time.perf_counter(); fn(x, out=y); ts.append(time.perf_counter() - s)
print(sorted(ts)[len(ts) // 2] * 1e3)
PYEOF
)
    "$PY" -c "
p, q, n = $pms, float('$nms'), $N
print('%-6s %-4s %12.3f %12s %8s valid=%s %s' % ('$f', '$t', p * 1e6 / n, '%.3f' % (q * 1e6 / n) if q == q else 'n/a', '%.2f' % (q / p) if q == q else 'n/a', '$valid', '$err'))"
  done
done
