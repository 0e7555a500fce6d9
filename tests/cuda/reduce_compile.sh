#!/usr/bin/env bash
# Compile-only checks of block-wide reductions (runs everywhere): bind accepts a
# thread loop whose only carried dependence is an associative update (+ * max min)
# of one shared or global element, refuses it for blocks and for indices that
# move with the loop but not one-to-one; the CUDA back end emits a per-thread
# partial, pf_block_reduce and one thread's update, rounds a block up to whole
# warps, and refuses the shapes it cannot emit with a reason; the stdlib softmax GPU
# schedule keeps its meaning on the interpreter and has two block-wide reductions,
# 128-bit row loads and no global temporaries in its CUDA C, also at widths no block
# divides; its PTX has shuffles and assembles; the layernorm GPU schedule likewise.  Exit 77 without NVRTC for the PTX part.
# Usage: reduce_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cat >"$tmp/k.pdl" <<'PDL'
kernel rs(R = 8, C = 100) {
  in  X: f32[R, C]
  out Y: f32[R]
  out Z: f32[R]
  Y[r] = sum(c) X[r, c]
  Z[r] = max(c) X[r, c] * 2.0
}
PDL
k="$tmp/k.pdl"
ok='fuse(Y.r, Z.r); bind(Y.r, block.x); bind(Y.c, thread.x); bind(Z.c, thread.x)'
"$perfc" "$k" -target sm_90 -emit cuda -s "$ok" -o "$tmp/a.cu" 2>"$tmp/e0" || bad "block reductions refused: $(cat "$tmp/e0")"
[ "$(grep -c 'pf_red = pf_block_reduce<' "$tmp/a.cu")" = 2 ] || bad "not two block reductions"
grep -q 'pf_block_reduce<0>(pf_red, 0.0f)' "$tmp/a.cu" && grep -q 'pf_block_reduce<2>' "$tmp/a.cu" || bad "wrong reduction operators"
grep -q 'if (threadIdx.x == 0) Y\[' "$tmp/a.cu" || bad "result not written by one thread"
grep -q '(128, 1, 1)' "$tmp/a.cu" || bad "block of 100 not rounded up to 128 threads"
"$perfc" "$k" -target interp --run --seed 4 >"$tmp/i0" 2>&1 || bad "interp"
"$perfc" "$k" -target interp --run --seed 4 -s "$ok" >"$tmp/i1" 2>&1 || bad "interp scheduled"
[ -n "$(grep sum "$tmp/i0")" ] && [ "$(grep sum "$tmp/i0")" = "$(grep sum "$tmp/i1")" ] || bad "scheduled result differs"
# bind refusals.
"$perfc" "$k" -emit ir -s 'distribute(Y.r); reorder(Y.c, Y.r1); bind(Y.c, block.x)' 2>"$tmp/e1" && bad "reduction over blocks accepted"
grep -q 'carries a dependence' "$tmp/e1" || bad "block refusal: $(cat "$tmp/e1")"
"$perfc" "$k" -emit ir -s 'distribute(Y.r); collapse(Y.r1, Y.c, f); bind(f, thread.x)' 2>"$tmp/e2" && bad "non-injective reduction index accepted"
grep -q 'carries a dependence' "$tmp/e2" || bad "collapsed reduction refusal: $(cat "$tmp/e2")"
# Shapes the back end refuses, with the reason.
"$perfc" "$k" -target sm_90 -emit cuda -s 'fuse(Y.r, Z.r); fuse(Y.c, Z.c); bind(Y.r, block.x); bind(Y.c, thread.x)' \
    2>"$tmp/e3" >/dev/null && bad "two reductions in one thread loop emitted"
grep -q 'more than one statement reduces across its threads' "$tmp/e3" || bad "two-reduction refusal: $(cat "$tmp/e3")"
"$perfc" "$k" -target sm_90 -emit cuda -s 'split(Y.c, 10, co, ci); bind(co, thread.y); bind(ci, thread.x)' \
    2>"$tmp/e4" >/dev/null && bad "2-D block reduction emitted"
