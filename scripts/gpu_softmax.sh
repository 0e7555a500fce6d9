#!/usr/bin/env bash
# One device call for the GPU softmax (block-wide reductions): names the GPU,
# validates the stdlib softmax schedule at odd and small shapes (guards, a block
# rounded up to whole warps), runs compute-sanitizer racecheck and synccheck on it,
# then times softmax 8192x8192 (the stdlib schedule and the block sizes in
# carry/sm/t*.sched) and, in the same run, the copy kernel of bench/cpu/copy.pdl at
# the same shape (its GPU schedule: 128-bit loads and stores; and the default
# mapping), each validated first; prints GB/s (input read once + output written
# once, the harness' count for both) and softmax / copy.  Logs to $OUT.
# Usage: scripts/gpu_softmax.sh PERFC
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=$1
O=${OUT:-/tmp/gpu_softmax}
mkdir -p "$O"
rc=0
echo "== GPU"; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
for sz in "19 23" "7 1000" "64 4096" "3 8192"; do
  set -- $sz
  timeout 60 "$P" stdlib/softmax.pdl -D R=$1 -D C=$2 -target sm_90 --run >"$O/small.log" 2>&1; s=$?
  echo "softmax ${1}x$2: status $s $(grep -E '^valid' "$O/small.log" | head -1)"; [ $s = 0 ] || { rc=1; tail -5 "$O/small.log"; }
done
for t in racecheck synccheck memcheck; do
  timeout 120 compute-sanitizer --tool $t --error-exitcode 9 "$P" stdlib/softmax.pdl -D R=16 -D C=2048 -target sm_90 --run \
      >"$O/san_$t.log" 2>&1; s=$?
  echo "compute-sanitizer $t softmax 16x2048: status $s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san_$t.log" | head -1)"
  [ $s = 0 ] || rc=1
done
sz=(-D R=8192 -D C=8192)
one() {  # label, then perfc arguments
  local l=$1; shift
  timeout 120 "$P" "$@" "${sz[@]}" -target sm_90 --run --json >"$O/$l.json" 2>"$O/$l.err" || { rc=1; echo "$l: FAILED $(tail -3 "$O/$l.err")"; }
}
one copy bench/cpu/copy.pdl
one copy_default bench/cpu/copy.pdl --no-schedule
one softmax stdlib/softmax.pdl
for f in carry/sm/t*.sched; do one softmax_$(basename $f .sched) stdlib/softmax.pdl --no-schedule -s "$(cat $f)"; done
one softmax_default stdlib/softmax.pdl --no-schedule
one copy_again bench/cpu/copy.pdl
python3 - "$O" <<'PY'
import json, sys, glob, os
O = sys.argv[1]
rows = {}
for f in sorted(glob.glob(O + "/*.json")):
    try: j = json.load(open(f))
    except Exception: continue
    t = j.get("time_ms"); t = t.get("median") if isinstance(t, dict) else t
    rows[os.path.basename(f)[:-5]] = (j.get("valid"), j.get("rel_error"), t, j.get("gbps"), j.get("golden"))
cp = max(v[3] for k, v in rows.items() if k.startswith("copy") and v[3])
for k, v in rows.items():
    print(f"{k:18s} valid={v[0]} err={v[1]:.2e} golden={v[4]} median={v[2]:.4f} ms {v[3]:8.1f} GB/s  /best copy={v[3]/cp:.3f}")
PY
exit $rc
