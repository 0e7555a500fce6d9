#!/usr/bin/env bash
# The dojo's GPU bar in one device call of under 10 minutes: `perfc --autotune` on
# the f32 GEMM N^3 (default 4096, sm_90a) with a wall-time budget, then the built-in
# beam agent from the unscheduled kernel within BUDGET measured steps (it starts
# from the tuner's templates, `hints`, improved one parameter at a time, and
# searches on with moves), and both winners re-timed alternately with `perfc --run`
# (five times each; the ratio of the medians is the result).  With DOJO_RANDOM=1 it
# first plays 12 random moves of the GEMM at 512^3, each measured on the GPU: every
# offered move must leave a kernel that compiles, launches and validates, and the
# recorded game must replay.  Everything needed is printed on stdout.
#
# Runs from the repository root on the device machine with carry/gpu/perfc.xz, a
# static perfc built on the development machine:
#   cmake -S . -B build-static -DCMAKE_BUILD_TYPE=Release -DPERFC_LLVM_STATIC=ON -DPERFC_TESTS=OFF
#   cmake --build build-static -j2 --target perfc
#   mkdir -p carry/gpu && xz -T2 -c build-static/perfc > carry/gpu/perfc.xz
# then: run(command="bash bench/gpu/dojo_beam.sh", carry=["carry/gpu"], timeout_s=600).
# Knobs (environment): N (4096), TARGET (sm_90a), BUDGET (200 measurements), BEAM_S
# (240 s), TUNE_S (90 s), BEAM_ARGS (e.g. --no-hints), DOJO_RANDOM (0).  Work files in
# /tmp/dojo_gpu; the winners' outputs and the agent's log also in $OUT.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=${OUT:-/tmp/dojo_gpu_out} O=/tmp/dojo_gpu
N=${N:-4096} BUDGET=${BUDGET:-200} BEAM_S=${BEAM_S:-240} TUNE_S=${TUNE_S:-90} T=${TARGET:-sm_90a}
mkdir -p "$R" "$O" /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
sizes="-D M=$N -D N=$N -D K=$N"
rc=0
start=$(date +%s)
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1

if [ "${DOJO_RANDOM:-0}" = 1 ]; then
echo "== random moves on the GPU, measured after each, then replayed"
timeout 120 python3 - "$P" "$T" "$O" <<'PY' || rc=1
import os, random, sys, time
sys.path.insert(0, "python")
from perfc_dojo import PerfDojoEnv
perfc, target, out = sys.argv[1:4]
rec = os.path.join(out, "random.jsonl")
env = PerfDojoEnv(perfc, file="stdlib/gemm.pdl", kernel="gemm", target=target,
                  sizes={"M": 512, "N": 512, "K": 512}, seed=3, db=os.path.join(out, "dojo.db"), record=rec)
state = env.reset()
rng = random.Random(3)
valid = dropped = 0
checks = []
for t in range(12):
    moves = env.actions()
    if not moves:
        break
    state, _, _, info = env.step(rng.choice(moves)["id"])
    assert info["legal"], info
    dropped += state["dropped_moves"]
    checks.append(state["check_ms"])
    t0 = time.time()
    m = env.measure()   # an error here (a kernel that does not launch) fails the script
    assert m["valid"], m
    valid += 1
    print("step %2d: %-28s %8.4g ms  (measure %.1f s, %d moves offered, %d dropped, check %.0f ms)"
          % (t, state["moves"][-1], m["time_ms"]["median"], time.time() - t0, len(moves),
             state["dropped_moves"], state["check_ms"]))
