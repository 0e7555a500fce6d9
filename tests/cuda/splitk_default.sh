#!/usr/bin/env bash
# Split-K as the GPU default for K-large products a user writes (tune/rules_tc.c):
# with no schedule, kernels written fresh (bench/gpu/kernels/user_klarge.pdl: bf16 ->
# f32 with names of their own; an nn.Linear layer with bias and ReLU, bf16 out) get
# the split-K template on sm_90a (wgmma) and sm_80 (mma.sync); its schedule keeps
# each kernel's meaning on the f64 interpreter at small sizes, one of them ragged
# (padded tiles), one whose loops are named kz, kr, zx; the lowering has the
# slices on block.z and a combination nest with the epilogue; the PTX assembles for
# sm_80 and sm_90a when ptxas is given.
# Products with enough output tiles (2048 x 2048 x 8192, 4096^3) and batched ones
# do not get it.  Exit 77 without NVRTC for the PTX part.
# Usage: splitk_default.sh PERFC ROOT [PTXAS]
set -u
perfc=$1; root=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; nortc=0
bad() { echo "FAIL: $*"; fail=1; }
origin() { "$perfc" "$@" -emit report --verbose 2>&1 | grep -o 'applies (rules: [^;]*' | head -1; }
# the values the interpreter prints of each output: sum, sum|x| and the first eight
vals() { grep -E 'sum|first:' "$1" | tr -s ' ' '\n' | grep -E '^-?[0-9]'; }
check() { # kernel target small-sizes
  local k=$1 t=$2 small=$3 what="$1 $2 $3"
  # shellcheck disable=SC2086
  "$perfc" "$u" -k "$k" $small -target "$t" -emit report --verbose > "$tmp/rep" 2>&1 || { bad "$what: report"; return; }
  grep -q 'applies (rules: GPU.*split-K' "$tmp/rep" || { bad "$what: no split-K default"; grep -m1 applies "$tmp/rep"; return; }
  sed -n '/the default schedule for contractions applies/,/^kernel /p' "$tmp/rep" | grep '^  [a-z]' > "$tmp/sched"
  grep -q 'rfactor(.*expand=1)' "$tmp/sched" || { bad "$what: no rfactor(.., expand=1)"; return; }
  # shellcheck disable=SC2086
  "$perfc" "$u" -k "$k" $small -target interp --no-schedule --run --seed 4 > "$tmp/ref" 2>&1 || { bad "$what: interpreter"; return; }
  # shellcheck disable=SC2086
  "$perfc" "$u" -k "$k" $small -target interp --no-schedule -s "$(cat "$tmp/sched")" --run --seed 4 > "$tmp/got" 2>&1 ||
    { bad "$what: the schedule on the interpreter"; head -3 "$tmp/got"; return; }
  paste <(vals "$tmp/ref") <(vals "$tmp/got") | awk -v w="$what" '
    { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; n++
      if (d > 1e-6 * (m > 1 ? m : 1)) { print "FAIL: " w ": " $2 " against " $1; bad = 1 } }
    END { if (n < 10) { print "FAIL: " w ": no values"; bad = 1 } exit bad }' || fail=1
}
ptx() { # kernel target sizes
  local k=$1 t=$2 big=$3 what="$1 $2 $3"
  # shellcheck disable=SC2086
  "$perfc" "$u" -k "$k" $big -target "$t" -emit ir > "$tmp/ir" 2>&1 || { bad "$what: -emit ir"; return; }
  grep -q '^for kz[0-9]*_init in 0\.\.[0-9]* block\.z' "$tmp/ir" || bad "$what: the slices are not on block.z"
  [ "$(grep -c '^for ' "$tmp/ir")" = 2 ] || bad "$what: not two launches (partial products, combination)"
  grep -q '+= .*_rf\[kz[0-9]*_comb' "$tmp/ir" || bad "$what: no combination of the partials"
  # shellcheck disable=SC2086
  if "$perfc" "$u" -k "$k" $big -target "$t" -emit ptx -o "$tmp/k.ptx" 2> "$tmp/err"; then
    if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
      "$ptxas" -arch="$t" "$tmp/k.ptx" -o "$tmp/k.cubin" > "$tmp/err" 2>&1 || { bad "$what: ptxas"; head -3 "$tmp/err"; }
    fi
  elif grep -qi nvrtc "$tmp/err"; then nortc=1
  else bad "$what: -emit ptx"; head -3 "$tmp/err"; fi
}
u="$root/bench/gpu/kernels/user_klarge.pdl"
big="-D M=1024 -D N=1024 -D K=16384"
for t in sm_90a sm_80; do
  check kl $t "-D M=128 -D N=256 -D K=1024"
  check lin $t "-D M=200 -D N=250 -D K=1024"
  ptx kl $t "$big"
  ptx lin $t "$big"
done
# loops named as the template names its own: it takes other names
check names sm_90a "-D M=128 -D N=256 -D K=1024"
ptx names sm_90a "$big"
grep -q 'Y\[.*max(' <("$perfc" "$u" -k lin $big -target sm_90a -emit ir 2>&1 | sed -n '/^for h\.i/,$p') ||
  bad "lin: the bias and ReLU are not in the combination nest"
# enough output tiles, or a batch: no split-K by default
c="$root/bench/gpu/contractions"
for t in sm_90a sm_80; do
  for s in "-D M=2048 -D N=2048 -D K=8192" "-D M=4096 -D N=4096 -D K=4096"; do
    # shellcheck disable=SC2086
    o=$(origin "$u" -k kl $s -target $t)
    case "$o" in *"rules: GPU"*) ;; *) bad "kl $t $s: no tensor-core default ($o)";; esac
    case "$o" in *split-K*) bad "kl $t $s: split-K with enough output tiles ($o)";; esac
  done
  o=$(origin "$c/bmm.pdl" -D NB=2 -D M=128 -D N=128 -D K=16384 -target $t)
  case "$o" in *split-K*) bad "bmm $t: split-K on a batched product ($o)";; esac
done
[ $fail = 0 ] && [ $nortc = 1 ] && exit 77
[ $fail = 0 ] && echo "split-K default: two kernels on two targets and one with clashing names checked, and three products that keep their tiles"
exit $fail
