#!/usr/bin/env bash
# The CPU Bar of issue 4, measured through the perfc CLI: sgemm at six shapes against
# OpenBLAS (1 and 2 threads), conv2d at three ResNet-50 layers against im2col+sgemm,
# softmax and layernorm at 4096x4096 against the machine's copy bandwidth.  Every
# number comes from `perfc --run --json`, so every kernel timed here was validated in
# the same process.  Each case runs REPS times and the table shows the median of the
# runs (the machine is shared, so one run says little); the load average is printed
# so the reader can judge the noise.
#
#   bench/cpu/run.sh [gemm|conv|norm|all] [extra perfc args...]
#   PERFC=build-cpu/perfc REPS=3 THREADS="1 2" bench/cpu/run.sh gemm
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build-cpu/perfc}
REPS=${REPS:-3}
THREADS=${THREADS:-"1 2"}
what=${1:-all}
[ $# -gt 0 ] && shift
extra=("$@")

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# run_case LABEL FIELD_PERFC FIELD_BASE perfc-args...: prints "label perfc base ratio"
# with each the median over REPS runs.  A failed or invalid run prints its reason and
# counts as nan.
run_case() {
    local label=$1 fp=$2 fb=$3; shift 3
    local ps=() bs=() rs=() out
    for ((r = 0; r < REPS; r++)); do
        if ! out=$("$PERFC" "$@" "${extra[@]}" --json 2>/tmp/perfc_bench_err.$$); then
            echo "  $label: run failed: $(tail -2 /tmp/perfc_bench_err.$$ | tr '\n' ' ')" >&2
            echo "$out" | jq -r '.reason // empty' >&2 || true
            continue
        fi
        ps+=("$(echo "$out" | jq -r "$fp")")
        bs+=("$(echo "$out" | jq -r "$fb")")
    done
    rm -f /tmp/perfc_bench_err.$$
    local p b
    p=$(printf '%s\n' "${ps[@]:-}" | grep -v '^$' | median)
    b=$(printf '%s\n' "${bs[@]:-}" | grep -v '^$' | median)
    awk -v l="$label" -v p="$p" -v b="$b" 'BEGIN {printf "%-28s %9.2f %9.2f %7.3f\n", l, p, b, (b > 0 ? p / b : 0)}'
}

geomean_of_table() { awk '{ if ($4 > 0) { s += log($4); n++ } } END { if (n) printf "%-28s %9s %9s %7.3f\n", "geomean", "", "", exp(s / n) }'; }

echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;  load: $(cut -d' ' -f1-3 /proc/loadavg);  REPS=$REPS"

if [[ $what == gemm || $what == all ]]; then
    for t in $THREADS; do
        echo "## sgemm, $t thread(s): GFLOP/s perfc, OpenBLAS, ratio (median of $REPS runs)"
        printf '%-28s %9s %9s %7s\n' shape perfc openblas ratio
        {
            for s in "256 256 256" "512 512 512" "1024 1024 1024" "2048 2048 2048" "127 1024 1024" "1024 1024 64"; do
                set -- $s
                run_case "${1}x${2}x${3}" .gflops .baseline.gflops stdlib/gemm.pdl -D M=$1 -D N=$2 -D K=$3 \
                    --threads "$t" --run --compare openblas
            done
        } | tee /tmp/perfc_bench_tab.$$
        geomean_of_table </tmp/perfc_bench_tab.$$
        rm -f /tmp/perfc_bench_tab.$$
    done
fi

if [[ $what == conv || $what == all ]]; then
    # The baseline is im2col + OpenBLAS sgemm (bench/cpu/conv_baseline.c), built here,
    # timed like the harness times kernels and checked against a direct convolution.
    base=$(mktemp /tmp/perfc_conv_baseline.XXXXXX)
    cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -o "$base" bench/cpu/conv_baseline.c -lopenblas -lm
    for t in $THREADS; do
        echo "## conv2d (ResNet-50 3x3 layers, batch 1), $t thread(s): GFLOP/s perfc, im2col+sgemm, ratio"
        printf '%-28s %9s %9s %7s\n' "layer C,HxW,K" perfc im2col ratio
        {
            for s in "64 56 56 64" "128 28 28 128" "256 14 14 256"; do
                set -- $s
                ps=() bs=()
                for ((r = 0; r < REPS; r++)); do
                    ps+=("$("$PERFC" stdlib/conv2d.pdl -D N=1 -D C=$1 -D H=$2 -D W=$3 -D K=$4 -D R=3 -D S=3 -D U=1 -D P=1 \
                        --threads "$t" --run --json "${extra[@]}" | jq -r '.gflops // empty')")
                    bs+=("$("$base" "$1" "$2" "$3" "$4" 3 3 1 1 "$t" | sed 's/.*gflops=\([0-9.]*\).*/\1/')")
                done
                p=$(printf '%s\n' "${ps[@]}" | grep -v '^$' | median)
                b=$(printf '%s\n' "${bs[@]}" | grep -v '^$' | median)
                awk -v l="$1,${2}x$3,$4" -v p="$p" -v b="$b" 'BEGIN {printf "%-28s %9.2f %9.2f %7.3f\n", l, p, b, (b > 0 ? p / b : 0)}'
            done
        } | tee /tmp/perfc_bench_tab.$$
        geomean_of_table </tmp/perfc_bench_tab.$$
        rm -f /tmp/perfc_bench_tab.$$
    done
    rm -f "$base"
fi

if [[ $what == norm || $what == all ]]; then
    # Copy bandwidth is measured by bench/cpu/copy.pdl through the same harness (same
    # byte count: input read once, output written once; same cache flushing).
    for t in $THREADS; do
        echo "## softmax, layernorm 4096x4096 f32, $t thread(s): GB/s perfc, copy, ratio (median of $REPS runs)"
        printf '%-28s %9s %9s %7s\n' kernel perfc copy ratio
        for k in softmax layernorm; do
            ps=() bs=()
            for ((r = 0; r < REPS; r++)); do
                bs+=("$("$PERFC" bench/cpu/copy.pdl -D R=4096 -D C=4096 --threads "$t" --run --json | jq -r '.gbps // empty')")
                ps+=("$("$PERFC" stdlib/$k.pdl -D R=4096 -D C=4096 --threads "$t" --run --json "${extra[@]}" | jq -r '.gbps // empty')")
            done
            p=$(printf '%s\n' "${ps[@]}" | grep -v '^$' | median)
            b=$(printf '%s\n' "${bs[@]}" | grep -v '^$' | median)
            awk -v l="$k" -v p="$p" -v b="$b" 'BEGIN {printf "%-28s %9.2f %9.2f %7.3f\n", l, p, b, (b > 0 ? p / b : 0)}'
        done
    done
fi
