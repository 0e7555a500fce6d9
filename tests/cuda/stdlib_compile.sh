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
for f in "$dir"/*.pdl; do
  while read -r line; do
    name=$(sed 's/^kernel \([A-Za-z_0-9]*\).*/\1/' <<<"$line")
    params=$(sed 's/^[^(]*(\(.*\))/\1/' <<<"$line" | tr ',' '\n' | grep -v '=' | tr -d ' ')
    defs=(); v=19
    for p in $params; do defs+=(-D "$p=$v"); v=$((v + 4)); done
    for t in sm_80 sm_86 sm_89 sm_90 sm_90a; do
      out="$tmp/$name.$t.$emit"
      n=$((n + 1))
      # wgmma schedules (gemm_wg_*) are sm_90a's alone: elsewhere they are refused
      if [ "${name#gemm_wg_}" != "$name" ] && [ $t != sm_90a ]; then
        if "$perfc" "$f" -k "$name" "${defs[@]}" -target "$t" -emit cuda -o "$out" 2>"$tmp/err" ||
           ! grep -q 'only sm_90a has' "$tmp/err"; then
          echo "FAIL $name $t: wgmma not refused with a reason"; fail=1
        fi
        continue
      fi
      if ! "$perfc" "$f" -k "$name" "${defs[@]}" -target "$t" -emit $emit -o "$out" 2>"$tmp/err"; then
        echo "FAIL $f $name $t:"; cat "$tmp/err"; fail=1; continue
      fi
      if [ $emit = ptx ] && ! grep -q '\.entry' "$out"; then echo "FAIL $name $t: PTX without .entry"; fail=1; fi
      if [ $emit = ptx ] && [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
        "$ptxas" -arch=$t "$out" -o "$tmp/ptxas.cubin" || { echo "FAIL ptxas $name $t"; fail=1; }
      fi
    done
  done < <(grep -o '^kernel [A-Za-z_0-9]*([^)]*)' "$f")
done
[ $fail = 0 ] && echo "stdlib: every kernel compiled for every target ($n compiles, -emit $emit)"
[ $fail = 0 ] && [ $emit = cuda ] && exit 77
exit $fail
