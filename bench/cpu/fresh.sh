#!/usr/bin/env bash
# Fresh kernels (bench/cpu/fresh.pdl) with no schedule, this perfc against BASE, in
# one run: each kernel at its size validated on fresh inputs and timed by `perfc
# --run` (median ms), the two builds alternating, ROUNDS rounds; GEMM-shaped rows
# also set beside OpenBLAS (--compare openblas) where perfc recognises the product.
#   BASE=/path/to/old/perfc ROUNDS=2 THREADS=1 bench/cpu/fresh.sh [perfc]
set -u
cd "$(dirname "$0")/../.."
P=${1:-build/perfc}
B=${BASE:-}
T=${THREADS:-1}
F=bench/cpu/fresh.pdl
rows=(
  "gram|-k gram -D N=999 -D F=257|--compare openblas"
  "gram_scaled|-k gram_scaled -D N=999 -D F=257|"
  "xtx|-k xtx -D N=2000 -D F=300|--compare openblas"
  "square|-k square -D N=777|--compare openblas"
  "trimm|-k trimm -D N=777|"
  "linear_gelu|-k linear_gelu -D N=333 -D K=1000 -D F=1001|"
  "attn_bias|-k attn_bias -D N=1000 -D M=777 -D E=80|"
  "causal|-k causal -D H=3 -D T=777 -D Dh=128|"
)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), threads $T, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u)"
one() {  # BIN LABEL ARGS EXTRA
  local out
  # shellcheck disable=SC2086
  out=$(timeout 300 "$1" $F $3 $4 --threads "$T" --run 2>&1)
  local v t r
  v=$(echo "$out" | awk '/^valid/ {print $2; exit}')
  t=$(echo "$out" | awk '/^time/ {print $3; exit}')
  r=$(echo "$out" | awk '/^ratio/ {print $NF; exit}')
  printf "%-12s %-6s %-4s %10s ms  %s\n" "$2" "$5" "${v:-FAIL}" "${t:-nan}" "${r:+openblas ratio $r}"
}
for round in $(seq "${ROUNDS:-2}"); do
  for row in "${rows[@]}"; do
    IFS='|' read -r label args extra <<< "$row"
    [ -n "$B" ] && one "$B" "$label" "$args" "$extra" base
    one "$P" "$label" "$args" "$extra" new
  done
done
