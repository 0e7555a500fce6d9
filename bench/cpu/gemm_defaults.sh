#!/usr/bin/env bash
# The default schedule for contractions against OpenBLAS (issue 15's bar): sgemm
# written plainly with NO schedule (bench/cpu/gemm_layouts.pdl), at 256..2048 cubed
# and three odd shapes, 1 and 2 threads, in each operand layout (A·B, A·Bᵀ, Aᵀ·B,
# Aᵀ·Bᵀ).  Every number comes from `perfc --run --compare openblas --json`: the
# kernel validated on fresh inputs and OpenBLAS timed in the same process.  Each
# cell is the median of REPS runs of the ratio perfc / OpenBLAS; the load average is
# printed before and after (the machine may be shared).
#
#   bench/cpu/gemm_defaults.sh [kernels...]          (default: mm mm_nt mm_tn mm_tt)
#   PERFC=build/perfc REPS=3 THREADS="1 2" SHAPES="1024x1024x1024" bench/cpu/gemm_defaults.sh mm
# Shapes are MxNxK.  EXTRA="--no-default-schedule" times the kernels as written.
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
REPS=${REPS:-3}
THREADS=${THREADS:-"1 2"}
SHAPES=${SHAPES:-"256x256x256 512x512x512 1024x1024x1024 2048x2048x2048 127x1024x1024 1037x769x511 1024x1024x64"}
read -r -a extra <<<"${EXTRA:-}"
kernels=("$@")
[ ${#kernels[@]} -eq 0 ] && kernels=(mm mm_nt mm_tn mm_tt)
file=bench/cpu/gemm_layouts.pdl

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
     "load: $(cut -d' ' -f1-3 /proc/loadavg);  REPS=$REPS  $PERFC ${extra[*]:-}"
for k in "${kernels[@]}"; do
    for t in $THREADS; do
        echo "## $k, $t thread(s): GFLOP/s perfc, OpenBLAS (medians), ratio (median of the per-run ratios)"
        printf '%-16s %9s %9s %7s\n' MxNxK perfc openblas ratio
        tab=$(mktemp)
        for s in $SHAPES; do
            IFS=x read -r M N K <<<"$s"
            ps=() bs=() rs=()
            for ((r = 0; r < REPS; r++)); do
                if ! out=$("$PERFC" "$file" -k "$k" -D M="$M" -D N="$N" -D K="$K" --threads "$t" --run \
                           --compare openblas --json --quiet "${extra[@]}" 2>/dev/null); then
                    echo "  $k $s: run failed or invalid (status $?)" >&2
                    continue
                fi
                p=$(echo "$out" | jq -r .gflops)
                b=$(echo "$out" | jq -r .baseline.gflops)
                ps+=("$p"); bs+=("$b")
                rs+=("$(awk -v p="$p" -v b="$b" 'BEGIN {print (b > 0 ? p / b : 0)}')")
            done
            p=$(printf '%s\n' "${ps[@]:-}" | grep -v '^$' | median)
            b=$(printf '%s\n' "${bs[@]:-}" | grep -v '^$' | median)
            q=$(printf '%s\n' "${rs[@]:-}" | grep -v '^$' | median)
            printf '%-16s %9.2f %9.2f %7.3f\n' "$s" "$p" "$b" "$q" | tee -a "$tab"
        done
        awk '{ if ($4 > 0) { s += log($4); n++ } } END { if (n) printf "%-16s %9s %9s %7.3f\n", "geomean", "", "", exp(s / n) }' "$tab"
        rm -f "$tab"
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
