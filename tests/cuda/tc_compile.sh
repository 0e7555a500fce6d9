#!/usr/bin/env bash
# Compile-only checks of the tensor-core GEMM schedule (stdlib/gemm.pdl, gemm's
# variant `tc` with T = f16 and T = bf16) through the perfc command, everywhere: each schedule
# keeps its meaning on the f64 interpreter (bit-identical sums to the unscheduled
# kernel at a small shape), its CUDA C keeps the accumulator in fragment layout and
# calls ldmatrix and mma helpers, and its PTX holds mma.sync.m16n8k16 of the right
# types and assembles with ptxas when one is given.  A contract violation (a
# thread.x loop around the triple) is refused with a reason.  Exit 77 without
# NVRTC for the PTX part.  Usage: tc_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
g="$dir/gemm.pdl"
sz=(-D M=256 -D N=384 -D K=96)
# the variant at the 4096^3 it was tuned for; later -D values override these
big=(-D M=4096 -D N=4096 -D K=4096)
for t in f16 bf16; do
  k=tc-$t
  "$perfc" "$g" -D T=$t --no-schedule -target interp --run "${sz[@]}" --seed 7 >"$tmp/a" 2>&1 || bad "$k interp unscheduled"
  # -target interp applies no `for gpu` schedule: the schedule's text goes in with -s
  sched=$(sed -n "/^schedule gemm for gpu as tc /,/^}/p" "$g" | sed '1d;$d' | tr '\n' ';')
  [ -n "$sched" ] || bad "$k: schedule not found"
  "$perfc" "$g" -D T=$t --no-schedule -target interp --run "${sz[@]}" --seed 7 -s "$sched" >"$tmp/b" 2>&1 || bad "$k interp scheduled"
  [ -n "$(grep sum "$tmp/a")" ] && [ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] || bad "$k: scheduled result differs"
  "$perfc" "$g" -D T=$t --schedule tc "${big[@]}" -target sm_90 -emit cuda -o "$tmp/$k.cu" || bad "$k emit cuda"
  grep -q 'float acc\[4\]\[8\]\[4\];' "$tmp/$k.cu" || bad "$k: accumulator not in fragment layout"
  grep -q "pf_mma_$t(acc\[3\]\[7\]" "$tmp/$k.cu" || bad "$k: no mma call"
  grep -q 'pf_ldsm_x2_t(' "$tmp/$k.cu" || bad "$k: B not read with ldmatrix.trans"
  grep -q 'pf_cp_async16(' "$tmp/$k.cu" || bad "$k: no 128-bit asynchronous staging copies"
done
# The contract: threadIdx.x is the lane, so a launch whose thread.x loops are not 32
# wide is refused.
mm='tile(i, j, 16, 8, io, jo, ii, ji); cache(C, jo, name=acc); distribute(ji); distribute(ii); split(k, 16, ko, kk); reorder(ko, ii1, ji1, kk); cache(A, ko, mem=shared, name=As); mma(ii1, ji1, kk); bind(io, block.y); bind(jo, block.x); bind(As_c0, thread.x)'
"$perfc" "$g" -D T=f16 --no-schedule -target sm_90 -emit cuda "${sz[@]}" -s "$mm" >/dev/null 2>"$tmp/e1" && bad "mma launch 16 threads wide accepted"
grep -q 'lane' "$tmp/e1" || bad "contract refusal reason: $(cat "$tmp/e1")"
if "$perfc" "$g" -D T=f16 --schedule tc "${big[@]}" -target sm_90 -emit ptx -o "$tmp/f16.ptx" 2>"$tmp/e5"; then
  "$perfc" "$g" -D T=bf16 --schedule tc "${big[@]}" -target sm_80 -emit ptx -o "$tmp/bf16.ptx" || bad "bf16 sm_80 ptx"
  grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$tmp/f16.ptx" || bad "f16 PTX without mma.sync"
  grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32' "$tmp/bf16.ptx" || bad "bf16 PTX without mma.sync"
  grep -q 'ldmatrix.sync.aligned.m8n8.x4.shared.b16' "$tmp/f16.ptx" || bad "PTX without ldmatrix"
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=sm_90 "$tmp/f16.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas f16"
    "$ptxas" -arch=sm_80 "$tmp/bf16.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas bf16"
  fi
elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/e5"; then
  [ $fail = 0 ] && { echo "no NVRTC: CUDA C and interpreter checks passed"; exit 77; }
else
  bad "emit ptx: $(cat "$tmp/e5")"
fi
[ $fail = 0 ] && echo "tensor-core schedules: all checks passed"
exit $fail
