#!/bin/sh
# The built-in agents play small games through the session API: each must end on a
# valid measured kernel and print a schedule that perfc accepts back; a recorded
# agent game replays to the same kernel; the beam starts from the tuner's templates
# (hints), not with --no-hints; SIGTERM stops an agent with its best state reported;
# a GPU target gives states and legal moves without a GPU.
set -eu
perfc=$1 root=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
for a in random greedy beam; do
  "$perfc" dojo --agent $a "$root/stdlib/gemm.pdl" -k gemm -D M=32 -D N=32 -D K=32 --seed 2 --budget 12 \
    --steps 8 --width 2 --depth 3 --db "$dir/a.db" --record "$dir/$a.jsonl" > "$dir/$a.txt" 2>"$dir/$a.err"
  grep -q "^agent      $a" "$dir/$a.txt"
  if grep -q INVALID "$dir/$a.err"; then exit 1; fi
  sed -n '/^schedule gemm for cpu {/,/^}/p' "$dir/$a.txt" > "$dir/$a.sched"
  # the kernel alone (the stdlib file also holds its own schedule) and the block: it
  # applies, and compiles to the kernel the agent measured
  sed -n '/^kernel gemm(M, N, K, T = f32) {/,/^}/p' "$root/stdlib/gemm.pdl" > "$dir/$a.pdl"
  cat "$dir/$a.sched" >> "$dir/$a.pdl"
  "$perfc" "$dir/$a.pdl" -k gemm -D M=32 -D N=32 -D K=32 --run --seed 1 > /dev/null
  "$perfc" dojo --replay "$dir/$a.jsonl" | grep -q "as recorded"
done
# the beam starts from the tuner's templates (hints) unless told not to
grep -q '^hint [0-9]* (rules: contraction' "$dir/beam.err"
"$perfc" dojo --agent beam "$root/stdlib/gemm.pdl" -k gemm -D M=32 -D N=32 -D K=32 --seed 2 --budget 6 \
  --width 2 --depth 2 --no-hints --no-db > "$dir/nohints.txt" 2>"$dir/nohints.err"
grep -q '^agent      beam' "$dir/nohints.txt"
if grep -q '^hint ' "$dir/nohints.err"; then exit 1; fi
# SIGTERM (as `timeout` sends it) stops an agent at its next check: it still reports
# its best state, and the record ends on it and replays
"$perfc" dojo --agent beam "$root/stdlib/gemm.pdl" -k gemm -D M=64 -D N=64 -D K=64 --seed 3 --budget 100000 \
  --width 2 --depth 1000 --db "$dir/t.db" --record "$dir/term.jsonl" > "$dir/term.txt" 2>"$dir/term.err" &
pid=$!
# once two states are measured (slow builds, ASan, take longer to get there)
i=0
while [ $i -lt 600 ] && ! grep -q '^ *\[ *1\]' "$dir/term.err"; do sleep 0.1; i=$((i + 1)); done
sleep 1
kill -TERM $pid
wait $pid
grep -q '^best ' "$dir/term.txt"
grep -q 'asked to stop' "$dir/term.err"
"$perfc" dojo --replay "$dir/term.jsonl" | grep -q "as recorded"
# a GPU target: states and legal moves (bind among them) with no GPU needed
printf '%s\n' '{"cmd":"reset","file":"'"$root"'/stdlib/gemm.pdl","kernel":"gemm","target":"sm_90","sizes":{"M":256,"N":256,"K":256}}' \
  '{"cmd":"actions"}' '{"cmd":"step","action":"bind(i, block.x)"}' '{"cmd":"close"}' |
  "$perfc" dojo --no-db > "$dir/gpu.jsonl"
grep -q '"move":"bind(i, block.x)"' "$dir/gpu.jsonl"
grep -q '"legal":true' "$dir/gpu.jsonl"
# bad command lines
if "$perfc" dojo --agent beam 2>/dev/null; then exit 1; fi
if "$perfc" dojo --agent chess "$root/stdlib/gemm.pdl" -k gemm -D M=8 -D N=8 -D K=8 --no-db 2>/dev/null; then exit 1; fi
if "$perfc" dojo --replay "$dir/none.jsonl" 2>/dev/null; then exit 1; fi
if "$perfc" dojo -D M 2>/dev/null; then exit 1; fi
echo ok
