#!/usr/bin/env bash
# Compile-only checks of gemm's variant tiled32 (stdlib/gemm.pdl: the SIMT f32 GEMM with a K
# step of 32), everywhere: its schedule, applied to the general gemm kernel, keeps
# the meaning on the f64 interpreter (same sums as unscheduled) at K = 32, 96, 160
# for every choice of its parameters (KU: the k unroll, ST: the stages); the CUDA
# C stages A as [ST][128][36] and B as [ST][32][128] with 16-byte cp.async in an
# ST-stage pipeline; the PTX assembles with ptxas for sm_90 with no spills and at
# most 255 registers (the default, KU = 16, takes 128 with CUDA 12/13: two blocks
# of 256 threads per SM; printed, not enforced).  Its binds rest on the
# mixed-radix dependence test (passes/deps.c).  Exit 77 without NVRTC for the PTX part.
# Usage: k32_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
g="$dir/gemm.pdl"
grep -q '^schedule gemm for gpu as tiled32 ' "$g" || { echo "FAIL: no tiled32 variant of gemm in $g"; exit 1; }
sched=$(sed -n '/^schedule gemm for gpu as tiled32 /,/^}/p' "$g" | sed '1d;$d')
variant() {  # KU ST: the schedule with both parameters fixed
  sed "s/param KU in \[[^]]*\]/param KU = $1/; s/param ST in \[[^]]*\]/param ST = $2/" <<<"$sched"
}
for v in "16 2" "32 2" "16 3" "32 3"; do
  set -- $v
  s=$(variant "$1" "$2")
  for kk in 32 96 160; do
    sz=(-D M=256 -D N=128 -D K=$kk)
    "$perfc" "$g" -k gemm --no-schedule -target interp --run "${sz[@]}" --seed 11 >"$tmp/a" 2>&1 || bad "KU=$1 ST=$2 K=$kk: interp unscheduled"
    "$perfc" "$g" -k gemm --no-schedule -target interp --run "${sz[@]}" --seed 11 -s "$s" >"$tmp/b" 2>&1 ||
      bad "KU=$1 ST=$2 K=$kk: interp scheduled: $(tail -3 "$tmp/b")"
    [ -n "$(grep sum "$tmp/a")" ] && [ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] || bad "KU=$1 ST=$2 K=$kk: scheduled result differs"
  done
  "$perfc" "$g" -k gemm --no-schedule -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit cuda -s "$s" -o "$tmp/v$1_$2.cu" ||
    bad "KU=$1 ST=$2: emit cuda"
  grep -q "As: f32\[$2\]\[128\]\[36\] staged in shared memory" "$tmp/v$1_$2.cu" || bad "KU=$1 ST=$2: As shape"
  grep -q "Bs: f32\[$2\]\[32\]\[128\] staged in shared memory" "$tmp/v$1_$2.cu" || bad "KU=$1 ST=$2: Bs shape"
  grep -q "$2-stage pipeline" "$tmp/v$1_$2.cu" || bad "KU=$1 ST=$2: ko not pipelined"
  grep -q 'pf_cp_async16(&As\[' "$tmp/v$1_$2.cu" || bad "KU=$1 ST=$2: A not copied with cp.async"
  grep -q 'pf_cp_async16(&Bs\[' "$tmp/v$1_$2.cu" || bad "KU=$1 ST=$2: B not copied with cp.async"
  grep -q 'float acc\[8\]\[8\];' "$tmp/v$1_$2.cu" || bad "KU=$1 ST=$2: acc not privatised to 8x8"
done
# The stdlib kernel itself (its defaults: KU = 16, ST = 2).
"$perfc" "$g" -k gemm --schedule tiled32 -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit cuda -o "$tmp/t.cu" || bad "tiled32 emit cuda"
grep -q '2-stage pipeline' "$tmp/t.cu" || bad "tiled32: default is not 2 stages"
grep -q 'gemm_0  (32, 32, 1)  (16, 16, 1)  69632' "$tmp/t.cu" || bad "tiled32 launch: $(grep -A1 'Launches' "$tmp/t.cu")"
# Refused: a mapping under which threads would update one element (f / 4 names a
# column of C, f % 4 a k); tests/xform (test_xform, test_deps) has the unit cases,
# overlapping mixed-radix digits included.
"$perfc" "$g" -k gemm --no-schedule -D M=128 -D N=128 -D K=64 -emit ir \
    -s 'distribute(j) split(j1, 4, jo, jv) collapse(jv, k, f) bind(f, thread.x)' >/dev/null 2>"$tmp/e1" &&
  bad "threads adding into one element through f / 4 accepted"
