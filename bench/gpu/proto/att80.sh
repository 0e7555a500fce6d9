#!/usr/bin/env bash
# Measures hand-edited variants of perfc's sm_80 attention kernels against the generated
# ones: each validated and timed by perfc --run (PERFC_CUDA_SOURCE), SDPA timed in the
# same call, ROUNDS interleaved rounds; then the SASS of each variant (the sm_80 PTX
# compiled for sm_90, as the driver does) counted by instruction class and, with OUT
# set, written there whole.  GEN picks the variants' generator: mkatt80 (bf16x2
# conversion, ldmatrix .x4) or mkatt80b (the row sum per lane, fragments a slice
# ahead, the next stage admitted at the last P.V slice).
#   bash bench/gpu/proto/att80.sh   (carry carry/gpu/perfc.xz or PERFC_XZ; GEN, ROWS, VARIANTS, ROUNDS)
set -u
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
GEN=${GEN:-mkatt80}
W=/tmp/$GEN
mkdir -p /tmp/pf "$W" && xz -dc "${PERFC_XZ:-carry/gpu/perfc.xz}" > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
A=stdlib/attention.pdl C=stdlib/attention_causal.pdl U=bench/gpu/kernels/user_attention.pdl
args() {
  case $1 in
    d128) echo "$A -D B=4 -D H=16 -D S=2048 -D D=128" ;;
    d64) echo "$A -D B=4 -D H=16 -D S=2048 -D D=64" ;;
    c-d128) echo "$C -D B=4 -D H=16 -D S=2048 -D D=128" ;;
    gqa) echo "$U -k gqa -D B=4 -D H=16 -D KVH=4 -D S=2048 -D D=128" ;;
  esac
}
spec() {
  case $1 in
    d128) echo 4:16:16:2048:2048:128:bf16 ;; d64) echo 4:16:16:2048:2048:64:bf16 ;;
    c-d128) echo 4:16:16:2048:2048:128:bf16:causal ;; gqa) echo 4:16:4:2048:2048:128:bf16 ;;
  esac
}
if [ "$GEN" = mkatt80b ]; then
  ROWS=${ROWS:-"d128"} VARIANTS=${VARIANTS:-"base lsum ahead aheadpv both"}
else
  ROWS=${ROWS:-"d128 c-d128 gqa"} VARIANTS=${VARIANTS:-"base cvt2 ldx4 both"}
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for r in $ROWS; do
  # shellcheck disable=SC2046
  $P $(args $r) -target sm_80 -emit cuda > $W/$r.cu && python3 bench/gpu/proto/$GEN.py $W/$r.cu $W/$r
done
for round in $(seq "${ROUNDS:-2}"); do
  for r in $ROWS; do
    sd=$(python3 bench/gpu/attention.py "$(spec $r)" 2>/dev/null | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["ms"])')
    for v in $VARIANTS; do
      # shellcheck disable=SC2046
      PERFC_CUDA_SOURCE=$W/$r/$v.cu $P $(args $r) -target sm_80 --run --json 2>$W/err.txt | python3 -c '
import json, sys
r = json.load(sys.stdin); t = r["time_ms"]["median"]; sd = float(sys.argv[3])
print("round %s %-7s %-5s %s  perfc %.4f ms  SDPA %.4f ms  ratio %.3f" % (sys.argv[4], sys.argv[1], sys.argv[2], "valid" if r["valid"] else "INVALID", t, sd, sd / t), flush=True)' $r $v "$sd" "$round" || tail -3 $W/err.txt
    done
  done
done
# SASS: instruction classes over the whole kernel
for r in $ROWS; do
  for v in $VARIANTS; do
    nvcc -gencode arch=compute_80,code=sm_90 -cubin -o $W/k.cubin $W/$r/$v.cu -Xptxas -v 2>&1 | grep -o "Used [0-9]* registers.*" | head -1 | sed "s/^/$r $v: /"
    [ -n "${OUT:-}" ] && cuobjdump -sass $W/k.cubin > "$OUT/$r-$v.sass"
    cuobjdump -sass $W/k.cubin | grep -oE '^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9_.]+' | awk '{split($2,a,"."); n[a[1]]++; t++} END {printf "  total %d:", t; for (k in n) if (n[k] >= 16) printf " %s %d", k, n[k]; print ""}'
  done
done
