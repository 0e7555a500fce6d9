#!/bin/sh
# The dojo's bar on this CPU: the built-in beam-search agent, playing the protocol's
# moves from the unscheduled sgemm (stdlib/gemm.pdl kernel gemm) within 200 measured
# steps, against `perfc --autotune`'s best on the same machine in the same run.
# Both winners are then re-timed with `perfc --run` (full harness, fresh inputs)
# alternately, five times each, so the ratio compares like with like under the same
# load: the ratio of the medians is the result, every round is printed.
#
#   bench/cpu/dojo_beam.sh [PERFC] [SIZE] [BUDGET] [SEED]      (defaults: build/perfc 512 200 1)
#   BEAM_ARGS=--no-hints bench/cpu/dojo_beam.sh ...            (the beam from the unscheduled kernel only)
set -eu
perfc=${1:-build/perfc} n=${2:-512} budget=${3:-200} seed=${4:-1}
load0=$(uptime | sed 's/.*load average: //')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sizes="-D M=$n -D N=$n -D K=$n"
t0=$(date +%s)
PERFC_RETUNE=1 "$perfc" stdlib/gemm.pdl -k gemm --no-schedule $sizes --autotune --db "$dir/tune.db" --seed "$seed" \
  > "$dir/tune.txt" 2> "$dir/tune.err"
t1=$(date +%s)
"$perfc" dojo --agent beam stdlib/gemm.pdl -k gemm $sizes --budget "$budget" --seed "$seed" ${BEAM_ARGS:-} --db "$dir/dojo.db" \
  --record "$dir/beam.jsonl" > "$dir/beam.txt" 2> "$dir/beam.err"
t2=$(date +%s)
"$perfc" dojo --replay "$dir/beam.jsonl" > /dev/null
sed -n '/^schedule gemm for cpu {/,/^}/p' "$dir/tune.txt" > "$dir/tune.sched"
sed -n '/^schedule gemm for cpu {/,/^}/p' "$dir/beam.txt" > "$dir/beam.sched"
# the kernel alone (stdlib/gemm.pdl also holds its hand-written schedule) and the block
sed -n '/^kernel gemm(M, N, K, T = f32) {/,/^}/p' stdlib/gemm.pdl > "$dir/kernel.pdl"
cat "$dir/kernel.pdl" "$dir/tune.sched" > "$dir/tune.pdl"
cat "$dir/kernel.pdl" "$dir/beam.sched" > "$dir/beam.pdl"
median() { sort -g | sed -n 3p; }
for who in tune beam; do : > "$dir/$who.ms"; done
for rep in 1 2 3 4 5; do
  for who in tune beam; do
    "$perfc" "$dir/$who.pdl" -k gemm $sizes --run --json --seed $rep 2>/dev/null |
      python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["valid"]; print(r["time_ms"]["median"])' \
      >> "$dir/$who.ms"
  done
done
tune_ms=$(median < "$dir/tune.ms")
beam_ms=$(median < "$dir/beam.ms")
measured=$(sed -n 's/^measured *\([0-9]*\) states/\1/p' "$dir/beam.txt")
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u '+%F %H:%M UTC')"
echo "load average at the start: $load0; at the end: $(uptime | sed 's/.*load average: //')"
echo "seed $seed, beam ${BEAM_ARGS:-with hints}"
echo "sgemm ${n}^3: autotune best $tune_ms ms ($((t1 - t0)) s), beam $beam_ms ms ($measured measured steps, $((t2 - t1)) s)"
echo "re-timed alternately (ms): autotune $(tr '\n' ' ' < "$dir/tune.ms")| beam $(tr '\n' ' ' < "$dir/beam.ms")"
grep '^hint' "$dir/beam.err" || true
python3 -c "print('beam / autotune: %.3f (bar 0.9)' % ($tune_ms / $beam_ms))"
echo "beam schedule:"; cat "$dir/beam.sched"
echo "autotune schedule:"; cat "$dir/tune.sched"