env.close()
print("random: %d of 12 measured states valid; %d moves dropped by the emitter check; median check %.0f ms"
      % (valid, dropped, sorted(checks)[len(checks) // 2]))
PY
"$P" dojo --replay "$O/random.jsonl" | tail -1 || rc=1
fi

echo "== autotune f32 GEMM ${N}^3 on $T (--time $TUNE_S)"
t0=$(date +%s)
PERFC_RETUNE=1 timeout $((TUNE_S + 70)) "$P" stdlib/gemm.pdl -k gemm --no-schedule $sizes -target $T --autotune \
  --time "$TUNE_S" --db "$O/tune.db" --seed 1 > "$O/tune.txt" 2> "$O/tune.err" ||
  { rc=1; echo "autotune failed:"; tail -5 "$O/tune.err"; }
t1=$(date +%s)
echo "== beam (budget $BUDGET measurements, $BEAM_S s)"
# past BEAM_S + 60 s (a GPU measurement at 4096^3 takes 15-20 s, and the moves'
# emitter checks add to it) the agent gets SIGTERM: it stops, reports its best state
# and closes its record; SIGKILL only 60 s after that
timeout -k 60 $((BEAM_S + 60)) "$P" dojo --agent beam stdlib/gemm.pdl -k gemm $sizes -target $T --budget "$BUDGET" \
  --time "$BEAM_S" ${BEAM_ARGS:-} --seed 1 --db "$O/dojo.db" --record "$O/beam.jsonl" > "$O/beam.txt" 2> "$O/beam.err"
brc=$?
[ $brc = 124 ] && grep -q '^best ' "$O/beam.txt" && echo "beam stopped by SIGTERM at $((BEAM_S + 60)) s (over its --time)"
[ $brc = 0 ] || { [ $brc = 124 ] && grep -q '^best ' "$O/beam.txt"; } || { rc=1; echo "beam failed:"; tail -5 "$O/beam.err"; }
t2=$(date +%s)
timeout 60 "$P" dojo --replay "$O/beam.jsonl" | tail -1 || rc=1
sed -n '/^schedule gemm for /,/^}/p' "$O/tune.txt" > "$O/tune.sched"
sed -n '/^schedule gemm for /,/^}/p' "$O/beam.txt" > "$O/beam.sched"
# the kernel alone (stdlib/gemm.pdl also holds its hand-written schedules) and the block
sed -n '/^kernel gemm(M, N, K, T = f32) {/,/^}/p' stdlib/gemm.pdl > "$O/kernel.pdl"
cat "$O/kernel.pdl" "$O/tune.sched" > "$O/tune.pdl"
cat "$O/kernel.pdl" "$O/beam.sched" > "$O/beam.pdl"
for who in tune beam; do : > "$O/$who.ms"; done
for rep in 1 2 3 4 5; do
  for who in tune beam; do
    timeout 60 "$P" "$O/$who.pdl" -k gemm $sizes -target $T --run --json --seed $rep 2>/dev/null |
      python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["valid"]; print(r["time_ms"]["median"])' \
      >> "$O/$who.ms" || rc=1
  done
done
tune_ms=$(sort -g "$O/tune.ms" | sed -n 3p)
beam_ms=$(sort -g "$O/beam.ms" | sed -n 3p)
echo "f32 GEMM ${N}^3 on $T: autotune best $tune_ms ms ($((t1 - t0)) s), beam $beam_ms ms ($((t2 - t1)) s)"
echo "re-timed alternately (ms): autotune $(tr '\n' ' ' < "$O/tune.ms")| beam $(tr '\n' ' ' < "$O/beam.ms")"
grep -E '^measured|^best' "$O/beam.txt"
grep -E '^hint' "$O/beam.err"
grep -A3 '^top 5' "$O/tune.txt"
python3 -c "print('beam / autotune: %.3f (bar 0.9)' % ($tune_ms / $beam_ms))" || rc=1
echo "beam schedule:"; cat "$O/beam.sched"
grep '^level' "$O/beam.err" | tail -5
echo "invalid kernels measured by the beam: $(grep -c INVALID "$O/beam.err")"
echo "total $(($(date +%s) - start)) s"
cp "$O/beam.txt" "$O/beam.err" "$O/tune.txt" "$R/" 2>/dev/null
exit $rc
