#!/usr/bin/env bash
# The cost model's bar on the GPU: GEMM 4096^3 (stdlib gemm with T = f16: f16 inputs, f32
# accumulation, the rules' wgmma/mma.sync/shared-memory spaces on sm_90a), time until
# the search's best so far is within 5% of its final best, with and without the model,
# from the same starting database.  The same method as bench/cpu/tune_model.sh:
#
#   train    tunes OTHER kernels and sizes into a fresh database (f16 2048^3, bf16
#            2048^3, f16 4096x4096x1024), never gemm (T = f16) at 4096^3
#   measure  copies that database twice and tunes gemm (T = f16) 4096^3 on each copy,
#            without the model, then with it (REPS times, alternating), and prints the
#            table of bench/tune_model_report.py
#
# Two phases because one device command may run 10 minutes; the database stays in
# $WORK on the device between the two calls (the machine stays warm).  It runs from
# the repository root with a static perfc carried in:
#
#   here:   cmake -S . -B build-static -DCMAKE_BUILD_TYPE=Release -DPERFC_LLVM_STATIC=ON
#           cmake --build build-static -j2 --target perfc
#           mkdir -p carry/gpu && xz -T2 -c build-static/perfc > carry/gpu/perfc.xz
#   device: bench/gpu/tune_model.sh train      (carry: carry/gpu)
#           bench/gpu/tune_model.sh measure    (logs and the table under $OUT)
#
# BUDGET (default 48, the tuner's default) and REPS (default 1) may be set.
set -euo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
phase=${1:?usage: bench/gpu/tune_model.sh train|measure}
WORK=${WORK:-/tmp/perfc_tune_model_gpu}
OUT=${OUT:-$WORK/out}
BUDGET=${BUDGET:-48}
REPS=${REPS:-1}
T=${TARGET:-sm_90a}
mkdir -p "$WORK" "$OUT"
# stdlib's gemm at T = f16 and T = bf16 as plain kernels (scripts/pdl_instance.py),
# which an older perfc reads too; the search ignores the file's schedules anyway
GEMM16=$WORK/gemm16.pdl
{ python3 scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_T_f16 T=f16 && echo &&
  python3 scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_T_bf16 T=bf16; } >"$GEMM16"
P=$WORK/perfc
[ -x "$P" ] || { xz -dc carry/gpu/perfc.xz > "$P" && chmod +x "$P"; }
base=$WORK/base.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true

tune() { # tune DB [--no-model] perfc-args...
    local db=$1; shift
    "$P" "$GEMM16" --no-schedule -target "$T" --autotune --db "$db" --budget "$BUDGET" "$@"
}

case $phase in
train)
    rm -f "$base"*
    for args in "-k gemm_T_f16 -D M=2048 -D N=2048 -D K=2048" "-k gemm_T_bf16 -D M=2048 -D N=2048 -D K=2048" \
                "-k gemm_T_f16 -D M=4096 -D N=4096 -D K=1024"; do
        echo "training: $args"
        # shellcheck disable=SC2086
        tune "$base" --no-model --seed 11 $args > "$OUT/train.out" 2>> "$OUT/train.log"
        grep -E '^(search|converged) ' "$OUT/train.out" || true
    done
    ;;
measure)
    [ -f "$base" ] || { echo "no training database at $base: run 'train' first" >&2; exit 1; }
    for ((r = 1; r <= REPS; r++)); do
        for mode in without with; do
            db=$WORK/$mode.$r.db
            cp "$base" "$db"
            flag=()
            [ $mode = without ] && flag=(--no-model)
            echo "gemm (T = f16) 4096^3, $mode the model, run $r"
            tune "$db" "${flag[@]}" --seed $((100 + r)) -k gemm_T_f16 -D M=4096 -D N=4096 -D K=4096 \
                --compare cublas > "$OUT/$mode.$r.out" 2> "$OUT/$mode.$r.err" || echo "  exit $?"
            grep -E '^(search|converged|model|ratio) ' "$OUT/$mode.$r.out" || true
        done
    done
    python3 bench/tune_model_report.py "$OUT" "$REPS" | tee "$OUT/table.txt"
    ;;
*)
    echo "usage: bench/gpu/tune_model.sh train|measure" >&2
    exit 1
    ;;
esac
