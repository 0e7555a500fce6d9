#!/usr/bin/env bash
# Compile-only test of every stdlib kernel for every CUDA target through the perfc
# command: `-emit ptx` must succeed (NVRTC) and, when ptxas is installed, the PTX
# must assemble.  Sizes without a default get odd values.  Exit 77 (skipped) when
# NVRTC cannot be loaded (an NVRTC compile error is a failure, not a skip): then
# only the CUDA C is checked (-emit cuda).
# Usage: stdlib_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
emit=ptx
if ! "$perfc" "$dir/softmax.pdl" -D R=3 -D C=5 -target sm_80 -emit ptx -o "$tmp/probe.ptx" 2>"$tmp/probe.err"; then
  if grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/probe.err"; then emit=cuda; echo "note: no NVRTC; checking CUDA C only"; fi
fi
fail=0; n=0
# one compile: NAME (for messages) FILE TARGET ARGS...
one() {
  local name=$1 f=$2 t=$3; shift 3
  local out="$tmp/$name.$t.$emit"
  n=$((n + 1))
  if ! "$perfc" "$f" "$@" -target "$t" -emit $emit -o "$out" 2>"$tmp/err"; then
    echo "FAIL $f $name $t:"; cat "$tmp/err"; fail=1; return
  fi
  if [ $emit = ptx ] && ! grep -q '\.entry' "$out"; then echo "FAIL $name $t: PTX without .entry"; fail=1; fi
  if [ $emit = ptx ] && [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=$t "$out" -o "$tmp/ptxas.cubin" || { echo "FAIL ptxas $name $t"; fail=1; }
  fi
}
for f in "$dir"/*.pdl; do
  # every kernel with its default schedules
  while read -r line; do
    name=$(sed 's/^kernel \([A-Za-z_0-9]*\).*/\1/' <<<"$line")
    params=$(sed 's/^[^(]*(\(.*\))/\1/' <<<"$line" | tr ',' '\n' | grep -v '=' | tr -d ' ')
    defs=(); v=19
    for p in $params; do defs+=(-D "$p=$v"); v=$((v + 4)); done
    for t in sm_80 sm_86 sm_89 sm_90 sm_90a; do one "$name" "$f" $t -k "$name" "${defs[@]}"; done
  done < <(grep -o '^kernel [A-Za-z_0-9]*([^)]*)' "$f")
  # every GPU schedule variant, for each dtype its guard allows, at the sizes of the
  # command line its comment documents (`#   perfc stdlib/F.pdl ... --schedule V ...`)
  while read -r line; do
    k=$(sed 's/^schedule \([A-Za-z_0-9]*\) .*/\1/' <<<"$line")
    v=$(sed 's/.* as \([A-Za-z_0-9]*\).*/\1/' <<<"$line")
    dts=$(sed -n 's/.* when T in \[\([^]]*\)\].*/\1/p' <<<"$line" | tr -d ' ' | tr ',' ' ')
    sizes=$(grep -E "^#   perfc [^ ]*$(basename "$f") .*--schedule $v " "$f" | head -1 | grep -oE -- '-D [A-Za-z_0-9]+=[0-9]+' | tr '\n' ' ')
    [ -n "$sizes" ] || { echo "FAIL $f: variant $v of $k documents no command line with its sizes"; fail=1; continue; }
    for dt in ${dts:-default}; do
      dd=(); [ "$dt" = default ] || dd=(-D T=$dt)
      name="$k.$v${dts:+.$dt}"
      for t in sm_80 sm_86 sm_89 sm_90 sm_90a; do
        # wgmma (variant wg) is sm_90a's alone: elsewhere it is refused with a reason
        if [ "$v" = wg ] && [ $t != sm_90a ]; then
          n=$((n + 1))
          if "$perfc" "$f" -k "$k" "${dd[@]}" --schedule $v $sizes -target "$t" -emit cuda -o "$tmp/wg.cu" 2>"$tmp/err" ||
             ! grep -q 'only sm_90a has' "$tmp/err"; then
            echo "FAIL $name $t: wgmma not refused with a reason"; fail=1
          fi
          continue
        fi
        one "$name" "$f" $t -k "$k" "${dd[@]}" --schedule $v $sizes
      done
    done
  done < <(grep -E '^schedule [A-Za-z_0-9]+ for gpu as ' "$f")
done
[ $fail = 0 ] && echo "stdlib: every kernel compiled for every target ($n compiles, -emit $emit)"
[ $fail = 0 ] && [ $emit = cuda ] && exit 77
exit $fail
