#!/usr/bin/env bash
# The GEMM-family suite on the GPU: kernels written as users write them
# (bench/gpu/contractions/*.pdl, bench/gpu/kernels/*.pdl), each tuned by
# `perfc --autotune` (validated on fresh inputs, timed beside cuBLASLt through
# `--compare cublas` in the same process) and set beside torch's call for the same
# operation (bench/gpu/contractions.py: cuBLASLt with the matching layouts, output
# dtype and epilogue) in the same run on the same GPU.
#   bash bench/gpu/contractions.sh [ROWS...]   (carry carry/gpu/perfc.xz)
# Environment: TARGET (sm_90a), BUDGET (candidates, default 16), TLIMIT (seconds per
# tune, default 60), OUT (where the JSON and logs go), MODE=run (no tuning: `--run`
# with the default schedule, the first tensor-core template, to show what a user who
# never tunes gets).  ROWS: labels to run (all by
# default).  Prints one line per row: perfc's ms, cuBLASLt's (product only) ms,
# torch's ms, the ratio of the faster library call to perfc, the tune's wall time.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/contractions}; mkdir -p "$O" /tmp/pf; rm -f "$O/ratios-${TARGET:-sm_90a}.txt"
# always the carried build: a warm machine keeps /tmp from an earlier call, whose
# perfc may be an older build (a run timed one so once)
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=${PERFC:-/tmp/pf/perfc}
T=${TARGET:-sm_90a}; B=${BUDGET:-16}; TL=${TLIMIT:-60}
DB=$O/tune-$T.db
C=bench/gpu/contractions
want() { [ $# -eq 0 ] && return 0; for w in $WANT; do [ "$w" = "$1" ] && return 0; done; return 1; }
WANT="$*"
row() {  # row LABEL TORCHSPEC FILE [perfc args...]
  local label=$1 spec=$2 f=$3; shift 3
  [ -z "$WANT" ] || want "$label" || return 0
  local t0 t1 pj tj
  t0=$(date +%s.%N)
  if [ "${MODE:-tune}" = run ]; then
    "$P" "$f" -target "$T" "$@" --run --compare cublas --json --verbose > "$O/$label-$T.json" 2> "$O/$label-$T.err"
  else
    "$P" "$f" -target "$T" "$@" --autotune --budget "$B" --time "$TL" --compare cublas --json --db "$DB" \
        > "$O/$label-$T.json" 2> "$O/$label-$T.err"
  fi
  local rc=$?
  t1=$(date +%s.%N)
  pj=$(python3 - "$O/$label-$T.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("nan nan invalid(no-json)"); sys.exit()
b = r.get("baseline") or {}
bt = (b.get("time_ms") or {}).get("median", float("nan"))
t = (r.get("time_ms") or {}).get("median", float("nan"))
print(t, bt, "valid" if r.get("valid") else "INVALID:" + str(r.get("reason"))[:80].replace(" ", "_"))
PY
)
  tj=$(python3 bench/gpu/contractions.py "$spec" 2>>"$O/torch.err" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read() or "{}"); print(r.get("ms") or "nan", (r.get("call") or "none").replace(" ", ""))')
  local win
  if [ "${MODE:-tune}" = run ]; then
    win=$(grep -m1 -o "the default schedule for contractions applies ([^;]*" "$O/$label-$T.err" | cut -c47-110)
    [ -n "$win" ] || win="no default schedule"
  else
    win=$(grep -m1 -A1 "rank  median" "$O/$label-$T.err" | tail -1 | sed 's/^ *//' | cut -c1-90)
  fi
  python3 - "$label" "$T" "$rc" "$pj" "$tj" "$t0" "$t1" "$win" "$O/ratios-$T.txt" <<'PY'
import sys, math
label, tgt, rc, pj, tj, t0, t1, win = sys.argv[1:9]
pt, bt, valid = pj.split()[0:3]
tt, call = tj.split()[0:2]
pt, bt, tt = float(pt), float(bt), float(tt)
lib = min(x for x in (bt, tt) if not math.isnan(x)) if not (math.isnan(bt) and math.isnan(tt)) else float("nan")
ratio = lib / pt if pt > 0 and not math.isnan(lib) else float("nan")
if not math.isnan(ratio) and valid == "valid":
    open(sys.argv[9], "a").write("%s %.4f\n" % (label, ratio))
print("%-14s %-7s rc=%s %-8s perfc %8.4f ms | cuBLASLt %8.4f | torch %8.4f (%s) | ratio %.3f | tune %5.1f s | %s"
      % (label, tgt, rc, valid, pt, bt, tt, call, ratio, float(t1) - float(t0), win))
PY
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "target $T, mode ${MODE:-tune}, budget $B, limit $TL s, $(date -u)"
row mm-4096      mm-bf16-f32:4096:4096:4096          $C/mm.pdl
row mm-8192      mm-bf16-f32:8192:8192:8192          $C/mm.pdl -D M=8192 -D N=8192 -D K=8192
row mm-bf16out   mm-bf16-bf16:4096:4096:4096         $C/mm.pdl -D U=bf16
row mm-f16out    mm-f16-f16:4096:4096:4096           $C/mm.pdl -D T=f16 -D U=f16
row odd          mm-bf16-bf16:4095:4097:1023         $C/mm.pdl -D U=bf16 -D M=4095 -D N=4097 -D K=1023
# the nn.Linear layout at the odd shape: both operands' rows of 1023 (realigned)
row odd-lin      linear-bf16:4095:4097:1023          $C/linear.pdl -D M=4095 -D N=4097 -D K=1023
row odd-gelu     lingelu-bf16:4095:4097:1023         $C/linear_gelu.pdl -D M=4095 -D N=4097 -D K=1023
# the odd row's product once its operands are realigned (rows of 1024 and 4104): the
# share of the odd row's time its two copies take
row odd-core     mm-bf16-bf16:4096:4104:1024         $C/mm.pdl -D U=bf16 -D M=4096 -D N=4104 -D K=1024
row thin16       mm-bf16-bf16:16:4096:4096           $C/mm.pdl -D U=bf16 -D M=16
row thin128      mm-bf16-bf16:128:4096:4096          $C/mm.pdl -D U=bf16 -D M=128
row klarge       mm-bf16-f32:1024:1024:16384         $C/mm.pdl -D M=1024 -D N=1024 -D K=16384
# split-K's other forms (tune/rules_tc.c): a 16-bit result, the nn.Linear layout with
# an epilogue; and 2048^2 x 8192, whose 256 tiles keep their grid (the control)
row klarge-bf16  mm-bf16-bf16:1024:1024:16384        $C/mm.pdl -D U=bf16 -D M=1024 -D N=1024 -D K=16384
row klarge-lin   linear-bf16:1024:1024:16384         $C/linear.pdl -D M=1024 -D N=1024 -D K=16384
row klarge-gelu  lingelu-bf16:1024:1024:16384        $C/linear_gelu.pdl -D M=1024 -D N=1024 -D K=16384
row mm-2k-8k     mm-bf16-f32:2048:2048:8192          $C/mm.pdl -D M=2048 -D N=2048 -D K=8192
row bmm          bmm-bf16:512:512:128:32             $C/bmm.pdl
# two batch loops (attention's scores, einsum bhqd,bhkd->bhqk), collapsed into one
row scores       scores-bf16:2048:2048:128:4:16      $C/scores.pdl
row scores-odd   scores-bf16:1000:1000:64:2:12       $C/scores.pdl -D B=2 -D H=12 -D T=1000 -D E=64
# two products in one kernel (an MLP's gate and up projections), one template each
row swiglu       swiglu-bf16:2048:5632:2048          $C/swiglu.pdl
row swiglu-odd   swiglu-bf16:1000:3000:1000          $C/swiglu.pdl -D M=1000 -D N=3000 -D K=1000
row linear       linear-bf16:4096:4096:4096          $C/linear.pdl
row tn           tn-bf16:4096:4096:4096              $C/mm_tn.pdl
row linear-gelu  lingelu-bf16:4096:4096:4096         $C/linear_gelu.pdl
python3 - "$O/ratios-$T.txt" <<'PY'
import math, sys
try:
    rs = [float(l.split()[1]) for l in open(sys.argv[1])]
except OSError:
    rs = []
if rs:
    print("geomean %.3f over %d valid rows, lowest %.3f" % (math.exp(sum(map(math.log, rs)) / len(rs)), len(rs), min(rs)))
PY
