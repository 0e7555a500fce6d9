#!/usr/bin/env bash
# Compile-only checks of flash attention on tensor cores (stdlib/attention.pdl's
# variant `flash`) everywhere: the schedule keeps the kernel's meaning on the f64
# interpreter (the output sums of the unscheduled kernel to 1e-6 relative, at two
# head sizes and with two key tiles); pass gpu-mma keeps the softmax in registers
# (the running maximum and sum as mma-rows vectors, quad reductions, P·V with A from
# registers); the CUDA C holds them so (no scores in shared memory, shuffles between
# the four lanes of a row, packed A fragments, ldmatrix from 32-bit shared
# addresses, the approximate exponential of a 16-bit result); the PTX assembles for
# sm_80 and sm_90a when ptxas is given.
# Exit 77 without NVRTC for the PTX part.  Usage: flash_compile.sh PERFC STDLIB_DIR [PTXAS]
set -u
perfc=$1; dir=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
a="$dir/attention.pdl"
sched=$(sed -n "/^schedule attention for gpu as flash /,/^}/p" "$a" | sed '1d;$d' | tr '\n' ';')
[ -n "$sched" ] || bad "flash schedule not found"
sums() { grep -oE 'sum -?[0-9.e+-]+' "$1" | awk '{print $2}'; }
for sz in "-D B=1 -D H=2 -D S=256 -D D=32" "-D B=2 -D H=1 -D S=128 -D D=48"; do
  # shellcheck disable=SC2086
  "$perfc" "$a" --no-schedule -target interp --run $sz --seed 5 > "$tmp/ref" 2>&1 || bad "$sz: unscheduled"
  # shellcheck disable=SC2086
  "$perfc" "$a" --no-schedule -target interp --run $sz --seed 5 -s "$sched" > "$tmp/got" 2>&1 || { bad "$sz: scheduled"; head -5 "$tmp/got"; }
  paste <(sums "$tmp/ref") <(sums "$tmp/got") | awk -v w="$sz" '
    { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; n++
      if (d > 1e-6 * (m > 1 ? m : 1)) { print "FAIL: " w ": sum " $2 " against " $1; bad = 1 } }
    END { if (n == 0) { print "FAIL: " w ": no sums"; bad = 1 } exit bad }' || fail=1
done
# a tile of 32 keys: the same moves, another online_softmax tile
sched32=${sched/online_softmax(O, O.j, 64, mask=inf)/online_softmax(O, O.j, 32, mask=inf)}
[ "$sched32" != "$sched" ] || bad "32-key tiles: online_softmax not found in the schedule"
"$perfc" "$a" --no-schedule -target interp --run -D B=1 -D H=1 -D S=128 -D D=32 --seed 6 > "$tmp/ref" 2>&1
"$perfc" "$a" --no-schedule -target interp --run -D B=1 -D H=1 -D S=128 -D D=32 --seed 6 -s "$sched32" > "$tmp/got" 2>&1 || bad "32-key tiles"
[ "$(sums "$tmp/ref" | cut -c1-9)" = "$(sums "$tmp/got" | cut -c1-9)" ] || bad "32-key tiles: $(sums "$tmp/got") against $(sums "$tmp/ref")"
big=(-D B=4 -D H=16 -D S=2048 -D D=64)
"$perfc" "$a" --schedule flash "${big[@]}" -target sm_90a -dump-after=gpu-mma > "$tmp/ir" 2>&1 || bad "dump after gpu-mma"
grep -qE 'mw: f32\[32\] local temp per-thread\(y=4\) mma-rows' "$tmp/ir" || bad "the running maximum is not an mma-rows vector"
grep -q 'quad-reduce' "$tmp/ir" || bad "no quad reduction"
grep -q 'quad-rows' "$tmp/ir" || bad "no quad-rows loop"
grep -qE 'A [0-9]+ fragments from registers' "$tmp/ir" || bad "P·V does not take A from registers"
"$perfc" "$a" --schedule flash "${big[@]}" -target sm_90a -dump-after=gpu-barrier 2>&1 | grep -q 'fast-exp' ||
  bad "a bf16 result without fast-exp"
for t in sm_80 sm_90a; do
  "$perfc" "$a" --schedule flash "${big[@]}" -target $t -emit cuda -o "$tmp/k.cu" || { bad "$t emit cuda"; continue; }
  grep -q 'pf_quad<2>' "$tmp/k.cu" || bad "$t: no quad maximum"
  grep -q 'pf_quad<0>' "$tmp/k.cu" || bad "$t: no quad sum"
  grep -q 'const unsigned pf_a0\[4\] = {pf_pk16(pr\[' "$tmp/k.cu" || bad "$t: A not packed from registers"
  grep -q 'pf_ldsm_x4_t(pf_q, pf_sb + .*pf_b1\[1\] = pf_q\[3\]' "$tmp/k.cu" || bad "$t: V's fragment pairs not read by ldmatrix .x4 from shared addresses"
  # a call, not the prelude's definition: exp(s - m) as one fused multiply-add and ex2
  grep -qE 'const float pf_fw[0-9]+ = pf_fexpd\(' "$tmp/k.cu" || bad "$t: exact exp for a bf16 result"
  # the row sum adds the exponentials before their rounding to bf16 (the stored value
  # forwarded, not read back: one conversion off the chain of every score)
  grep -qE 'pf_lq0 = pf_rop<0>\(pf_lq0, pf_fw[0-9]+\);' "$tmp/k.cu" || bad "$t: the sum reads the rounded exponentials back"
  grep -qE '(float|pf_bf16) \(\*(st|pt)\)' "$tmp/k.cu" && bad "$t: scores or probabilities in shared memory"
  "$perfc" "$a" --schedule flash "${big[@]}" -target $t -emit ptx -o "$tmp/k.ptx" 2> "$tmp/err"
  r=$?
  if [ $r = 0 ]; then
    grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32' "$tmp/k.ptx" || bad "$t: no mma.sync in the PTX"
    grep -q 'shfl.sync.bfly' "$tmp/k.ptx" || bad "$t: no shuffles in the PTX"
    if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
      "$ptxas" -arch=$t "$tmp/k.ptx" -o "$tmp/k.cubin" > "$tmp/err" 2>&1 || { bad "$t: ptxas"; head -5 "$tmp/err"; }
    fi
  elif grep -qi nvrtc "$tmp/err"; then
    [ $fail = 0 ] && exit 77
  else
    bad "$t: -emit ptx exit $r"; head -5 "$tmp/err"
  fi
done
[ $fail = 0 ] && echo "flash attention schedule: interpreter, lowering, CUDA C and PTX checked"
exit $fail
