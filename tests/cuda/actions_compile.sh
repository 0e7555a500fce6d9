#!/usr/bin/env bash
# Every move `--actions` offers for a GPU target must give a kernel the CUDA back end
# compiles: a legal schedule is never refused late, by the emitter.  From the stdlib
# GEMM, softmax and layernorm (unscheduled, and with their GPU schedules), each
# offered move is applied with -s, CUDA C is generated, and NVRTC compiles it (PTX;
# ptxas assembles it when installed).  Deeper levels apply moves on top of a
# deterministic sample of the states of the level before.
# Usage: actions_compile.sh PERFC STDLIB_DIR DEPTH KEEP NVRTC_EVERY [PTXAS]
#   DEPTH levels of moves; KEEP states carried to the next level; every
#   NVRTC_EVERY-th state goes through NVRTC (1: all), the others to CUDA C only.
# Exit 77 (skipped) when NVRTC cannot be loaded: then only CUDA C is checked.
set -u
perfc=$1; dir=$2; depth=${3:-1}; keep=${4:-4}; every=${5:-1}; ptxas=${6:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
nvrtc=1
if ! "$perfc" "$dir/softmax.pdl" -D R=3 -D C=5 -target sm_80 -emit ptx -o "$tmp/probe.ptx" 2>"$tmp/probe.err"; then
  grep -qE 'NVRTC' "$tmp/probe.err" && { nvrtc=0; echo "note: no NVRTC; checking CUDA C only"; }
fi
fail=0; n=0; nn=0
check() {   # check TARGET "sched" ARGS...: the state compiles
  local t=$1 s=$2; shift 2
  n=$((n + 1))
  local emit=cuda
  if [ $nvrtc = 1 ] && [ $((n % every)) = 0 ]; then emit=ptx; nn=$((nn + 1)); fi
  if ! "$perfc" "$@" -target "$t" -s "$s" -emit $emit -o "$tmp/out" 2>"$tmp/err"; then
    echo "FAIL $* -target $t -s '$s' -emit $emit:"; cat "$tmp/err"; fail=1; return
  fi
  if [ $emit = ptx ] && [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=$t "$tmp/out" -o "$tmp/out.cubin" 2>"$tmp/err" || { echo "FAIL ptxas $* -s '$s'"; cat "$tmp/err"; fail=1; }
  fi
}
run() {     # run TARGET ARGS...: the breadth-first walk from one kernel
  local t=$1; shift
  local -a states=("") next
  for ((lv = 1; lv <= depth; lv++)); do
    next=()
    for s in "${states[@]}"; do
      "$perfc" "$@" -target "$t" ${s:+-s "$s"} --actions >"$tmp/acts" 2>"$tmp/err" || { echo "FAIL --actions $* -s '$s'"; cat "$tmp/err"; fail=1; continue; }
      while read -r a; do
        [ -z "$a" ] && continue
        local ns="${s:+$s; }$a"
        check "$t" "$ns" "$@"
        next+=("$ns")
      done <"$tmp/acts"
    done
    # a deterministic sample of this level's states for the next
    states=()
    local m=${#next[@]}
    for ((i = 0; i < keep && m > 0; i++)); do states+=("${next[$(( (i * 7919 + lv * 31) % m ))]}"); done
  done
}
run sm_80 "$dir/gemm.pdl" -k gemm --no-schedule -D M=64 -D N=64 -D K=32
run sm_80 "$dir/softmax.pdl" --no-schedule -D R=4 -D C=256
run sm_80 "$dir/softmax.pdl" -D R=4 -D C=256
run sm_80 "$dir/layernorm.pdl" --no-schedule -D R=4 -D C=256
run sm_90a "$dir/layernorm.pdl" -D R=4 -D C=256
[ $fail = 0 ] && echo "actions: $n moved states compiled ($nn through NVRTC), depth $depth"
[ $fail = 0 ] && [ $nvrtc = 0 ] && exit 77
exit $fail
