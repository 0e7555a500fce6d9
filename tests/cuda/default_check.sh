# Shared by the tests of a GPU default schedule (flash_default.sh, decode_default.sh,
# pad_compile.sh): sourced, it defines bad, sums, dc_same_sums and
#   dc_check ORIGIN SEED HOOK FILE SMALL BIG
# which asks for the default schedule of FILE at the SMALL sizes on sm_90a (the report
# must name ORIGIN, the template), runs that schedule on the f64 interpreter against
# the unscheduled kernel (output sums to 1e-6 relative, inputs from SEED), calls HOOK
# FILE BIG WHAT TARGET for sm_80 and sm_90a (the caller's own checks of the lowering),
# and assembles the PTX at the BIG sizes with ptxas when one is given.  The schedule
# stays in $tmp/sched for the caller's greps.  Expects perfc, ptxas and tmp set; sets
# fail (a check failed) and nortc (NVRTC missing: the caller exits 77).
fail=0; nortc=0
bad() { echo "FAIL: $*"; fail=1; }
sums() { grep -oE 'sum -?[0-9.e+-]+' "$1" | awk '{print $2}'; }
# dc_same_sums WHAT: the output sums in $tmp/got equal those in $tmp/ref to 1e-6
# relative (padded or staged iterations change nothing)
dc_same_sums() {
  paste <(sums "$tmp/ref") <(sums "$tmp/got") | awk -v w="$1" '
    { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; n++
      if (d > 1e-6 * (m > 1 ? m : 1)) { print "FAIL: " w ": sum " $2 " against " $1; bad = 1 } }
    END { if (n == 0) { print "FAIL: " w ": no sums"; bad = 1 } exit bad }' || fail=1
}
dc_check() {
  local origin=$1 seed=$2 hook=$3 f=$4 small=$5 big=$6 what="$4 $5"
  # shellcheck disable=SC2086
  "$perfc" "$f" $small -target sm_90a -emit report --verbose > "$tmp/rep" 2>&1 || { bad "$what: report"; return; }
  grep -q "$origin" "$tmp/rep" || { bad "$what: the default is not $origin"; return; }
  sed -n '/the default schedule for contractions applies/,/^kernel /p' "$tmp/rep" | grep '^  [a-z]' > "$tmp/sched"
  # shellcheck disable=SC2086
  "$perfc" "$f" $small -target interp --no-schedule --run --seed "$seed" > "$tmp/ref" 2>&1 ||
    { bad "$what: interpreter"; return; }
  # shellcheck disable=SC2086
  "$perfc" "$f" $small -target interp --no-schedule -s "$(cat "$tmp/sched")" --run --seed "$seed" > "$tmp/got" 2>&1 ||
    { bad "$what: the schedule on the interpreter"; head -3 "$tmp/got"; return; }
  dc_same_sums "$what"
  for t in sm_80 sm_90a; do
    "$hook" "$f" "$big" "$what" $t
    # shellcheck disable=SC2086
    if "$perfc" "$f" $big -target $t -emit ptx -o "$tmp/k.ptx" 2> "$tmp/err"; then
      if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
        "$ptxas" -arch=$t "$tmp/k.ptx" -o "$tmp/k.cubin" > "$tmp/err" 2>&1 || { bad "$what $t: ptxas"; head -3 "$tmp/err"; }
      fi
    elif grep -qi nvrtc "$tmp/err"; then nortc=1
    else bad "$what $t: -emit ptx"; head -3 "$tmp/err"; fi
  done
}
