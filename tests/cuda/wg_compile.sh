#!/usr/bin/env bash
# Compile-only checks of the Hopper warpgroup GEMM schedule (stdlib/gemm.pdl, gemm's
# variant `wg` with T = f16 and T = bf16) through the perfc command, everywhere: each schedule
# keeps its meaning on the f64 interpreter (bit-identical sums to the unscheduled
# kernel at a small shape), its CUDA C holds the accumulator in wgmma fragment
# layout, reads swizzled shared memory through descriptors, fills it with bulk
# tensor copies (TMA boxes in the same swizzle, counted in by stage barriers), and
# its PTX holds wgmma.mma_async of the right types and assembles with
# ptxas for sm_90a when one is given.  The contract is refused with reasons: a
# target without wgmma, a launch whose thread.x is not one warpgroup, a padded
# operand, a triple of the wrong shape, a pipeline too short for inflight=1.
# Exit 77 without NVRTC for the PTX part.  Usage: wg_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
g="$dir/gemm.pdl"
sz=(-D M=256 -D N=512 -D K=192)
# the variant at the 4096^3 it was tuned for; later -D values override these
big=(-D M=4096 -D N=4096 -D K=4096)
for t in f16 bf16; do
  k=wg-$t
  "$perfc" "$g" -D T=$t --no-schedule -target interp --run "${sz[@]}" --seed 7 >"$tmp/a" 2>&1 || bad "$k interp unscheduled"
  # -target interp applies no `for gpu` schedule: the schedule's text goes in with -s
  sched=$(sed -n "/^schedule gemm for gpu as wg /,/^}/p" "$g" | sed '1d;$d' | tr '\n' ';')
  [ -n "$sched" ] || bad "$k: schedule not found"
  "$perfc" "$g" -D T=$t --no-schedule -target interp --run "${sz[@]}" --seed 7 -s "$sched" >"$tmp/b" 2>&1 || bad "$k interp scheduled"
  grep -q 'wgmma' <("$perfc" "$g" -D T=$t --no-schedule -target interp -emit ir "${sz[@]}" -s "$sched" 2>&1) || bad "$k: schedule not applied"
  [ -n "$(grep sum "$tmp/a")" ] && [ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] || bad "$k: scheduled result differs"
  "$perfc" "$g" -D T=$t --schedule wg "${big[@]}" -target sm_90a -emit cuda -o "$tmp/$k.cu" || bad "$k emit cuda"
  grep -q 'float acc\[1\]\[32\]\[4\];' "$tmp/$k.cu" || bad "$k: accumulator not in wgmma fragment layout"
  grep -q "pf_wgmma_${t}_n256_01(&acc\[0\]\[0\]\[0\], pf_wg_desc(" "$tmp/$k.cu" || bad "$k: no wgmma call with descriptors"
  grep -q 'pf_tma2(As + ' "$tmp/$k.cu" || bad "$k: copies not bulk tensor copies"
  grep -q 'pf_mbar_wait(&pf_full_ko\[' "$tmp/$k.cu" || bad "$k: no wait on the stage barrier"
  grep -q 'pf_wg_wait<1>();' "$tmp/$k.cu" || bad "$k: inflight=1 not honoured"
  grep -q '__align__(1024)' "$tmp/$k.cu" || bad "$k: shared memory not 1024-aligned"