grep -q 'reduces into Y across its threads' "$tmp/e4" || bad "2-D refusal: $(cat "$tmp/e4")"
# The stdlib softmax schedule.
s="$dir/softmax.pdl"
sched=$(sed -n '/^schedule softmax for gpu {/,/^}/p' "$s" | sed '1d;$d' | grep -v '^ *param' | sed 's/\bT\b/256/g')
"$perfc" "$s" --no-schedule -target interp --run -D R=5 -D C=3000 --seed 9 >"$tmp/s0" 2>&1 || bad "softmax interp"
"$perfc" "$s" --no-schedule -target interp --run -D R=5 -D C=3000 --seed 9 -s "$sched" >"$tmp/s1" 2>&1 || bad "softmax interp scheduled: $(cat "$tmp/s1")"
[ -n "$(grep sum "$tmp/s0")" ] && [ "$(grep sum "$tmp/s0")" = "$(grep sum "$tmp/s1")" ] || bad "softmax: scheduled result differs"
"$perfc" "$s" -target sm_90 -emit ir -D R=5 -D C=3000 >/dev/null 2>"$tmp/e5" || bad "softmax GPU schedule at 5x3000: $(cat "$tmp/e5")"
"$perfc" "$s" -target sm_90 -emit cuda -D R=8192 -D C=8192 -o "$tmp/s.cu" || bad "softmax emit cuda"
[ "$(grep -c 'pf_red = pf_block_reduce<' "$tmp/s.cu")" = 2 ] || bad "softmax: not two block reductions"
grep -q 'uint4' "$tmp/s.cu" || bad "softmax: row not read with 128-bit loads"
grep -q '(8192, 1, 1)  (1024, 1, 1)' "$tmp/s.cu" || bad "softmax: not one row per block of 1024"
grep -qE '\b[mes]\[' "$tmp/s.cu" && bad "softmax: a global temporary is still used"
# Widths no block size divides: the split's tail guard sits inside the thread loop
# and only skips contributions to the thread's partial.
"$perfc" "$s" -target sm_90 -emit cuda -D R=5 -D C=4100 -o "$tmp/s41.cu" 2>"$tmp/e6" || bad "softmax at C=4100: $(cat "$tmp/e6")"
[ "$(grep -c 'pf_red = pf_block_reduce<' "$tmp/s41.cu" 2>/dev/null)" = 2 ] || bad "softmax at C=4100: not two block reductions"
# The stdlib layernorm schedule: the same structure, mean and variance.
l="$dir/layernorm.pdl"
lsched=$(sed -n '/^schedule layernorm for gpu {/,/^}/p' "$l" | sed '1d;$d' | grep -v '^ *param' | sed 's/\bT\b/256/g')
for sz in "-D R=5 -D C=3000" "-D R=3 -D C=33"; do
  "$perfc" "$l" --no-schedule -target interp --run $sz --seed 9 >"$tmp/l0" 2>&1 || bad "layernorm interp"
  "$perfc" "$l" --no-schedule -target interp --run $sz --seed 9 -s "$lsched" >"$tmp/l1" 2>&1 || bad "layernorm interp scheduled: $(cat "$tmp/l1")"
  [ -n "$(grep sum "$tmp/l0")" ] && [ "$(grep sum "$tmp/l0")" = "$(grep sum "$tmp/l1")" ] || bad "layernorm $sz: scheduled result differs"
done
"$perfc" "$l" -target sm_90 -emit cuda -D R=5 -D C=4100 -o "$tmp/l.cu" 2>"$tmp/e7" || bad "layernorm GPU schedule: $(cat "$tmp/e7")"
[ "$(grep -c 'pf_red = pf_block_reduce<' "$tmp/l.cu" 2>/dev/null)" = 2 ] || bad "layernorm: not two block reductions"
if "$perfc" "$s" -target sm_90 -emit ptx -D R=8192 -D C=8192 -o "$tmp/s.ptx" 2>"$tmp/ep"; then
  grep -q 'shfl.sync.bfly' "$tmp/s.ptx" || bad "softmax PTX without warp shuffles"
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=sm_90 "$tmp/s.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas softmax"
    "$perfc" "$k" -target sm_80 -emit ptx -s "$ok" -o "$tmp/a.ptx" && "$ptxas" -arch=sm_80 "$tmp/a.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas rs"
  fi
elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/ep"; then
  [ $fail = 0 ] && { echo "no NVRTC: CUDA C and interpreter checks passed"; exit 77; }
else
  bad "emit ptx: $(cat "$tmp/ep")"
fi
[ $fail = 0 ] && echo "block reductions: all checks passed"
exit $fail
