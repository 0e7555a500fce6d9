#!/usr/bin/env bash
# Variants of an sgemm kernel timed interleaved with OpenBLAS in one process
# (bench/cpu/gemm_interleave.c): each VARIANT is a schedule (statements, as -s takes
# them) or `-` for the default schedule; each is built by `perfc lib` from
# bench/cpu/gemm_layouts.pdl with the schedule as the kernel's CPU schedule block,
# and every library's result is checked against OpenBLAS before it is timed.
#
#   bench/cpu/gemm_interleave.sh KERNEL MxNxK THREADS ROUNDS VARIANT...
#   bench/cpu/gemm_interleave.sh mm 1024x1024x1024 1 25 - "distribute(j) ..."
#   PERFC=/tmp/old/perfc bench/cpu/gemm_interleave.sh ...   (another build's default)
# The load is shared by every variant of a round, so compare variants of one run only.
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
k=$1; IFS=x read -r M N K <<<"$2"; threads=$3; rounds=$4; shift 4
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/drv" bench/cpu/gemm_interleave.c -lopenblas -ldl -lm
libs=()
i=0
for v in "$@"; do
    d="$tmp/v$i"; mkdir -p "$d"
    # the kernel's text, then the variant as its CPU schedule
    awk -v k="$k" '$1 == "kernel" && $2 ~ "^" k "\\(" {p = 1} p {print} p && /^}/ {exit}' bench/cpu/gemm_layouts.pdl > "$d/k.pdl"
    if [ "$v" != "-" ]; then
        { echo "schedule $k for cpu {"; grep -oE '[a-z_0-9]+\([^)]*\)' <<<"$v" | sed 's/^/  /'; echo "}"; } >> "$d/k.pdl"
    fi
    "$PERFC" lib "$d/k.pdl" -k "$k" -D M="$M" -D N="$N" -D K="$K" -o "$d/k" >/dev/null
    echo "V$i: ${v:0:150}"
    libs+=("$d/libk.so")
    i=$((i + 1))
done
echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
PERFC_NUM_THREADS=$threads "$tmp/drv" "$k" "$M" "$N" "$K" "$threads" "$rounds" "${libs[@]}" | sed "s#$tmp/##; s#/libk.so##"
