#!/usr/bin/env bash
# conv2d against oneDNN on the CPU (issue 15's bar: ResNet-50 layers, tuned geomean
# >= 0.9 of oneDNN): the ResNet-50 3x3 layers at batch 1 (64 channels at 56^2, 128
# at 28^2, 256 at 14^2, 512 at 7^2, stride 1, padding 1), stdlib conv2d validated
# and timed by `perfc --run --json` with its own schedule (MODE=run, the default) or
# tuned (MODE=tune: --autotune --budget BUDGET, fresh database), beside
# bench/cpu/conv_onednn.c (oneDNN's direct convolution, the primitive alone and with
# the NCHW reorders) built here, one layer after the other in the same run.  Each
# layer is timed ROUNDS times, perfc and oneDNN alternating (in tune mode the first
# round searches and the later ones re-time the database's winner on fresh inputs);
# a layer's ratio is the median of its rounds' ratios, so that one busy phase of a
# shared machine does not decide it.
#   bench/cpu/conv_onednn.sh                       THREADS="1 2" MODE=run|tune BUDGET=24 ROUNDS=3
# Needs libdnnl-dev (Debian: apt-get install libdnnl-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${PERFC:-build/perfc}
THREADS=${THREADS:-"1 2"}
MODE=${MODE:-run}
BUDGET=${BUDGET:-24}
ROUNDS=${ROUNDS:-3}
bin=$(mktemp /tmp/perfc_conv_onednn.XXXXXX)
db=$(mktemp -u /tmp/perfc_conv_onednn_db.XXXXXX)
trap 'rm -f "$bin" "$db"*' EXIT
# the median of its arguments
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
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
    pms=() oms=() orms=() rs=() rrs=() pv=valid
    for ((round = 0; round < ROUNDS; round++)); do
      if [ "$MODE" = tune ]; then
        out=$("$PERFC" "${args[@]}" --autotune --budget "$BUDGET" --db "$db" 2>/dev/null || true)
      else
        out=$("$PERFC" "${args[@]}" --run 2>/dev/null || true)
      fi
      p1=$(echo "$out" | jq -r '.time_ms.median // "nan"' 2>/dev/null || echo nan)
      v1=$(echo "$out" | jq -r 'if .valid then "valid" else "INVALID" end' 2>/dev/null || echo "no-json")
      [ "$v1" = valid ] || pv=$v1
      o=$(OMP_NUM_THREADS=$t "$bin" "$c" "$hw" "$hw" "$c" 3 3 1 1)
      o1=$(echo "$o" | sed 's/.*conv_ms=\([0-9.]*\).*/\1/')
      or1=$(echo "$o" | sed 's/.*nchw_ms=\([0-9.]*\).*/\1/')
      pms+=("$p1") oms+=("$o1") orms+=("$or1")
      rs+=("$(awk -v a="$o1" -v b="$p1" 'BEGIN { print a / b }')")
      rrs+=("$(awk -v a="$or1" -v b="$p1" 'BEGIN { print a / b }')")
    done
    pm=$(med "${pms[@]}") om=$(med "${oms[@]}") orm=$(med "${orms[@]}")
    r=$(printf '%.3f' "$(med "${rs[@]}")") rr=$(printf '%.3f' "$(med "${rrs[@]}")")
    printf '%-8s %3s %10s %10s %10s %9s %9s  %s\n' "${c}@${hw}" "$t" "$pm" "$om" "$orm" "$r" "$rr" "$pv"
    prod=$(awk -v p="$prod" -v r="$r" 'BEGIN { print p * r }')
    prodr=$(awk -v p="$prodr" -v r="$rr" 'BEGIN { print p * r }')
    n=$((n + 1))
  done
  awk -v p="$prod" -v q="$prodr" -v n="$n" -v t="$t" \
      'BEGIN { printf "geomean  %3s threads: %.3f of oneDNN alone, %.3f with its reorders\n", t, p ^ (1 / n), q ^ (1 / n) }'
done
