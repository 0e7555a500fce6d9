#!/usr/bin/env bash
# One device call: why the realigned odd product (4095 x 4097 x 1023, bf16 out) is
# slower than the aligned one (4096 x 4104 x 1024): the same 128 x 128 wgmma
# template with its result stored from the fragments (rows of 4097 give no 4-byte
# pairs: one element a store) and written back through shared memory in rows
# (bench/gpu/sched_odd_*.txt, made from the tuner's template), each --run; then
# the odd row tuned on a fresh database, its log's tail.
set -u
cd "$(dirname "$0")/../.."
xz -dc carry/gpu/perfc.xz > /tmp/perfc-oe && chmod +x /tmp/perfc-oe
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F="bench/gpu/contractions/mm.pdl -D U=bf16 -D M=4095 -D N=4097 -D K=1023 -target sm_90a"
for v in control stage_out; do
  /tmp/perfc-oe $F --no-schedule -s "$(cat bench/gpu/sched_odd_$v.txt)" --run --compare cublas 2>&1 | grep -E '^(valid|time|cublas|baseline|perfc )' | sed "s/^/$v: /"
done
rm -rf /tmp/oe && mkdir -p /tmp/oe
/tmp/perfc-oe $F --autotune --budget 8 --time 30 --compare cublas --db /tmp/oe/t.db > /tmp/oe/o.json 2> /tmp/oe/o.err; echo "tune rc=$?"; tail -5 /tmp/oe/o.err
/tmp/perfc-oe bench/gpu/contractions/mm.pdl -D U=bf16 -target sm_90a --autotune --budget 3 --time 15 --db /tmp/oe/t2.db > /dev/null 2>&1
/tmp/perfc-oe $F --autotune --budget 8 --time 30 --compare cublas --db /tmp/oe/t2.db > /tmp/oe/o2.json 2> /tmp/oe/o2.err; echo "tune after another mm in the database rc=$?"; tail -5 /tmp/oe/o2.err
