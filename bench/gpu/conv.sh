#!/usr/bin/env bash
# ResNet-50's convolution layers in bf16 on the GPU, written once as a user writes a
# convolution (bench/gpu/contractions/conv_nhwc.pdl, NHWC, no schedule), each run by
# perfc (validated on fresh inputs and timed) and set beside cuDNN through torch's
# conv2d on channels_last tensors (bench/gpu/conv.py) in the same run on the same GPU.
#   bash bench/gpu/conv.sh [ROWS...]   (carry carry/gpu/perfc.xz)
# Environment: TARGET (sm_90a), MODE (run: the default schedule, no tuning; tune:
# --autotune; sanitize: compute-sanitizer on small cases of each path), BUDGET (candidates, default 12), TLIMIT (seconds per tune, default 60),
# OUT (where the JSON and logs go).  Prints one line per row (perfc's ms, cuDNN's,
# the ratio cuDNN / perfc, the wall time, the schedule) and the geomean.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/conv}; mkdir -p "$O" /tmp/pf
T=${TARGET:-sm_90a}; B=${BUDGET:-12}; TL=${TLIMIT:-60}; MODE=${MODE:-run}
R=$O/ratios-$T-$MODE.txt; rm -f "$R"
[ -x /tmp/pf/perfc ] && [ /tmp/pf/perfc -nt carry/gpu/perfc.xz ] || { xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc; }
P=${PERFC:-/tmp/pf/perfc}
K=bench/gpu/contractions/conv_nhwc.pdl
WANT="$*"
want() { [ -z "$WANT" ] && return 0; for w in $WANT; do [ "$w" = "$1" ] && return 0; done; return 1; }
row() {  # row LABEL N H W C K R S U P
  local label=$1; shift
  want "$label" || return 0
  local n=$1 h=$2 w=$3 c=$4 k=$5 r=$6 s=$7 u=$8 p=$9
  local args=(-D N=$n -D H=$h -D W=$w -D C=$c -D K=$k -D R=$r -D S=$s -D U=$u -D P=$p -target "$T" --json --verbose)
  local t0 t1 rc
  t0=$(date +%s.%N)
  if [ "$MODE" = tune ]; then
    "$P" "$K" "${args[@]}" --autotune --budget "$B" --time "$TL" --db "$O/tune-$T.db" > "$O/$label.json" 2> "$O/$label.err"
  else
    "$P" "$K" "${args[@]}" --run > "$O/$label.json" 2> "$O/$label.err"
  fi
  rc=$?
  t1=$(date +%s.%N)
  local tj
  tj=$(python3 bench/gpu/conv.py "$n:$h:$w:$c:$k:$r:$s:$u:$p" 2>>"$O/torch.err")
  python3 - "$label" "$rc" "$O/$label.json" "$O/$label.err" "$tj" "$t0" "$t1" "$R" "$MODE" <<'PY'
import json, math, re, sys
label, rc, pj, perr, tj, t0, t1, out, mode = sys.argv[1:10]
try:
    r = json.load(open(pj))
except Exception:
    r = {}
pt = (r.get("time_ms") or {}).get("median", float("nan"))
valid = "valid" if r.get("valid") else "INVALID"
try:
    tt = json.loads(tj)["ms"]
except Exception:
    tt = float("nan")
err = open(perr).read()
m = re.search(r"the default schedule for contractions applies \(([^;)]*)", err) if mode == "run" else \
    re.search(r"rank  median.*\n\s*(.*)", err)
how = (m.group(1) if m else "no default schedule")[:70]
ratio = tt / pt if pt == pt and pt > 0 and tt == tt else float("nan")
if valid == "valid" and ratio == ratio:
    open(out, "a").write("%s %.4f\n" % (label, ratio))
print("%-12s rc=%s %-7s perfc %8.4f ms | cuDNN %8.4f ms | ratio %.3f | %5.1f s | %s"
      % (label, rc, valid, pt, tt, ratio, float(t1) - float(t0), how), flush=True)
PY
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "target $T, mode $MODE, budget $B, limit $TL s, $(date -u)"
if [ "$MODE" = sanitize ]; then
  # compute-sanitizer memcheck and racecheck on the default schedule of small
  # convolutions that take each path: a padded channel split and stride 2 (cp.async
  # gather), a 1x1 without padding (bulk tensor copies of the flattened image),
  # split-K on a 7x7 layer, the result written back through shared memory (K = 64)
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  rc=0
  for spec in "2 15 13 40 24 3 3 2 1" "2 14 14 256 128 1 1 1 0" "1 7 7 512 256 3 3 1 1" "3 9 11 64 72 1 1 1 0"; do
    set -- $spec
    for tool in memcheck racecheck; do
      timeout 280 "$CS" --tool $tool --error-exitcode 9 "$P" "$K" -D N=$1 -D H=$2 -D W=$3 -D C=$4 -D K=$5 -D R=$6 \
          -D S=$7 -D U=$8 -D P=$9 -target "$T" --run --seed 3 > "$O/san.log" 2>&1; s=$?
      echo "$spec $tool: exit $s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san.log" | head -1) $(grep -m1 -o 'valid      [a-z]*' "$O/san.log")"
      [ $s = 0 ] || rc=1
    done
  done
  exit $rc
fi
for b in 1 32; do
  row 3x3-56-b$b  $b 56 56 64 64 3 3 1 1
  row 3x3-28-b$b  $b 28 28 128 128 3 3 1 1
  row 3x3-14-b$b  $b 14 14 256 256 3 3 1 1
  row 3x3-7-b$b   $b 7 7 512 512 3 3 1 1
  row 1x1-56-b$b  $b 56 56 64 256 1 1 1 0
  row 1x1-28-b$b  $b 28 28 512 128 1 1 1 0
  row 1x1-14-b$b  $b 14 14 256 1024 1 1 1 0
  row 1x1-7-b$b   $b 7 7 2048 512 1 1 1 0
done
python3 - "$R" <<'PY'
import math, sys
v = [float(l.split()[1]) for l in open(sys.argv[1])] if __import__("os").path.exists(sys.argv[1]) else []
if v:
    print("geomean %.3f over %d valid rows, lowest %.3f" % (math.exp(sum(map(math.log, v)) / len(v)), len(v), min(v)))
PY
