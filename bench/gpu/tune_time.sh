#!/usr/bin/env bash
# Time to a good schedule on the GPU: this perfc's tuner against the tuner of a base
# commit (9540db1), on gemm (T = f16) at 4096^3 (f16 inputs, f32 accumulation; the
# rules' wgmma, mma.sync and shared-memory spaces on sm_90a), in one run on one GPU.
# For each run, the time until the search's best so far is within 5% of (a) its own
# final best and (b) the best of every run (bench/tune_model_report.py).
#
# The same method as bench/cpu/tune_time.sh, in phases because one device command
# may run 10 minutes (the machine stays warm between calls, and $WORK with it, only
# 30 s after each call and 30 minutes in all: make the calls back to back):
#
#   train     the BASE perfc tunes OTHER kernels and sizes into a fresh database (f16
#             2048^3, bf16 2048^3, f16 4096x4096x1024; TRAIN_BUDGET candidates each,
#             default 24: the model needs 20 rows), never gemm (T = f16) at 4096^3
#   measure   REPS rounds (default 2 per call; call again for more, ROUND0 the
#             first round's number): in each, one run of each perfc on its own copy
#             of that database, order alternating, same seed within a round, the
#             default options (the model on), --compare cublas
#   report    the table, from every round measured so far
#   cpu       the CPU bar on this host's quiet cores: bench/cpu/tune_time.sh with
#             both perfcs (sgemm 1024^3, REPS=3)
#
# Both perfcs are static (no LLVM on the device) and carried xz-compressed (about
# 23 MB each; the carry limit is 64 MiB).  Built here, from the repository root:
#
#   cmake -S . -B build-static -DPERFC_LLVM_STATIC=ON -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-static -j2 --target perfc
#   git worktree add --detach /tmp/perfc-base 9540db1
#   cmake -S /tmp/perfc-base -B /tmp/perfc-base/build-static -DPERFC_LLVM_STATIC=ON -DCMAKE_BUILD_TYPE=Release
#   cmake --build /tmp/perfc-base/build-static -j2 --target perfc
#   mkdir -p carry/gpu && xz -T2 -c build-static/perfc > carry/gpu/perfc.xz
#   xz -T2 -c /tmp/perfc-base/build-static/perfc > carry/gpu/perfc-base.xz
#
# then on the device (carry: carry/gpu), one call each:
#   bench/gpu/tune_time.sh train
#   ROUND0=1 bench/gpu/tune_time.sh measure ; ROUND0=3 bench/gpu/tune_time.sh measure ; bench/gpu/tune_time.sh report
#   bench/gpu/tune_time.sh cpu
set -euo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
phase=${1:?usage: bench/gpu/tune_time.sh train|measure|report|cpu}
WORK=${WORK:-/tmp/perfc_tune_time_gpu}
OUT=${OUT:-$WORK/out}
REPS=${REPS:-2}
ROUND0=${ROUND0:-1}
T=${TARGET:-sm_90a}
mkdir -p "$WORK" "$OUT"
# stdlib's gemm at T = f16 and T = bf16 as plain kernels (scripts/pdl_instance.py),
# which an older perfc reads too; the search ignores the file's schedules anyway
GEMM16=$WORK/gemm16.pdl
{ python3 scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_T_f16 T=f16 && echo &&
  python3 scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_T_bf16 T=bf16; } >"$GEMM16"
for b in perfc perfc-base; do
    [ -x "$WORK/$b" ] || { xz -dc "carry/gpu/$b.xz" > "$WORK/$b" && chmod +x "$WORK/$b"; }
done
NEW=$WORK/perfc BASE=$WORK/perfc-base
base_db=$WORK/train.db

tune() { # tune PERFC DB perfc-args...
    local p=$1 db=$2; shift 2
    "$p" "$GEMM16" --no-schedule -target "$T" --autotune --db "$db" "$@"
}

case $phase in
train)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
    rm -f "$base_db"*
    for args in "-k gemm_T_f16 -D M=2048 -D N=2048 -D K=2048" "-k gemm_T_bf16 -D M=2048 -D N=2048 -D K=2048" \
                "-k gemm_T_f16 -D M=4096 -D N=4096 -D K=1024"; do
        echo "training: $args"
        # shellcheck disable=SC2086
        tune "$BASE" "$base_db" --no-model --seed 11 --budget "${TRAIN_BUDGET:-24}" $args > "$OUT/train.out" \
            2>> "$OUT/train.log"
        grep -E '^(search|converged) ' "$OUT/train.out" || true
    done
    ;;
measure)
    [ -f "$base_db" ] || { echo "no training database at $base_db: run 'train' first" >&2; exit 1; }
    one() { # one MODE ROUND
        local mode=$1 r=$2 p=$NEW
        [ "$mode" = base ] && p=$BASE
        cp "$base_db" "$WORK/$mode.$r.db"
        echo "gemm (T = f16) 4096^3, $mode, round $r, $(date -u +%H:%M:%S)"
        tune "$p" "$WORK/$mode.$r.db" --seed $((100 + r)) -k gemm_T_f16 -D M=4096 -D N=4096 -D K=4096 \
            --compare cublas > "$OUT/$mode.$r.out" 2> "$OUT/$mode.$r.err" || echo "  exit $?"
        grep -E '^(search|converged|profile|measuring) ' "$OUT/$mode.$r.out" || true
    }
    for ((r = ROUND0; r < ROUND0 + REPS; r++)); do
        if ((r % 2)); then one base "$r"; one new "$r"; else one new "$r"; one base "$r"; fi
    done
    ;;
report)
    n=$(ls "$OUT"/new.*.err 2>/dev/null | wc -l)
    python3 bench/tune_model_report.py "$OUT" "$n" base new | tee "$OUT/table.txt"
    ;;
cpu)
    nproc; grep -m1 'model name' /proc/cpuinfo || true
    OUT=$OUT/cpu PERFC=$NEW PERFC_BASE=$BASE REPS=${CPU_REPS:-3} bench/cpu/tune_time.sh
    ;;
*)
    echo "usage: bench/gpu/tune_time.sh train|measure|report|cpu" >&2
    exit 1
    ;;
esac
