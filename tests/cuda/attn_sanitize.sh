#!/usr/bin/env bash
# Every attention schedule perfc produces, under compute-sanitizer memcheck and
# racecheck (label gpu): the tuner's templates as sm_90a and sm_80 code (wgmma flash,
# tune/rules_attn.c; mma.sync flash, the same file; one query row a thread,
# rules_attn_simt.c; decoding, rules_decode.c) on the kernels that reach each branch
# (head sizes 64, 128, 40, 72; causal and sliding-window masks; grouped-query heads;
# lengths no tile divides; the batch-first layout; three batch loops; a bias table,
# ALiBi, a key-padding mask, an f32 bias), and stdlib's hand-written `flash`
# schedules.  Each case runs `perfc --run` under the tool at a small size: the run
# must validate on fresh inputs and the tool report no error or hazard.  Cases run
# JOBS at a time (the GPU takes several processes; timings under a sanitizer mean
# nothing), so the whole list fits one device call; PART i/n runs every n-th case
# from the i-th, to split it across calls.  LIST=1 prints the cases and the template
# each gets (a compile, no GPU needed).  Exit 77 without a GPU.
#   attn_sanitize.sh PERFC ROOT [PART]     (env: JOBS, TOOLS="memcheck racecheck", LIMIT
#   seconds a run, LIST=1)
set -u
perfc=$1; root=$2; part=${3:-1/1}
A=$root/stdlib/attention.pdl C=$root/stdlib/attention_causal.pdl
U=$root/bench/gpu/kernels/user_attention.pdl SM=$root/bench/gpu/kernels/user_simt_attn.pdl
BT=$root/bench/gpu/kernels/user_bthd.pdl CK=$root/tests/check W=$root/tests/cuda/attn_window.pdl
# label | file | perfc arguments (the target last)
cases=()
for t in sm_90a sm_80; do
  cases+=(
    "plain-d64-odd|$A|-D B=1 -D H=2 -D S=200 -D D=64 -target $t"
    "plain-d128|$A|-D B=1 -D H=1 -D S=256 -D D=128 -target $t"
    "causal-d128-odd|$C|-D B=1 -D H=2 -D S=200 -D D=128 -target $t"
    "causal-d64-odd|$C|-D B=1 -D H=1 -D S=333 -D D=64 -target $t"
    "flash-d64|$A|--schedule flash -D B=1 -D H=1 -D S=200 -D D=64 -target $t"
    "flash-d128|$A|--schedule flash -D B=1 -D H=1 -D S=256 -D D=128 -target $t"
    "flash-causal|$C|--schedule flash -D B=1 -D H=1 -D S=200 -D D=128 -target $t"
    "user-head-odd|$U|-k head -D T=200 -D E=128 -target $t"
    "user-attn-f16|$U|-k attn -D NH=2 -D T=130 -D E=64 -target $t"
    "window-d64|$W|-k window -D B=1 -D H=2 -D S=300 -D D=64 -D W=100 -target $t"
    "window-d128|$W|-k window -D B=1 -D H=1 -D S=333 -D D=128 -D W=70 -target $t"
    "gqa-d128|$U|-k gqa -D B=1 -D H=4 -D KVH=2 -D S=200 -D D=128 -target $t"
    "gqa-bthd|$CK/flash_bthd.pdl|-D B=1 -D T=200 -D H=4 -D E=64 -target $t"
    "causal-bthd|$BT|-k causal_bthd -D B=1 -D T=130 -D H=2 -D E=128 -target $t"
    "batch3-gqa|$CK/flash_batch3.pdl|-D B=1 -D HK=1 -D G=2 -D T=130 -D E=64 -target $t"
    "head96|$A|-D B=1 -D H=1 -D S=200 -D D=96 -target $t"
    "head40|$CK/flash_head40.pdl|-D NH=1 -D T=150 -D E=40 -target $t"
    "head40-causal|$U|-k causal -D NH=1 -D T=150 -D E=40 -target $t"
    "head72-bthd|$BT|-k plain_bthd -D B=1 -D T=130 -D H=2 -D E=72 -target $t"
    "bias|$CK/attn_bias.pdl|-k bias -D B=1 -D H=2 -D T=150 -D E=64 -target $t"
    "alibi|$CK/attn_bias.pdl|-k alibi -D B=1 -D H=1 -D T=150 -D E=128 -target $t"
    "kpm|$CK/attn_bias.pdl|-k kpm -D B=1 -D H=2 -D T=150 -D E=64 -target $t"
    "bias32|$CK/attn_bias.pdl|-k bias32 -D B=1 -D H=1 -D T=150 -D E=64 -target $t"
    "simt-f32-d64|$SM|-k attn_f32 -D B=1 -D H=1 -D S=200 -D D=64 -target $t"
    "simt-f32-d128|$SM|-k attn_f32 -D B=1 -D H=1 -D S=130 -D D=128 -target $t"
    "simt-causal-d72|$CK/attn_simt.pdl|-D B=1 -D T=100 -D H=1 -D E=72 -target $t"
    "simt-window|$W|-k window_f32 -D B=1 -D H=1 -D S=200 -D D=64 -D W=50 -target $t"
    "dec-1row|$U|-k cross -D B=1 -D H=2 -D SQ=1 -D SK=700 -D D=128 -target $t"
    "dec-4rows|$U|-k cross -D B=1 -D H=2 -D SQ=4 -D SK=1000 -D D=64 -target $t"
    "dec-gqa|$U|-k gqa_dec -D B=1 -D H=4 -D KVH=2 -D SQ=1 -D SK=600 -D D=128 -target $t"
    "dec-f32|$SM|-k decode_f32 -D B=1 -D H=2 -D SQ=1 -D SK=700 -D D=64 -target $t"
  )