grep -q 'carries a dependence' "$tmp/e1" || bad "refusal reason: $(cat "$tmp/e1")"
# The autotuner's GPU space for an f32 GEMM holds the K step 32 template (the same
# schedule with parameters vs, st, ku); at its defaults it keeps the meaning.
PERFC_TUNE_SPACE=1 "$perfc" "$g" -k gemm -target sm_90 -D M=4096 -D N=4096 -D K=4096 --autotune >"$tmp/space" 2>&1
grep -q 'rules: GPU shared-memory tiles, cp.async pipeline, K step 32' "$tmp/space" || bad "no K step 32 template: $(grep template "$tmp/space")"
t32=$(sed -n '/cp.async pipeline, K step 32$/,/^}/p' "$tmp/space" | sed '1,2d;$d')
grep -q 'param st in \[2, 3\]' <<<"$t32" && grep -q 'param ku in \[16, 32\]' <<<"$t32" || bad "K step 32 template parameters: $t32"
sz=(-D M=128 -D N=256 -D K=96)
"$perfc" "$g" -k gemm --no-schedule -target interp --run "${sz[@]}" --seed 13 >"$tmp/a" 2>&1 || bad "interp unscheduled"
"$perfc" "$g" -k gemm --no-schedule -target interp --run "${sz[@]}" --seed 13 -s "$t32" >"$tmp/b" 2>&1 || bad "template: $(tail -3 "$tmp/b")"
[ -n "$(grep sum "$tmp/a")" ] && [ "$(grep sum "$tmp/a")" = "$(grep sum "$tmp/b")" ] || bad "K step 32 template: result differs"
# Static pruning by shared memory: 3 stages (104 448 B) exceed sm_86's 99 KB per
# block, which the code generator's launch table refuses (the tuner prunes those
# candidates before compiling); sm_90 takes them.
s3=$(variant 16 3)
"$perfc" "$g" -k gemm --no-schedule -D M=4096 -D N=4096 -D K=4096 -target sm_86 -emit cuda -s "$s3" >/dev/null 2>"$tmp/e6" &&
  bad "104 448 B of shared memory accepted on sm_86"
grep -q 'needs 104448 bytes of shared memory' "$tmp/e6" || bad "sm_86 refusal: $(cat "$tmp/e6")"
# PTX and ptxas.
for v in "16 2" "32 2" "16 3" "32 3"; do
  set -- $v
  s=$(variant "$1" "$2")
  if "$perfc" "$g" -k gemm --no-schedule -D M=4096 -D N=4096 -D K=4096 -target sm_90 -emit ptx -s "$s" -o "$tmp/v.ptx" 2>"$tmp/e5"; then
    grep -q 'cp.async.cg.shared.global' "$tmp/v.ptx" || bad "KU=$1 ST=$2: PTX without cp.async.cg"
    if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
      "$ptxas" -v -arch=sm_90 "$tmp/v.ptx" -o "$tmp/v.cubin" >"$tmp/px" 2>&1 || { bad "ptxas KU=$1 ST=$2: $(tail -3 "$tmp/px")"; continue; }
      regs=$(grep -o 'Used [0-9]* registers' "$tmp/px" | grep -o '[0-9]*' | head -1)
      echo "KU=$1 ST=$2: ${regs:-?} registers, $(grep -o '[0-9]* bytes spill stores' "$tmp/px" | head -1)"
      grep -q ' 0 bytes spill stores, 0 bytes spill loads' "$tmp/px" || bad "KU=$1 ST=$2 spills: $(cat "$tmp/px")"
      [ -n "$regs" ] && [ "$regs" -le 255 ] || bad "KU=$1 ST=$2: registers ${regs:-unknown}"
    fi
  elif grep -qE 'cannot compile CUDA for [^:]*: NVRTC' "$tmp/e5"; then
    [ $fail = 0 ] && { echo "no NVRTC: CUDA C and interpreter checks passed"; exit 77; }
    exit $fail
  else
    bad "KU=$1 ST=$2 emit ptx: $(cat "$tmp/e5")"
  fi
done
[ $fail = 0 ] && echo "gemm --schedule tiled32: all checks passed"
exit $fail
