#!/usr/bin/env bash
# Kernels of several launches (split-K's partial products and their combination, a
# realigned copy before a product) with and without the next launch started as the
# one before it ends (programmatic dependent launch, docs/cuda.md "Launch
# boundaries"): two builds alternating, ROUNDS rounds, each run validated on fresh
# inputs, perfc's median ms; the default schedule, sm_90a.  A kernel of one launch
# is the control.  Writes $OUT/pdl_ab.log as it goes.
#   bash bench/gpu/pdl_ab.sh   (carry carry/gpu/perfc.xz, the change, and
#                               carry/gpu/perfc-base.xz, the tree before it)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pdl
xz -dc carry/gpu/perfc.xz > /tmp/pdl/new && xz -dc carry/gpu/perfc-base.xz > /tmp/pdl/old && chmod +x /tmp/pdl/new /tmp/pdl/old
LOG=${OUT:-/tmp}/pdl_ab.log
C=bench/gpu/contractions/conv_nhwc.pdl
U=bench/gpu/kernels/user_klarge.pdl
M=bench/gpu/contractions/mm.pdl
conv() { echo "$C -D N=$1 -D H=$2 -D W=$2 -D C=$3 -D K=$4 -D R=$5 -D S=$5 -D U=1 -D P=$6"; }
ROWS=${ROWS:-"c3-7 c1-7 c3-14 c3-28 kl lin thin128 odd"}
args() {
  case $1 in
    c3-7) conv 32 7 512 512 3 1 ;;
    c1-7) conv 32 7 2048 512 1 0 ;;
    c3-14) conv 32 14 256 256 3 1 ;;
    c3-28) conv 32 28 128 128 3 1 ;;
    kl) echo "$U -k kl" ;;
    lin) echo "$U -k lin" ;;
    thin128) echo "$M -D M=128 -D N=4096 -D K=4096 -D U=bf16" ;;
    odd) echo "$M -D M=4095 -D N=4097 -D K=1023 -D U=bf16" ;;
  esac
}
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" >> "$LOG"
one() {  # BIN ROW
  # shellcheck disable=SC2046
  "/tmp/pdl/$1" $(args "$2") -target sm_90a --run --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%.4f %s %d" % (r["time_ms"]["median"], "valid" if r["valid"] else "INVALID", len(r.get("launches", []))))' 2>/dev/null || echo "nan failed 0"
}
for r in $(seq ${ROUNDS:-3}); do
  for row in $ROWS; do
    a=$(one old "$row"); b=$(one new "$row")
    echo "r$r $row  old ${a}  new ${b}  old/new $(python3 -c "print('%.3f' % (${a%% *} / ${b%% *}))" 2>/dev/null)" >> "$LOG"
  done
done
cat "$LOG"
