#!/usr/bin/env bash
# Time to a good schedule: this perfc's tuner against the tuner of a base commit
# (default 9540db1), on sgemm N^3 (default 1024) on this CPU, in one run.
#
# For each run, the time from the start of the search until its best so far is within
# 5% of (a) the run's own final best and (b) the best of every run of both perfcs
# (bench/tune_model_report.py reads it off the per-candidate progress lines).
#
# 1. Both perfcs: PERFC (default build/perfc, this tree) and PERFC_BASE (default: the
#    base commit checked out with `git worktree add` under $OUT and built there).
# 2. A training database for the cost model, tuned by the BASE perfc on OTHER kernels
#    and sizes (sgemm 512^3 and 768^3, batched GEMM 8x256^3, GEMM+bias+ReLU 512^3);
#    both tuners then start every run from their own copy of it.
# 3. REPS rounds (default 3); in each, one run of each perfc, their order alternating
#    from round to round, same seed within a round, default options (the model on).
#    The load average before each run goes to $OUT/load.log and into the table.
#
# 4. The same times judged by re-timed schedules (bench/tune_retime.py, ROUNDS=3; 0: off).
#
#   bench/cpu/tune_time.sh          PERFC=build/perfc PERFC_BASE= BASE=9540db1 N=1024 REPS=3 THREADS= ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
BASE=${BASE:-9540db1}
N=${N:-1024}
REPS=${REPS:-3}
# the GEMM as a plain kernel file both perfcs parse (stdlib/gemm.pdl took a dtype
# parameter after the base commit)
GEMM=${GEMM:-bench/gpu/kernels/mm_f32.pdl}
OUT=${OUT:-/tmp/perfc_tune_time}
thr=()
[ -n "${THREADS:-}" ] && thr=(--threads "$THREADS")
mkdir -p "$OUT"
rm -f "$OUT"/*.db* "$OUT"/*.err "$OUT"/*.out "$OUT"/*.pdl "$OUT/load.log" "$OUT/train.log"

if [ -z "${PERFC_BASE:-}" ]; then
    src=$OUT/base-src
    if [ ! -x "$src/build/perfc" ]; then
        git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
        git worktree add --detach "$src" "$BASE" >/dev/null
        cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release > /dev/null
        cmake --build "$src/build" -j2 --target perfc > "$OUT/base-build.log"
    fi
    PERFC_BASE=$src/build/perfc
fi
echo "base: $PERFC_BASE ($BASE)   new: $PERFC ($(git rev-parse --short HEAD 2>/dev/null || echo "this tree"))" | tee "$OUT/load.log"

base=$OUT/train.db
train() {
    echo "training: $*" >&2
    "$PERFC_BASE" "$@" --no-schedule --autotune --db "$base" --no-model --seed 11 "${thr[@]}" \
        > /dev/null 2>> "$OUT/train.log"
}
train "$GEMM" -D M=512 -D N=512 -D K=512
train "$GEMM" -D M=768 -D N=768 -D K=768
# the other training kernels as plain text too, for the same reason
cat > "$OUT/bmm.pdl" <<'PDL'
kernel bmm(B, M, N, K) {
  in  A: f32[B, M, K]
  in  W: f32[B, K, N]
  out C: f32[B, M, N]
  C[b, i, j] = sum(k) A[b, i, k] * W[b, k, j]
}
PDL
cat > "$OUT/bias_relu.pdl" <<'PDL'
kernel bias_relu(M, N, K) {
  in  A: f32[M, K]
  in  B: f32[K, N]
  in  bias: f32[N]
  out C: f32[M, N]
  acc[i, j] = sum(k) A[i, k] * B[k, j]
  C[i, j] = max(acc[i, j] + bias[j], 0.0)
}
PDL
train "$OUT/bmm.pdl" -D B=8 -D M=256 -D N=256 -D K=256
train "$OUT/bias_relu.pdl" -D M=512 -D N=512 -D K=512

tune() { # tune MODE ROUND
    local mode=$1 r=$2 p=$PERFC
    [ "$mode" = base ] && p=$PERFC_BASE
    cp "$base" "$OUT/$mode.$r.db"
    echo "$mode.$r: load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)" | tee -a "$OUT/load.log" >&2
    "$p" "$GEMM" --no-schedule -D M="$N" -D N="$N" -D K="$N" --autotune --db "$OUT/$mode.$r.db" \
        --seed $((100 + r)) "${thr[@]}" > "$OUT/$mode.$r.out" 2> "$OUT/$mode.$r.err"
    grep -E '^(search|converged|profile|measuring) ' "$OUT/$mode.$r.out" >&2 || true
}
for ((r = 1; r <= REPS; r++)); do
    if ((r % 2)); then tune base "$r"; tune new "$r"; else tune new "$r"; tune base "$r"; fi
done
echo "after: load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)" | tee -a "$OUT/load.log" >&2
python3 bench/tune_model_report.py "$OUT" "$REPS" base new | tee "$OUT/table.txt"
# the same judged by re-timed schedules (ROUNDS=0 skips it): one reading of a schedule
# swings by 5-10% here, which decides "within 5%" more than the search does
if [ "${ROUNDS:-3}" != 0 ]; then
    ROUNDS=${ROUNDS:-3} python3 bench/tune_retime.py "$OUT" "$REPS" base="$PERFC_BASE" new="$PERFC" -- \
        "$GEMM" -D M="$N" -D N="$N" -D K="$N" "${thr[@]}" | tee "$OUT/retimed.txt"
fi
