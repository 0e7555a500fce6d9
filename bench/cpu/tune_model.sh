#!/usr/bin/env bash
# Does the tuner's cost model find a good schedule sooner?  Measures, for sgemm N^3
# (default 1024) on this CPU at the default budget, the time until the search's best
# so far is within 5% of its final best, with the model and without it, starting from
# the same database.
#
# 1. A training database is built by tuning OTHER kernels and sizes (sgemm 512^3 and
#    768^3, batched GEMM 8x256^3, GEMM+bias+ReLU 512^3), never sgemm N^3, so the
#    model has seen nothing of the kernel it is judged on.
# 2. Two copies of it; each run of sgemm N^3 gets its own copy, so neither run learns
#    from the other.  The runs alternate, without and with the model, REPS times.
# 3. From the per-candidate progress lines (stderr is not a terminal, so perfc writes
#    one line per candidate with the best so far and the elapsed seconds), the time
#    to within 5% of (a) the run's own final best and (b) the best of all runs.
#
#   bench/cpu/tune_model.sh                 PERFC=build/perfc N=1024 REPS=1 THREADS=
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
N=${N:-1024}
REPS=${REPS:-1}
OUT=${OUT:-/tmp/perfc_tune_model}
thr=()
[ -n "${THREADS:-}" ] && thr=(--threads "$THREADS")
rm -rf "$OUT" && mkdir -p "$OUT"
base=$OUT/base.db

train() {
    echo "training: $*" >&2
    "$PERFC" "$@" --no-schedule --autotune --db "$base" --no-model --seed 11 "${thr[@]}" \
        > /dev/null 2>> "$OUT/train.log"
}
train stdlib/gemm.pdl -D M=512 -D N=512 -D K=512
train stdlib/gemm.pdl -D M=768 -D N=768 -D K=768
train stdlib/batched_gemm.pdl -D B=8 -D M=256 -D N=256 -D K=256
train stdlib/gemm_bias_relu.pdl -D M=512 -D N=512 -D K=512

for ((r = 1; r <= REPS; r++)); do
    for mode in without with; do
        db=$OUT/$mode.$r.db
        cp "$base" "$db"
        flag=()
        [ $mode = without ] && flag=(--no-model)
        echo "sgemm ${N}^3, $mode the model, run $r" >&2
        "$PERFC" stdlib/gemm.pdl --no-schedule -D M="$N" -D N="$N" -D K="$N" --autotune --db "$db" \
            --seed $((100 + r)) "${flag[@]}" "${thr[@]}" > "$OUT/$mode.$r.out" 2> "$OUT/$mode.$r.err"
        grep -E '^(search|converged|model) ' "$OUT/$mode.$r.out" >&2 || true
    done
done

python3 - "$OUT" "$REPS" <<'PY'
import re, sys
out, reps = sys.argv[1], int(sys.argv[2])
line = re.compile(r'^perfc: tune (\d+)/(\d+) .*?best ([0-9.e+-]+) ms.*?  (?:([0-9.]+) s|(\d+):(\d+)) elapsed')
runs = {}
for mode in ("without", "with"):
    for r in range(1, reps + 1):
        pts = []
        for l in open(f"{out}/{mode}.{r}.err"):
            m = line.match(l)
            if m:
                t = float(m.group(4)) if m.group(4) else 60 * int(m.group(5)) + int(m.group(6))
                pts.append((t, float(m.group(3)), int(m.group(1))))
        runs[(mode, r)] = pts
overall = min(p[-1][1] for p in runs.values() if p)
def within(pts, ref):
    for t, b, n in pts:
        if b <= 1.05 * ref:
            return t, n
    return None, None
print(f"{'run':<16} {'measured':>8} {'final best ms':>13} {'t5 own (s)':>10} {'n':>3} {'t5 all (s)':>10} {'n':>3} {'search s':>8}")
agg = {"without": [], "with": []}
for (mode, r), pts in runs.items():
    if not pts:
        print(f"{mode}.{r}: no progress lines"); continue
    t_own, n_own = within(pts, pts[-1][1])
    t_all, n_all = within(pts, overall)
    agg[mode].append((t_own, t_all))
    fmt = lambda v: f"{v:10.1f}" if v is not None else f"{'never':>10}"
    print(f"{mode + ' model.' + str(r):<16} {pts[-1][2]:8d} {pts[-1][1]:13.4g} {fmt(t_own)} {n_own or 0:3d} {fmt(t_all)} {n_all or 0:3d} {pts[-1][0]:8.1f}")
print(f"best of all runs: {overall:.4g} ms")
PY
