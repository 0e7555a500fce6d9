#!/usr/bin/env bash
# Masks as loop bounds (passes/mask_bounds.c) at one thread: a lower-triangular
# GEMM and one head of causal attention written without a schedule
# (bench/cpu/masks.pdl), their unmasked twins (the work the masks halve), and
# stdlib/attention_causal.pdl with its own schedule.  Each is timed by
# `perfc --run --json --threads 1`, which validates it against the f64
# interpreter on fresh inputs first (a kernel that is not valid stops the script).
# With PERFC_BEFORE set (a perfc built without the pass) both are timed in the
# same run and the ratio before/after printed.  The load average is printed: the
# machine may be shared.
#
#   bench/cpu/masks.sh                 PERFC=build/perfc PERFC_BEFORE=/tmp/perfc-old bench/cpu/masks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
BEFORE=${PERFC_BEFORE:-}
PY=${PY:-python3}
M=${M:-512} S=${S:-1024} D=${D:-64}
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)   one thread"
t() { # perfc file kernel args...
    local p=$1 f=$2 k=$3; shift 3
    "$p" "$f" -k "$k" "$@" --run --json --quiet --threads 1 |
        $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["valid"], d["reason"]; print(d["time_ms"]["median"])'
}
printf '%-34s %12s %12s %8s\n' kernel before_ms after_ms ratio
row() { # label file kernel args...
    local label=$1; shift
    local a b=-
    a=$(t "$PERFC" "$@")
    [ -n "$BEFORE" ] && b=$(t "$BEFORE" "$@")
    if [ -n "$BEFORE" ]; then
        printf '%-34s %12.3f %12.3f %8.2f\n' "$label" "$b" "$a" "$(echo "$b / $a" | bc -l)"
    else
        printf '%-34s %12s %12.3f %8s\n' "$label" - "$a" -
    fi
}
row "tril_gemm M=N=$M" bench/cpu/masks.pdl tril_gemm -D M="$M" -D N="$M"
row "full_gemm M=N=$M" bench/cpu/masks.pdl full_gemm -D M="$M" -D N="$M"
row "causal_attention S=$S D=$D" bench/cpu/masks.pdl causal_attention -D S="$S" -D D="$D"
row "full_attention S=$S D=$D" bench/cpu/masks.pdl full_attention -D S="$S" -D D="$D"
row "stdlib attention_causal 1x4x$S x$D" stdlib/attention_causal.pdl attention_causal -D B=1 -D H=4 -D S="$S" -D D="$D"
N=${N:-4096}
row "band_matvec N=$N W=8" bench/cpu/masks.pdl band_matvec -D N="$N"
row "tconv1d_s2 N=$N C=64 R=4" bench/cpu/masks.pdl tconv1d_s2 -D N="$N" -D C=64
row "tril_gemm_blocked 1024^3 (gemm sched)" bench/cpu/masks.pdl tril_gemm_blocked -D M=1024 -D N=1024 -D K=1024
row "full_gemm_blocked 1024^3 (gemm sched)" bench/cpu/masks.pdl full_gemm_blocked -D M=1024 -D N=1024 -D K=1024

# Long f32 sums without a schedule (tests/lang/long_sums.pdl, passes/cpu_sum_blocks.c):
# relative error against the f64 interpreter and the time, before and after.
printf '\n%-34s %22s %22s\n' "sum (16M terms)" "before err / ms" "after err / ms"
e() { # perfc kernel args...: "err / ms" (time even when not valid)
    local p=$1 k=$2; shift 2
    { "$p" tests/lang/long_sums.pdl -k "$k" "$@" --run --json --quiet --threads 1 2>/dev/null || true; } |
        $PY -c 'import json,sys; d=json.load(sys.stdin); t=d.get("time_ms") or {}; print("%.2e%s / %s" % (d["rel_error"], "" if d["valid"] else " (invalid)", "%.2f" % t["median"] if t.get("median") else "-"))'
}
while read -r k sizes; do
    D=()
    for s in ${sizes//,/ }; do D+=(-D "$s"); done
    b=-
    [ -n "$BEFORE" ] && b=$(e "$BEFORE" $k "${D[@]}")
    printf '%-34s %22s %22s\n' "$k $sizes" "$b" "$(e "$PERFC" $k "${D[@]}")"
done <<'CASES'
sumsq N=16777216
sumexp N=16777216
masked N=16777216
rowsum R=16,C=1048576
total2d R=4096,C=4096
CASES
