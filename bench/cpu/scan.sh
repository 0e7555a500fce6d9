#!/usr/bin/env bash
# Scans against NumPy on one thread: cumsum, cumprod and reverse cumsum of a
# 2048 x 2048 f32 matrix along its rows (tests/lang/ops.pdl), each timed by
# `perfc --run --json --threads 1` (validated in the same process; every buffer
# evicted from the caches before each repetition) and by NumPy (OPENBLAS and OMP
# threads 1; warm caches, median of 30 calls).  The ratio is NumPy's median over
# perfc's: above 1, perfc is faster.  The load average is printed: the machine may
# be shared.
#
#   bench/cpu/scan.sh [R C]      PERFC=build/perfc PY=/usr/bin/python3 bench/cpu/scan.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
PY=${PY:-python3}
$PY -c 'import numpy' 2>/dev/null || PY=/usr/bin/python3
R=${1:-2048} C=${2:-2048}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)   R=$R C=$C, one thread"
printf '%-16s %12s %12s %8s\n' kernel perfc_ms numpy_ms ratio
for k in cumsum cumprod reverse_cumsum; do
    ms=$("$PERFC" tests/lang/ops.pdl -k $k -D R="$R" -D C="$C" --run --json --quiet --threads 1 |
        $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["valid"], d["reason"]; print(d["time_ms"]["median"])')
    np_ms=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $PY - "$k" "$R" "$C" <<'PYEOF'
import sys, time
import numpy as np
k, R, C = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
X = np.random.default_rng(1).uniform(0.5, 1.5, (R, C)).astype(np.float32)
f = {"cumsum": lambda: np.cumsum(X, axis=1), "cumprod": lambda: np.cumprod(X, axis=1),
     "reverse_cumsum": lambda: np.cumsum(X[:, ::-1], axis=1)[:, ::-1]}[k]
ts = []
for _ in range(30):
    t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
print(sorted(ts)[len(ts) // 2] * 1e3)
PYEOF
)
    printf '%-16s %12.3f %12.3f %8.2f\n' $k "$ms" "$np_ms" "$(echo "$np_ms / $ms" | bc -l)"
done
