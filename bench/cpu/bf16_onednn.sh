#!/usr/bin/env bash
# bf16 GEMM on the CPU against oneDNN (issue 15's bar: 2048^3 on an AVX-512 BF16 or
# AMX machine, >= 0.8 of oneDNN): bench/gpu/contractions/mm.pdl with T = bf16,
# U = f32 and no schedule (the default schedule), validated and timed by `perfc
# --run --json`, beside bench/cpu/matmul_onednn.c (oneDNN's matmul, its B prepacked)
# built here, in the same run, 1 and 2 threads.  Needs libdnnl-dev.
#   bench/cpu/bf16_onednn.sh            SIZE=2048 THREADS="1 2"
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
N=${SIZE:-2048}
bin=$(mktemp /tmp/perfc_mm_onednn.XXXXXX)
trap 'rm -f "$bin"' EXIT
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -o "$bin" bench/cpu/matmul_onednn.c -ldnnl -lm
echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
     "bf16: $(grep -o -m1 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | xargs);  load: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in ${THREADS:-1 2}; do
  p=$("$PERFC" bench/gpu/contractions/mm.pdl -D M="$N" -D N="$N" -D K="$N" -D T=bf16 -D U=f32 --threads "$t" \
      --run --json --quiet 2>/dev/null | jq -r '"\(.time_ms.median) \(.valid)"')
  o=$(OMP_NUM_THREADS=$t "$bin" "$N" "$N" "$N")
  om=$(echo "$o" | sed 's/.*ms=\([0-9.]*\) .*/\1/')
  read -r pm pv <<<"$p"
  echo "threads $t: perfc $pm ms ($([ "$pv" = true ] && echo valid || echo INVALID)), oneDNN $om ms ($(echo "$o" | sed 's/.*impl=//')), ratio $(awk -v a="$om" -v b="$pm" 'BEGIN { printf "%.3f", a / b }')"
done