done
# The contract, refused with reasons.
"$perfc" "$g" -k gemm -D T=f16 --schedule wg -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit cuda >/dev/null 2>"$tmp/e1" && bad "wgmma accepted for sm_90"
grep -q 'only sm_90a has' "$tmp/e1" || bad "sm_90 refusal reason: $(cat "$tmp/e1")"
base='tile(i, j, 64, 64, io, jo, ii, ji); cache(C, jo, name=acc); distribute(ji); distribute(ii); split(k, 64, ko, kt); split(kt, 16, ks, kk); reorder(ko, ks, ii1, ji1, kk); cache(A, ko, mem=shared, name=As); cache(B, ko, mem=shared, name=Bs); bind(io, block.y); bind(jo, block.x)'
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target sm_90a -emit cuda "${sz[@]}" -s "$base; wgmma(ii1, ji1, kk); bind(As_c0, thread.x)" >/dev/null 2>"$tmp/e2" && bad "wgmma launch 64 threads wide accepted"
grep -q 'thread of a warpgroup' "$tmp/e2" || bad "warpgroup refusal reason: $(cat "$tmp/e2")"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target sm_90a -emit cuda "${sz[@]}" -s "$base; padding(As, 8); wgmma(ii1, ji1, kk); bind(As_c1, thread.x)" >/dev/null 2>"$tmp/e3" && bad "padded wgmma operand accepted"
grep -q 'no padding' "$tmp/e3" || bad "padding refusal reason: $(cat "$tmp/e3")"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target sm_90a -emit ir "${sz[@]}" -s "tile(i, j, 32, 64, io, jo, ii, ji); distribute(ji); distribute(ii); split(k, 16, ko, kk); reorder(ko, ii1, ji1, kk); wgmma(ii1, ji1, kk)" >/dev/null 2>"$tmp/e4" && bad "32-row wgmma triple accepted"
grep -q 'must run exactly 64 times' "$tmp/e4" || bad "shape refusal reason: $(cat "$tmp/e4")"
"$perfc" "$g" -k gemm --no-schedule -target sm_90a -emit ir "${sz[@]}" -s "tile(i, j, 64, 64, io, jo, ii, ji); distribute(ji); distribute(ii); split(k, 16, ko, kk); reorder(ko, ii1, ji1, kk); wgmma(ii1, ji1, kk)" >/dev/null 2>"$tmp/e5" && bad "f32 wgmma triple accepted"
grep -q 'f16 x f16 or bf16 x bf16' "$tmp/e5" || bad "dtype refusal reason: $(cat "$tmp/e5")"
"$perfc" "$g" -k gemm -D T=f16 --no-schedule -target sm_90a -emit ir "${sz[@]}" -s "$base; pipeline(ko, 2, inflight=1)" >/dev/null 2>"$tmp/e6" && bad "2-stage inflight pipeline accepted"
grep -q 'needs at least 3 stages' "$tmp/e6" || bad "inflight refusal reason: $(cat "$tmp/e6")"
# a kernel of two products (two launches, each its own accumulator): each launch
# keeps only its own alive after its pipeline (NVRTC rejected the other's name)
sw="$dir/../bench/gpu/contractions/swiglu.pdl"
"$perfc" "$sw" -D M=200 -D N=300 -D K=136 -target sm_90a -emit cuda -o "$tmp/sw.cu" || bad "swiglu emit cuda"
awk '/__global__/ {n++} n == 1' "$tmp/sw.cu" | grep -q 'c1_acc' && bad "swiglu: the first launch names the second's accumulator"
awk '/__global__/ {n++} n == 2' "$tmp/sw.cu" | grep -qE '[^_]acc\[0\]' && bad "swiglu: the second launch names the first's accumulator"
if "$perfc" "$g" -k gemm -D T=f16 --schedule wg -D M=4096 -D N=4096 -D K=4096 -target sm_90a -emit ptx -o "$tmp/f16.ptx" 2>"$tmp/e7"; then
  "$perfc" "$sw" -D M=200 -D N=300 -D K=136 -target sm_90a -emit ptx -o "$tmp/sw.ptx" || bad "swiglu sm_90a ptx"
  "$perfc" "$g" -k gemm -D T=bf16 --schedule wg -D M=4096 -D N=4096 -D K=4096 -target sm_90a -emit ptx -o "$tmp/bf16.ptx" || bad "bf16 sm_90a ptx"
  grep -q 'wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16' "$tmp/f16.ptx" || bad "f16 PTX without wgmma"
  grep -q 'wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16' "$tmp/bf16.ptx" || bad "bf16 PTX without wgmma"
  grep -q 'cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes' "$tmp/f16.ptx" || bad "PTX without bulk tensor copies"
  grep -q 'mbarrier.try_wait.parity.shared::cta.b64' "$tmp/f16.ptx" || bad "PTX without the stage barrier's wait"
  grep -q 'wgmma.wait_group.sync.aligned 1' "$tmp/f16.ptx" || bad "PTX without wait_group 1"
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=sm_90a "$tmp/f16.ptx" -o "$tmp/f16.cubin" || bad "ptxas f16"
    "$ptxas" -arch=sm_90a "$tmp/bf16.ptx" -o "$tmp/bf16.cubin" || bad "ptxas bf16"
  fi
elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/e7"; then
  [ $fail = 0 ] && { echo "no NVRTC: CUDA C and interpreter checks passed"; exit 77; }
else
  bad "emit ptx: $(cat "$tmp/e7")"
fi
[ $fail = 0 ] && echo "wgmma schedules: all checks passed"
exit $fail
