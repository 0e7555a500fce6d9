#!/usr/bin/env bash
# The default schedule for contractions against OpenBLAS (issue 15's bar): sgemm
# written plainly with NO schedule (bench/cpu/gemm_layouts.pdl), at 256..2048 cubed
# and three odd shapes, 1 and 2 threads, in each operand layout (A·B, A·Bᵀ, Aᵀ·B,
# Aᵀ·Bᵀ).  Every number comes from `perfc --run --compare openblas --json`: the
# kernel validated on fresh inputs and OpenBLAS timed in the same process.  Each
# cell is the median of REPS runs of the ratio perfc / OpenBLAS; `min` is the ratio of
# the minimum times over all the runs (less sensitive to neighbours on a shared
# machine); the load average is printed before and after.  BASE=path/to/perfc runs
# a second build right after each run of PERFC, on the same shape (before/after
# in one run: both tables come out together, each with its geomean).
#
#   bench/cpu/gemm_defaults.sh [kernels...]          (default: mm mm_nt mm_tn mm_tt)
#   PERFC=build/perfc REPS=3 THREADS="1 2" SHAPES="1024x1024x1024" bench/cpu/gemm_defaults.sh mm
#   BASE=/tmp/old/perfc REPS=5 THREADS=1 bench/cpu/gemm_defaults.sh
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

bins=("$PERFC")
[ -n "${BASE:-}" ] && bins+=("$BASE")
echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
     "load: $(cut -d' ' -f1-3 /proc/loadavg);  REPS=$REPS  ${bins[*]} ${extra[*]:-}"
# one run of binary $1 on kernel $k, shape $M $N $K, $t threads: "gflops blas_gflops min_ms blas_min_ms"
run1() {
    local out
    out=$("$1" "$file" -k "$k" -D M="$M" -D N="$N" -D K="$K" --threads "$t" --run \
          --compare openblas --json --quiet "${extra[@]}" 2>/dev/null) || return 1
    echo "$out" | jq -r '"\(.gflops) \(.baseline.gflops) \(.time_ms.min) \(.baseline.time_ms.min)"'
}
for k in "${kernels[@]}"; do
    for t in $THREADS; do
        echo "## $k, $t thread(s): GFLOP/s perfc, OpenBLAS (medians), ratio (median of the per-run ratios), min (ratio of the min times)"
        hdr=$(printf '%-16s %9s %9s %7s %7s' MxNxK perfc openblas ratio min)
        [ ${#bins[@]} -gt 1 ] && hdr="$hdr   | base: $(printf '%9s %9s %7s %7s' perfc openblas ratio min)"
        echo "$hdr"
        tabs=()
        for b in "${!bins[@]}"; do tabs+=("$(mktemp)"); done
        for s in $SHAPES; do
            IFS=x read -r M N K <<<"$s"
            line=$(printf '%-16s' "$s")
            declare -A ps=() bs=() rs=() pm=() bm=()
            for ((r = 0; r < REPS; r++)); do
                for b in "${!bins[@]}"; do
                    if ! v=$(run1 "${bins[$b]}"); then
                        echo "  ${bins[$b]} $k $s: run failed or invalid" >&2
                        continue
                    fi
                    read -r p bl tm bm1 <<<"$v"
                    ps[$b]+="$p "; bs[$b]+="$bl "; pm[$b]+="$tm "; bm[$b]+="$bm1 "
                    rs[$b]+="$(awk -v p="$p" -v b="$bl" 'BEGIN {print (b > 0 ? p / b : 0)}') "
                done
            done
            for b in "${!bins[@]}"; do
                p=$(printf '%s\n' ${ps[$b]:-} | median)
                bl=$(printf '%s\n' ${bs[$b]:-} | median)
                q=$(printf '%s\n' ${rs[$b]:-} | median)
                mn=$(awk -v a="$(printf '%s\n' ${pm[$b]:-} | sort -g | head -1)" -v c="$(printf '%s\n' ${bm[$b]:-} | sort -g | head -1)" \
                     'BEGIN {print (a > 0 ? c / a : 0)}')
                cell=$(printf '%9.2f %9.2f %7.3f %7.3f' "$p" "$bl" "$q" "$mn")
                echo "$q $mn" >>"${tabs[$b]}"
                [ "$b" -eq 0 ] && line="$line $cell" || line="$line   |       $cell"
            done
            unset ps bs rs pm bm
            echo "$line"
        done
        line=$(printf '%-16s %9s %9s' geomean "" "")
        for b in "${!bins[@]}"; do
            g=$(awk '{ if ($1 > 0) { s += log($1); n++ } if ($2 > 0) { u += log($2); m++ } }
                     END { printf "%7.3f %7.3f", n ? exp(s / n) : 0, m ? exp(u / m) : 0 }' "${tabs[$b]}")
            [ "$b" -eq 0 ] && line="$line $g" || line="$line   |       $(printf '%9s %9s' "" "") $g"
            rm -f "${tabs[$b]}"
        done
        echo "$line"
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
