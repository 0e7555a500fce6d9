#!/usr/bin/env bash
# Compile-only checks of the GPU schedules and transformations through the perfc
# command (runs everywhere): the scheduled SIMT GEMM keeps its meaning (the f64
# interpreter gives the unscheduled kernel's result bit for bit), its CUDA C has
# the per-thread 8x8 accumulator, 128-bit shared loads and barriers, its PTX
# assembles; bind and mma refuse what they cannot prove.  Exit 77 without NVRTC
# for the PTX part.  Usage: sched_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
g="$dir/gemm.pdl"
sz=(-D M=256 -D N=128 -D K=48)
# gemm's GPU variant `tiled` applied on the interpreter (which takes no `for gpu`
# block, so its text goes in with -s): same sums.
sched=$(sed -n '/^schedule gemm for gpu as tiled /,/^}/p' "$g" | sed '1d;$d')
"$perfc" "$g" -k gemm --no-schedule -target interp --run "${sz[@]}" --seed 7 >"$tmp/a" 2>&1 || bad "interp unscheduled"
"$perfc" "$g" -k gemm --no-schedule -target interp --run "${sz[@]}" --seed 7 -s "$sched" >"$tmp/b" 2>&1 || bad "interp scheduled"
[ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] && [ -n "$(grep sum "$tmp/a")" ] || bad "scheduled result differs"
"$perfc" "$g" -k gemm --schedule tiled -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit cuda -o "$tmp/t.cu" || bad "emit cuda"
# The other stdlib GPU variants written for fixed sizes, applied at other fitting
# sizes on the interpreter: same sums.
same_sums() {  # FILE KERNEL VARIANT SIZES...
  local f=$1 k=$2 sk=$3; shift 3
  local s; s=$(sed -n "/^schedule $k for gpu as $sk /,/^}/p" "$f" | sed '1d;$d')
  [ -n "$s" ] || bad "$k: no variant $sk"
  "$perfc" "$f" -k "$k" --no-schedule -target interp --run "$@" --seed 5 >"$tmp/s0" 2>&1 || bad "$sk: interp unscheduled"
  "$perfc" "$f" -k "$k" --no-schedule -target interp --run "$@" --seed 5 -s "$s" >"$tmp/s1" 2>&1 || bad "$sk: interp scheduled: $(tail -3 "$tmp/s1")"
  [ -n "$(grep sum "$tmp/s0")" ] && [ "$(grep sum "$tmp/s0")" = "$(grep sum "$tmp/s1")" ] || bad "$sk: scheduled result differs"
}
same_sums "$dir/batched_gemm.pdl" batched_gemm tiled -D B=2 -D M=128 -D N=256 -D K=48
same_sums "$dir/conv2d.pdl" conv2d tiled -D N=2 -D C=16 -D H=8 -D W=28 -D K=64 -D R=3 -D S=3 -D U=1 -D P=1
grep -q 'float acc\[8\]\[8\];' "$tmp/t.cu" || bad "acc not privatised to 8x8"
grep -q 'float4' "$tmp/t.cu" || bad "no 128-bit loads"
grep -q '__syncthreads' "$tmp/t.cu" || bad "no barrier"
# Refusals with reasons.
# A reduction loop on blocks races (refused); on the threads of one block it is a
# block-wide reduction (tests/cuda/reduce_compile.sh has the rest).
"$perfc" "$g" -k gemm --no-schedule -emit ir "${sz[@]}" -s 'distribute(j); distribute(i); reorder(k, i1, j1); bind(k, block.x)' 2>"$tmp/e1" && bad "bind of a reduction to blocks accepted"
grep -q 'carries a dependence' "$tmp/e1" || bad "bind refusal reason: $(cat "$tmp/e1")"
"$perfc" "$g" -k gemm --no-schedule -emit ir "${sz[@]}" -s 'bind(i, warp.q)' 2>"$tmp/e2" && bad "bogus index accepted"
mm='split(i, 16, io, ii); split(j, 8, jo, ji); reorder(io, jo, ii, ji); cache(C, jo, name=acc); distribute(ji); distribute(ii); split(k, 16, ko, ki); reorder(ko, ii1, ji1, ki); mma(ii1, ji1, ki)'
"$perfc" "$g" -k gemm --no-schedule -emit ir "${sz[@]}" -s "$mm" 2>"$tmp/e3" && bad "mma on f32 accepted"
grep -q 'f16 x f16 or bf16 x bf16' "$tmp/e3" || bad "mma refusal reason: $(cat "$tmp/e3")"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -emit ir "${sz[@]}" -s "$mm" >"$tmp/mm.ir" 2>&1 || bad "mma on f16: $(cat "$tmp/mm.ir")"
grep -q 'mma' "$tmp/mm.ir" || bad "mma mark not printed"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target interp --run "${sz[@]}" --seed 3 -s "$mm" >"$tmp/m1" 2>&1 || bad "interp mma"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target interp --run "${sz[@]}" --seed 3 >"$tmp/m0" 2>&1 || bad "interp f16"
[ "$(grep sum "$tmp/m0")" = "$(grep sum "$tmp/m1")" ] || bad "mma-marked kernel differs on the interpreter"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target sm_90 -emit cuda "${sz[@]}" -s "$mm" 2>"$tmp/e6" && bad "CUDA emitted for an mma triple with no warps bound"
grep -q 'binds no warps' "$tmp/e6" || bad "mma emit refusal: $(cat "$tmp/e6")"
"$perfc" "$g" -k gemm --no-schedule -emit ir -D M=256 -D N=70000 -D K=48 -s 'bind(j, thread.x)' 2>"$tmp/e4" && bad "1024-thread limit not enforced"
if "$perfc" "$g" -k gemm --schedule tiled -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit ptx -o "$tmp/t.ptx" 2>"$tmp/e5"; then
  grep -q 'ld.shared.v4.f32' "$tmp/t.ptx" || bad "PTX without ld.shared.v4"
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then "$ptxas" -arch=sm_90 "$tmp/t.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas"; fi
elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/e5"; then
  [ $fail = 0 ] && { echo "no NVRTC: CUDA C and IR checks passed"; exit 77; }
else
  bad "emit ptx: $(cat "$tmp/e5")"
fi
[ $fail = 0 ] && echo "GPU schedules: all checks passed"
exit $fail
