#!/usr/bin/env bash
# Compile-only checks of collapse(outer, inner[, name]) and of the coalesced
# tensor-core staging it enables (runs everywhere): the rewrite keeps the kernel's
# meaning on the f64 interpreter, the dependence tests see through `v / B` and
# `v % B` (bind of a collapsed copy loop is proven, a reduction into a collapsed
# index is still refused), every refusal names its reason at file:line:col, and
# the CUDA C of gemm's variant tc reads its tiles with consecutive lanes on consecutive
# 16-byte chunks, stores C as 8-byte pairs and leaves out the dead copy-in of the
# accumulator.  Exit 77 without NVRTC for the PTX part.
# Usage: collapse_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cat >"$tmp/k.pdl" <<'PDL'
kernel cp(R = 12, C = 40) {
  in  X: f32[R, C]
  out Y: f32[R, C]
  Y[r, c] = X[r, c] * 2.0 + 1.0
}
kernel rs(R = 8, C = 12) {
  in  X: f32[R, C]
  out Y: f32[R]
  Y[r] = sum(c) X[r, c]
}
PDL
k="$tmp/k.pdl"
# The rewrite on the interpreter: same sums, and the printed loop.
co='split(c, 8, ac, av); split(r, 4, au, ax); collapse(ax, ac, af); reorder(af, au, av)'
"$perfc" "$k" -k cp -target interp --run --seed 5 >"$tmp/a" 2>&1 || bad "interp unscheduled"
"$perfc" "$k" -k cp -target interp --run --seed 5 -s "$co" >"$tmp/b" 2>&1 || bad "interp collapsed: $(cat "$tmp/b")"
[ -n "$(grep sum "$tmp/a")" ] && [ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] || bad "collapsed result differs"
"$perfc" "$k" -k cp -emit ir -s "$co" >"$tmp/ir" 2>&1 || bad "emit ir"
grep -q 'for af in 0..20' "$tmp/ir" || bad "collapsed loop not printed: $(cat "$tmp/ir")"
grep -q 'af / 5' "$tmp/ir" && grep -q 'af % 5' "$tmp/ir" || bad "collapsed indices: $(cat "$tmp/ir")"
# bind sees through the division: the collapsed copy loop runs on threads, and
# the 8 lanes of a 32-byte vector still form one vector loop.
"$perfc" "$k" -k cp -target sm_90 -emit cuda -s "$co; bind(af, thread.x); vectorize(av)" -o "$tmp/c.cu" 2>"$tmp/e0" ||
  bad "bind of a collapsed loop refused: $(cat "$tmp/e0")"
grep -q '(af / 5)' "$tmp/c.cu" && grep -q '(af % 5)' "$tmp/c.cu" || bad "collapsed index not emitted as plain division"
# Refusals.
"$perfc" "$k" -k rs -emit ir -s 'distribute(r); collapse(r1, c, f); bind(f, thread.x)' 2>"$tmp/e1" &&
  bad "bind of a collapsed reduction accepted"
grep -q 'carries a dependence' "$tmp/e1" && grep -q '<-s>:1:[0-9]*: error' "$tmp/e1" || bad "reduction refusal: $(cat "$tmp/e1")"
"$perfc" "$k" -k rs -emit ir -s 'collapse(r, c)' 2>"$tmp/e2" && bad "collapse of an imperfect nest accepted"
grep -q 'not perfectly nested' "$tmp/e2" || bad "imperfect nest refusal: $(cat "$tmp/e2")"
"$perfc" "$k" -k rs -emit ir -s 'distribute(r); collapse(c, r1)' 2>"$tmp/e3" && bad "collapse of unrelated loops accepted"
grep -q 'not directly inside' "$tmp/e3" || bad "unrelated loops refusal: $(cat "$tmp/e3")"
"$perfc" "$k" -k cp -emit ir -s 'unroll(c); collapse(r, c)' 2>"$tmp/e4" && bad "collapse of a marked loop accepted"
grep -q 'already marked unroll' "$tmp/e4" || bad "marked loop refusal: $(cat "$tmp/e4")"
"$perfc" "$k" -k cp -emit ir -s 'collapse(r, c, X)' 2>"$tmp/e5" && bad "collapse onto a buffer's name accepted"
grep -q 'already in use' "$tmp/e5" || bad "buffer name refusal: $(cat "$tmp/e5")"
"$perfc" "$k" -k cp -emit ir -s 'split(c, 8); collapse(r, co, ci)' 2>"$tmp/e6" && bad "collapse onto a name in use accepted"
grep -q 'already in use' "$tmp/e6" || bad "name refusal: $(cat "$tmp/e6")"
"$perfc" "$k" -k cp -emit ir -D R=0 -s 'collapse(r, c)' 2>"$tmp/e7" && bad "collapse of an empty loop accepted"
# The tensor-core GEMMs: coalesced copies, paired stores, no dead copy-in.
g="$dir/gemm.pdl"
tc=(--schedule tc -D M=4096 -D N=4096 -D K=4096)
for t in f16 bf16; do
  kk=tc-$t
  "$perfc" "$g" -D T=$t "${tc[@]}" -target sm_90 -emit cuda -o "$tmp/$kk.cu" || bad "$kk emit cuda"
  grep -q 'pf_cp_async16a(pf_sb + 0u + .*(af >> 2).*(af & 3)' "$tmp/$kk.cu" || bad "$kk: A copies not along rows"
  grep -q 'make_float2(pf_st\[0\], pf_st\[1\])' "$tmp/$kk.cu" || bad "$kk: C not stored in 8-byte pairs"
  # the copy-in of the accumulator is there after simplify, gone after gpu-dead-fill
  "$perfc" "$g" -D T=$t "${tc[@]}" -target sm_90 -dump-after=simplify 2>&1 | grep -q '^| | | | | | acc\[.*\] = C\[' || bad "$kk: no copy-in to drop"
  "$perfc" "$g" -D T=$t "${tc[@]}" -target sm_90 -dump-after=gpu-dead-fill 2>&1 | grep -q 'acc\[.*\] = C\[' && bad "$kk: dead copy-in kept"
  grep -q '= C\[' "$tmp/$kk.cu" && bad "$kk: still reads C"
done
if "$perfc" "$g" -k gemm -D T=f16 --schedule tc -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit ptx -o "$tmp/f16.ptx" 2>"$tmp/ep"; then
  grep -q 'st.global.v2.f32' "$tmp/f16.ptx" || bad "PTX without 8-byte C stores"
  grep -q 'cp.async.cg.shared.global' "$tmp/f16.ptx" || bad "PTX without cp.async"
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=sm_90 "$tmp/f16.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas f16"
    "$perfc" "$k" -k cp -target sm_90 -emit ptx -s "$co; bind(af, thread.x)" -o "$tmp/c.ptx" && "$ptxas" -arch=sm_90 "$tmp/c.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas collapsed copy"
  fi
elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/ep"; then
  [ $fail = 0 ] && { echo "no NVRTC: CUDA C, IR and interpreter checks passed"; exit 77; }
else
  bad "emit ptx: $(cat "$tmp/ep")"
fi
[ $fail = 0 ] && echo "collapse: all checks passed"
exit $fail
