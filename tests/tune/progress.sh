#!/bin/sh
# Progress on stderr, and stopping a search: plain lines when stderr is not a
# terminal, a status line rewritten in place when it is (run under script(1), which
# gives perfc a pseudo-terminal), nothing with --quiet, and stdout untouched (--json
# stays one object).  A search stopped by SIGINT or by --time still reports, stores
# and validates its best so far.  No timing is asserted.
set -eu
perfc=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
cat > "$dir/g.pdl" <<'PDL'
kernel g(M, N, K) {
  in  A: f32[M, K]
  in  B: f32[K, N]
  out C: f32[M, N]
  C[i, j] = sum(k) A[i, k] * B[k, j]
}
PDL
run="$perfc $dir/g.pdl -D M=64 -D N=48 -D K=32 --run --seed 5"
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. not a terminal: a line per phase on stderr, the report alone on stdout
$run --json > "$dir/plain.json" 2> "$dir/plain.err"
for p in "perfc: compile g" "perfc: golden 1/2" "perfc: validate 2/2" "perfc: time kernel"; do
  grep -q "^$p" "$dir/plain.err" || fail "no '$p' line in $(cat "$dir/plain.err")"
done
if grep -q "$(printf '\033')" "$dir/plain.err"; then fail "escape codes off a terminal"; fi
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/plain.json" || fail "stdout is not one JSON object"
[ "$(wc -l < "$dir/plain.json")" -eq 1 ] || fail "stdout has more than the JSON line"

# 2. --quiet: nothing on stderr
$run --quiet > /dev/null 2> "$dir/quiet.err"
[ ! -s "$dir/quiet.err" ] || fail "--quiet printed: $(cat "$dir/quiet.err")"

# 3. a terminal: the status line is rewritten with CR + erase-line and cleared at the
# end; stdout (a file) still holds exactly the JSON
if command -v script > /dev/null; then
  script -qec "$run --json > $dir/tty.json" /dev/null > "$dir/tty.out" 2>&1 || fail "perfc under script failed"
  grep -q "$(printf '\r\033')\[K" "$dir/tty.out" || fail "no status line rewritten in place"
  grep -q "perfc: time" "$dir/tty.out" || fail "no timing phase on the status line"
  # after the last erase nothing but the terminal's newline conversions may remain
  last=$(tr '\n' ' ' < "$dir/tty.out" | awk -F "$(printf '\033')\\\\[K" '{print $NF}' | tr -d '\r ')
  [ -z "$last" ] || fail "the status line was not cleared at the end: '$last'"
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/tty.json" || fail "JSON broken under a terminal"
fi

# 4. a tune: a line per candidate with the best so far and the library's ratio
"$perfc" "$dir/g.pdl" -D M=64 -D N=64 -D K=64 --autotune --budget 3 --db "$dir/t.db" --seed 3 \
  > "$dir/tune.out" 2> "$dir/tune.err"
grep -q "^perfc: tune 3/3 .* best [0-9.e-]* ms" "$dir/tune.err" || fail "no candidate lines: $(cat "$dir/tune.err")"
grep -q "^converged  within 5% of the search's best" "$dir/tune.out" || fail "no convergence line"

# 5. --time: the search stops at the limit, and its best is the answer
"$perfc" "$dir/g.pdl" -D M=96 -D N=64 -D K=64 --autotune --budget 400 --time 0.5 --db "$dir/t.db" --seed 4 \
  --quiet > "$dir/time.out"
grep -q "^stopped    by the time limit" "$dir/time.out" || fail "no 'stopped by the time limit': $(cat "$dir/time.out")"
grep -q "^schedule g for cpu {" "$dir/time.out" || fail "no schedule after --time"

# 6. SIGINT between candidates: reported, validated, stored; exit status 0
"$perfc" "$dir/g.pdl" -D M=128 -D N=64 -D K=64 --autotune --budget 400 --time 120 --db "$dir/t.db" --seed 6 \
  > "$dir/int.out" 2> "$dir/int.err" &
pid=$!
i=0
until grep -q "^perfc: tune 2/" "$dir/int.err" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 600 ] || { kill $pid; fail "no second candidate within a minute"; }
  sleep 0.1
done
kill -INT $pid
st=0; wait $pid || st=$?
[ $st -eq 0 ] || fail "an interrupted tune exited with $st: $(tail -3 "$dir/int.err")"
grep -q "^stopped    by an interrupt" "$dir/int.out" || fail "no 'stopped by an interrupt': $(cat "$dir/int.out")"
grep -q "^valid      yes" "$dir/int.out" || fail "the best so far was not re-validated"
"$perfc" tune --show --all --db "$dir/t.db" -k g | grep "M=128 N=64 K=64" | grep -q " final " ||
  fail "the interrupted search's best is not in the database"
echo ok
