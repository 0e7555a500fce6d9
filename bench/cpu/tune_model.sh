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

python3 bench/tune_model_report.py "$OUT" "$REPS"
