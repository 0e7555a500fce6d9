#!/usr/bin/env bash
# Padded tensor-core tiles without a GPU: every GEMM-family kernel of the GPU suite
# (bench/gpu/contractions/) at sizes no tile divides gets its default schedule on
# sm_80 and sm_90a; that schedule must pad (`tail=pad`), the PTX must be accepted by
# ptxas where one is installed (NVRTC where it is), and the scheduled loop nest run
# on the f64 interpreter must give the unscheduled kernel's outputs (the sums of
# every output, to 1e-6 relative): padded iterations change nothing.  Products of
# 2^24 multiply-adds or more whose rows are not 16-byte aligned must read their
# input operands from realigned copies (`realign`, tune/rules_tc.c).  The NHWC
# convolution (conv_nhwc.pdl) must get an implicit-GEMM template (tune/rules_igemm.c:
# gather's im2col tiles, the output pixels collapsed and padded): 2 images of 9 x 7,
# 64 channels to 24, stride 2, and a 1 x 1 convolution of 7 x 7, 16 channels to 8,
# with 16-bit and f32 results (and split-K); and conv1d (NWC) and conv3d (NDHWC).
# Usage: pad_compile.sh PERFC KERNEL_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/default_check.sh"
check() { # file target args...
  local f=$1 t=$2; shift 2
  local what="$f $t $*"
  "$perfc" "$dir/$f" -target "$t" "$@" -emit report --verbose > "$tmp/rep" 2>&1 || { bad "$what: report"; cat "$tmp/rep"; return; }
  grep -q 'tail=pad' "$tmp/rep" || { bad "$what: the default schedule did not pad"; return; }
  if [ -n "${want_origin:-}" ]; then
    grep -q "default schedule for contractions applies (rules: .*$want_origin" "$tmp/rep" || { bad "$what: the default schedule is not $want_origin"; return; }
  fi
  if [ -n "${want_realign:-}" ]; then
    grep -q "realign($want_realign, 8)" "$tmp/rep" || { bad "$what: the default schedule did not realign $want_realign"; return; }
  fi
  # the schedule as statements (the report lists it indented under the default-schedule line)
  sed -n '/default schedule for contractions applies/,/^kernel /p' "$tmp/rep" | grep '^  [a-z]' | grep -v '^  param ' > "$tmp/sched"
  # every parameter (the pipeline depth st, split-K's slice length kc) by its value
  local pn pv
  while read -r pn pv; do
    sed -i "s/, $pn\(,\|)\)/, $pv\1/" "$tmp/sched"
  done < <(sed -n '/default schedule for contractions applies/,/^kernel /p' "$tmp/rep" |
           sed -n 's/^  param \([a-z_][a-z_0-9]*\) = \([0-9]*\)$/\1 \2/p')
  # every launch a whole number of warps: the tuner prunes other thread blocks, so a
  # default schedule with one would never be measured by --autotune
  "$perfc" "$dir/$f" -target "$t" "$@" -emit cuda 2>/dev/null | sed -n '/Launches, in order/,/\*\//p' |
    grep -oE '\) +\([0-9]+, [0-9]+, [0-9]+\)' | tr -d '()' | awk -v w="$what" -F', *' '
      { n = $1 * $2 * $3; if (n > 32 && n % 32) { print "FAIL: " w ": a launch of " n " threads"; bad = 1 } }
      END { exit bad }' || fail=1
  "$perfc" "$dir/$f" -target "$t" "$@" -emit ptx -o "$tmp/k.ptx" > "$tmp/err" 2>&1
  local r=$?
  if [ $r = 0 ]; then
    if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
      "$ptxas" -arch="$t" "$tmp/k.ptx" -o "$tmp/k.cubin" > "$tmp/err" 2>&1 || { bad "$what: ptxas"; head -5 "$tmp/err"; }
    fi
  elif ! grep -qi 'nvrtc' "$tmp/err"; then
    bad "$what: -emit ptx exit $r"; head -5 "$tmp/err"
  fi
  "$perfc" "$dir/$f" -target interp "$@" --no-schedule --run --seed 3 > "$tmp/ref" 2>&1 || { bad "$what: interpreter"; return; }
  "$perfc" "$dir/$f" -target interp "$@" --no-schedule -s "$(cat "$tmp/sched")" --run --seed 3 > "$tmp/got" 2>&1 ||
    { bad "$what: the schedule on the interpreter"; head -5 "$tmp/got"; return; }
  dc_same_sums "$what"
}
for t in sm_80 sm_90a; do
  check mm.pdl $t -D U=bf16 -D M=200 -D N=300 -D K=100
  check mm.pdl $t -D U=f32 -D M=129 -D N=65 -D K=97
  check mm.pdl $t -D T=f16 -D U=f16 -D M=130 -D N=257 -D K=72
  check linear.pdl $t -D M=100 -D N=200 -D K=72
  check mm_tn.pdl $t -D M=130 -D N=96 -D K=50
  check bmm.pdl $t -D NB=3 -D M=100 -D N=70 -D K=40
  check linear_gelu.pdl $t -D M=129 -D N=130 -D K=96
  want_realign=B check mm.pdl $t -D U=bf16 -D M=300 -D N=301 -D K=251
  want_realign=W check linear.pdl $t -D M=257 -D N=260 -D K=255
  want_realign=A check bmm.pdl $t -D NB=8 -D M=200 -D N=130 -D K=101
  want_origin='implicit GEMM' check conv_nhwc.pdl $t -D N=2 -D H=9 -D W=7 -D C=64 -D K=24 -D U=2
  want_origin='implicit GEMM' check conv_nhwc.pdl $t -D N=1 -D H=7 -D W=7 -D C=16 -D K=8 -D R=1 -D S=1 -D P=0
  # an f32 result: the accumulator tile of scattered pixel rows gathered
  want_origin='implicit GEMM' check conv_nhwc.pdl $t -D N=2 -D H=9 -D W=7 -D C=64 -D K=24 -D V=f32
  # and with split-K (a 5 x 5 image: few tiles), its partial planes gathered too
  want_origin='split-K' check conv_nhwc.pdl $t -D N=1 -D H=5 -D W=5 -D C=128 -D K=32 -D V=f32
  # a 1-D convolution (NWC) and a 3-D one (NDHWC, weights [a, b, e, c, k], f32 result)
  want_origin='implicit GEMM' check conv1d_nwc.pdl $t -D N=2 -D L=50 -D C=16 -D K=24
  want_origin='implicit GEMM' check conv3d_ndhwc.pdl $t -D N=1 -D D=4 -D H=5 -D W=5 -D C=16 -D K=16
done
[ $fail = 0 ] && echo "padded tensor-core schedules: PTX and interpreter results checked"
exit $fail