done

if [ "${LIST:-0}" = 1 ]; then   # each case and the template perfc picks for it; a case
  lfail=0                       # that does not compile, or takes no template, fails
  for c in "${cases[@]}"; do
    IFS='|' read -r label f args <<< "$c"
    # shellcheck disable=SC2086
    if out=$("$perfc" "$f" $args -emit cuda -o /dev/null --verbose 2>&1); then
      how=$(printf '%s\n' "$out" | grep -m1 -o 'rules: [^;]*' | sed 's/, at its.*//')
      case $args in --schedule*) how="stdlib schedule ${args#--schedule }"; how=${how%% -D*} ;; esac
    else
      how=""
    fi
    printf '%-16s %-7s %s\n' "$label" "${args##*-target }" "${how:-FAILED: no template or no compile}"
    [ -n "$how" ] || lfail=1
  done
  exit $lfail
fi

# shellcheck source=tests/cuda/gpu_check.sh disable=SC2154
. "$(dirname "$0")/gpu_check.sh"   # exits 77 without a GPU; sets tmp and fail
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$cs" ] || { echo "compute-sanitizer not found"; exit 77; }
i0=${part%/*} n=${part#*/}
jobs=()
for k in "${!cases[@]}"; do
  [ $((k % n)) = $((i0 - 1)) ] || continue
  for tool in ${TOOLS:-memcheck racecheck}; do jobs+=("$k $tool"); done
done
# one_job K TOOL: case K under TOOL; prints its verdict as soon as it ends (a call cut
# short by its time limit still reports every finished run)
one_job() {
  IFS='|' read -r label f args <<< "${cases[$1]}"
  local log=$tmp/$1-$2.log what="$label ${args##*-target } $2"
  # shellcheck disable=SC2086
  timeout "${LIMIT:-300}" "$cs" --tool "$2" --error-exitcode 9 "$perfc" "$f" $args --run --quiet > "$log" 2>&1
  local r=$?
  if [ "$r" = 0 ] && grep -q '^valid      yes' "$log" && grep -q 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' "$log"; then
    echo "ok   $what"
  else
    { echo "FAIL $what (exit $r): $args"; grep -m6 -E 'ERROR|SUMMARY|hazard|Invalid|valid|error' "$log"; } | sed '2,$s/^/     /'
    [ -n "${OUT:-}" ] && cp "$log" "$OUT/fail-$1-$2.log"
    echo "$1 $2" >> "$tmp/failed"
  fi
}
t0=$(date +%s)
running=0
for j in "${jobs[@]}"; do
  # shellcheck disable=SC2086
  one_job $j &
  running=$((running + 1))
  if [ "$running" -ge "${JOBS:-1}" ]; then wait -n; running=$((running - 1)); fi
done
wait
[ -s "$tmp/failed" ] && fail=1
echo "$part: ${#jobs[@]} runs in $(( $(date +%s) - t0 )) s, $(date -u)"
exit "$fail"
