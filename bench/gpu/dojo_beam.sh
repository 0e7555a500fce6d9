#!/usr/bin/env bash
# The dojo's GPU bar: the built-in beam-search agent, playing the protocol's moves
# (splits, reorders, cache, bind to blocks and threads, ...) from the unscheduled f32
# GEMM 4096^3 on sm_90 within 200 measured steps, against `perfc --autotune`'s best
# on the same GPU in the same run; both winners then re-timed alternately with
# `perfc --run` (three times each, median).  Also checks, on the GPU, that 30
# random moves measured after each stay valid and that the recorded game replays.
#
# Runs from the repository root on the device machine with carry/gpu/perfc.xz, a
# static perfc built on the development machine:
#   cmake -S . -B build-static -DCMAKE_BUILD_TYPE=Release -DPERFC_LLVM_STATIC=ON -DPERFC_TESTS=OFF
#   cmake --build build-static -j2 --target perfc
#   mkdir -p carry/gpu && xz -T2 -c build-static/perfc > carry/gpu/perfc.xz
# then: run(command="bash bench/gpu/dojo_beam.sh", carry=["carry/gpu"]).  Logs in $OUT.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/dojo_gpu}
N=${N:-4096} BUDGET=${BUDGET:-200} T=${TARGET:-sm_90}
mkdir -p "$O" /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
sizes="-D M=$N -D N=$N -D K=$N"
rc=0
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1

echo "== random moves on the GPU, measured after each, then replayed"
python3 - "$P" "$T" "$O" <<'PY' || rc=1
import os, random, sys
sys.path.insert(0, "python")
from perfc_dojo import PerfDojoEnv
perfc, target, out = sys.argv[1:4]
rec = os.path.join(out, "random.jsonl")
env = PerfDojoEnv(perfc, file="stdlib/gemm.pdl", kernel="gemm", target=target,
                  sizes={"M": 512, "N": 512, "K": 512}, seed=3, db=os.path.join(out, "dojo.db"), record=rec)
env.reset()
rng = random.Random(3)
valid = 0
for t in range(30):
    moves = env.actions()
    if not moves:
        break
    env.step(rng.choice(moves)["id"])
    try:
        m = env.measure()
    except Exception as e:   # a schedule the CUDA back end cannot launch is an error, not a wrong kernel
        print("step %d: %s" % (t, e))
        continue
    assert m["valid"], m
    valid += 1
env.close()
print("random: %d valid measured states" % valid)
PY
"$P" dojo --replay "$O/random.jsonl" | tail -1 || rc=1

echo "== autotune f32 GEMM ${N}^3 on $T"
t0=$(date +%s)
PERFC_RETUNE=1 timeout 900 "$P" stdlib/gemm.pdl -k gemm --no-schedule $sizes -target $T --autotune \
  --db "$O/tune.db" --seed 1 > "$O/tune.txt" 2> "$O/tune.err" || rc=1
t1=$(date +%s)
echo "== beam (budget $BUDGET)"
timeout 1500 "$P" dojo --agent beam stdlib/gemm.pdl -k gemm $sizes -target $T --budget "$BUDGET" --seed 1 \
  --db "$O/dojo.db" --record "$O/beam.jsonl" > "$O/beam.txt" 2> "$O/beam.err" || rc=1
t2=$(date +%s)
"$P" dojo --replay "$O/beam.jsonl" | tail -1 || rc=1
sed -n '/^schedule gemm for /,/^}/p' "$O/tune.txt" > "$O/tune.sched"
sed -n '/^schedule gemm for /,/^}/p' "$O/beam.txt" > "$O/beam.sched"
# the kernel alone (stdlib/gemm.pdl also holds its hand-written schedules) and the block
sed -n '/^kernel gemm(M, N, K) {/,/^}/p' stdlib/gemm.pdl > "$O/kernel.pdl"
cat "$O/kernel.pdl" "$O/tune.sched" > "$O/tune.pdl"
cat "$O/kernel.pdl" "$O/beam.sched" > "$O/beam.pdl"
for who in tune beam; do : > "$O/$who.ms"; done
for rep in 1 2 3; do
  for who in tune beam; do
    "$P" "$O/$who.pdl" -k gemm $sizes -target $T --run --json --seed $rep 2>/dev/null |
      python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["valid"]; print(r["time_ms"]["median"])' \
      >> "$O/$who.ms" || rc=1
  done
done
tune_ms=$(sort -g "$O/tune.ms" | sed -n 2p)
beam_ms=$(sort -g "$O/beam.ms" | sed -n 2p)
echo "f32 GEMM ${N}^3 on $T: autotune best $tune_ms ms ($((t1 - t0)) s), beam $beam_ms ms ($((t2 - t1)) s)"
grep -E '^measured|^best' "$O/beam.txt"
python3 -c "print('beam / autotune: %.3f (bar 0.9)' % ($tune_ms / $beam_ms))" || rc=1
echo "beam schedule:"; cat "$O/beam.sched"
echo "autotune schedule:"; cat "$O/tune.sched"
grep '^level' "$O/beam.err" | tail -5
exit $rc
