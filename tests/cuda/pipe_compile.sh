#!/usr/bin/env bash
# Compile-only checks of pipeline(loop, stages) (passes/xform_gpu.c) and its CUDA
# emission, everywhere: the pipelined tensor-core schedules keep their meaning on
# the f64 interpreter at shapes with fewer, as many and more K tiles than stages (4)
# (the stages are a serial no-op there), the staged buffers gain a stage dimension,
# the CUDA C issues cp.async copies with commit/wait groups, and the PTX holds
# cp.async.cg and cp.async.wait_group and assembles with ptxas when one is given.
# Refusals: a stage count out of range, a loop whose body does not start with
# shared copies, a loop inside a thread loop.  Exit 77 without NVRTC for the PTX
# part.  Usage: pipe_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
g="$dir/gemm.pdl"
# gemm's variant `tc` (T = f16, bf16) at the 4096^3 it was tuned for; later -D values override
big=(-D M=4096 -D N=4096 -D K=4096)
# -target interp applies no `for gpu` schedule: the variant's text goes in with -s
sched=$(sed -n "/^schedule gemm for gpu as tc /,/^}/p" "$g" | sed '1d;$d' | tr '\n' ';')
[ -n "$sched" ] || bad "no tc variant in $g"
for t in f16 bf16; do
  k=tc-$t
  for kk in 32 96 160; do
    sz=(-D M=128 -D N=256 -D K=$kk)
    "$perfc" "$g" -D T=$t --no-schedule -target interp --run "${sz[@]}" --seed 3 >"$tmp/a" 2>&1 || bad "$k K=$kk interp unscheduled"
    "$perfc" "$g" -D T=$t --no-schedule -target interp --run "${sz[@]}" --seed 3 -s "$sched" >"$tmp/b" 2>&1 || bad "$k K=$kk interp pipelined"
    [ -n "$(grep sum "$tmp/a")" ] && [ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] || bad "$k K=$kk: pipelined result differs"
  done
  "$perfc" "$g" -D T=$t --schedule tc "${big[@]}" -target sm_90 -emit cuda -o "$tmp/$k.cu" || bad "$k emit cuda"
  grep -q 'As: .*\[4\]\[128\]\[40\] staged in shared memory' "$tmp/$k.cu" || bad "$k: As has no stage dimension"
  grep -q '4-stage pipeline' "$tmp/$k.cu" || bad "$k: loop not pipelined"
  grep -q 'pf_cp_async16a(pf_sb + 0u + ' "$tmp/$k.cu" || bad "$k: A (bytes 0..) not copied with cp.async"
  grep -q 'pf_cp_wait<2>();' "$tmp/$k.cu" || bad "$k: no wait for S-2 pending groups"
  grep -q 'pf_cp_commit();' "$tmp/$k.cu" || bad "$k: no commit group"
done
# The same schedule without the pipeline keeps synchronous copies (the emitter's
# choice follows the IR mark, not a guess).
nopipe=$(mktemp "$tmp/np_XXXX.pdl")
sed '/pipeline(ko, 4)/d' "$g" >"$nopipe"
"$perfc" "$nopipe" -D T=f16 --schedule tc "${big[@]}" -target sm_90 -emit cuda -o "$tmp/np.cu" || bad "unpipelined emit"
grep -q 'pf_cp_async16(&\|pf_cp_async16a(pf_sb' "$tmp/np.cu" && bad "cp.async without a pipeline"
# Refusals.
sed 's/pipeline(ko, 4)/pipeline(ko, 1)/' "$g" >"$tmp/r1.pdl"
"$perfc" "$tmp/r1.pdl" -D T=f16 --schedule tc "${big[@]}" -target sm_90 -emit cuda >/dev/null 2>"$tmp/e1" && bad "1 stage accepted"
grep -q '2 to 8 stages' "$tmp/e1" || bad "stage-count refusal reason: $(cat "$tmp/e1")"
sed 's/pipeline(ko, 4)/pipeline(ks, 2)/' "$g" >"$tmp/r2.pdl"
"$perfc" "$tmp/r2.pdl" -D T=f16 --schedule tc "${big[@]}" -target sm_90 -emit cuda >/dev/null 2>"$tmp/e2" && bad "pipeline inside thread loops accepted"
grep -q 'block level' "$tmp/e2" || bad "thread-loop refusal reason: $(cat "$tmp/e2")"
sed 's/pipeline(ko, 4)/pipeline(io, 2)/' "$g" >"$tmp/r3.pdl"
"$perfc" "$tmp/r3.pdl" -D T=f16 --schedule tc "${big[@]}" -target sm_90 -emit cuda >/dev/null 2>"$tmp/e3" && bad "pipeline of a block loop accepted"
grep -q 'already marked' "$tmp/e3" || bad "block-loop refusal reason: $(cat "$tmp/e3")"
"$perfc" "$g" -k gemm --no-schedule -D M=64 -D N=64 -D K=64 -target interp -emit ir \
    -s 'split(k, 16, ko, ki); pipeline(ko, 2)' >/dev/null 2>"$tmp/e4" && bad "pipeline without copies accepted"
grep -q 'start with copies into shared memory' "$tmp/e4" || bad "no-copy refusal reason: $(cat "$tmp/e4")"
if "$perfc" "$g" -D T=f16 --schedule tc "${big[@]}" -target sm_90 -emit ptx -o "$tmp/f16.ptx" 2>"$tmp/e5"; then
  "$perfc" "$g" -D T=bf16 --schedule tc "${big[@]}" -target sm_80 -emit ptx -o "$tmp/bf16.ptx" || bad "bf16 sm_80 ptx"
  for f in f16 bf16; do
    grep -q 'cp.async.cg.shared.global' "$tmp/$f.ptx" || bad "$f PTX without cp.async.cg"
    grep -q 'cp.async.wait_group 2' "$tmp/$f.ptx" || bad "$f PTX without cp.async.wait_group"
    grep -q 'cp.async.commit_group' "$tmp/$f.ptx" || bad "$f PTX without cp.async.commit_group"
  done
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    "$ptxas" -arch=sm_90 "$tmp/f16.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas f16"
    "$ptxas" -arch=sm_80 "$tmp/bf16.ptx" -o "$tmp/ptxas.cubin" || bad "ptxas bf16"
  fi
elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/e5"; then
  [ $fail = 0 ] && { echo "no NVRTC: CUDA C and interpreter checks passed"; exit 77; }
else
  bad "emit ptx: $(cat "$tmp/e5")"
fi
[ $fail = 0 ] && echo "pipeline: all checks passed"
exit $fail
