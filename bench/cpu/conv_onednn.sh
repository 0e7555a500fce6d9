#!/usr/bin/env bash
# conv2d against oneDNN on the CPU (issue 15's bar: ResNet-50 layers, tuned geomean
# >= 0.9 of oneDNN): the ResNet-50 3x3 layers at batch 1 (64 channels at 56^2, 128
# at 28^2, 256 at 14^2, 512 at 7^2, stride 1, padding 1), stdlib conv2d validated
# and timed by `perfc --run --json` with its own schedule (MODE=run, the default) or
# tuned (MODE=tune: --autotune --budget BUDGET, fresh database), beside
# bench/cpu/conv_onednn.c (oneDNN's direct convolution, the primitive alone and with
# the NCHW reorders) built here, one layer after the other in the same run.
#   bench/cpu/conv_onednn.sh                       THREADS="1 2" MODE=run|tune BUDGET=24
# Needs libdnnl-dev (Debian: apt-get install libdnnl-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
THREADS=${THREADS:-"1 2"}
MODE=${MODE:-run}
BUDGET=${BUDGET:-24}
bin=$(mktemp /tmp/perfc_conv_onednn.XXXXXX)
db=$(mktemp -u /tmp/perfc_conv_onednn_db.XXXXXX)
trap 'rm -f "$bin" "$db"*' EXIT
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -o "$bin" bench/cpu/conv_onednn.c -ldnnl -lm
echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
     "load: $(cut -d' ' -f1-3 /proc/loadavg);  MODE=$MODE"
printf '%-8s %3s %10s %10s %10s %9s %9s  %s\n' layer thr "perfc ms" "oneDNN ms" "+reorders" "ratio" "ratio(+r)" "perfc valid"
for t in $THREADS; do
  prod=1; prodr=1; n=0
  for layer in "64 56" "128 28" "256 14" "512 7"; do
    read -r c hw <<<"$layer"
    args=(stdlib/conv2d.pdl -D N=1 -D C="$c" -D H="$hw" -D W="$hw" -D K="$c" -D R=3 -D S=3 -D U=1 -D P=1
          --threads "$t" --json --quiet)
    if [ "$MODE" = tune ]; then
      out=$("$PERFC" "${args[@]}" --autotune --budget "$BUDGET" --db "$db" 2>/dev/null || true)
    else
      out=$("$PERFC" "${args[@]}" --run 2>/dev/null || true)
    fi
    pm=$(echo "$out" | jq -r '.time_ms.median // "nan"' 2>/dev/null || echo nan)
    pv=$(echo "$out" | jq -r 'if .valid then "valid" else "INVALID" end' 2>/dev/null || echo "no-json")
    o=$(OMP_NUM_THREADS=$t "$bin" "$c" "$hw" "$hw" "$c" 3 3 1 1)
    om=$(echo "$o" | sed 's/.*conv_ms=\([0-9.]*\).*/\1/')
    orm=$(echo "$o" | sed 's/.*nchw_ms=\([0-9.]*\).*/\1/')
    r=$(awk -v a="$om" -v b="$pm" 'BEGIN { printf "%.3f", a / b }')
    rr=$(awk -v a="$orm" -v b="$pm" 'BEGIN { printf "%.3f", a / b }')
    printf '%-8s %3s %10s %10s %10s %9s %9s  %s\n' "${c}@${hw}" "$t" "$pm" "$om" "$orm" "$r" "$rr" "$pv"
    prod=$(awk -v p="$prod" -v r="$r" 'BEGIN { print p * r }')
    prodr=$(awk -v p="$prodr" -v r="$rr" 'BEGIN { print p * r }')
    n=$((n + 1))
  done
  awk -v p="$prod" -v q="$prodr" -v n="$n" -v t="$t" \
      'BEGIN { printf "geomean  %3s threads: %.3f of oneDNN alone, %.3f with its reorders\n", t, p ^ (1 / n), q ^ (1 / n) }'
done
