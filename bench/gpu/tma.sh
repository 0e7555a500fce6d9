#!/usr/bin/env bash
# Bulk tensor copies (TMA, passes/gpu_tma.c) against the threads' cp.async copies,
# in one run on one GPU: the GEMM-family rows of bench/gpu/contractions.sh with the
# default schedule (MODE=run), first with the base perfc (carry/gpu/perfc-base.xz,
# built from the commit before TMA), then with this tree's (carry/gpu/perfc.xz),
# alternating row by row.  Then compute-sanitizer memcheck and racecheck on small
# TMA kernels.  Prints the two ratio tables.
#   bash bench/gpu/tma.sh [ROWS...]
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc-base && chmod +x /tmp/pf/perfc-base
ROWS=${*:-mm-4096 mm-8192 mm-bf16out linear tn bmm odd klarge linear-gelu}
rm -f /tmp/tma-base.txt /tmp/tma-new.txt
for r in $ROWS; do  # contractions.sh starts its ratio file afresh: keep each row's line
  MODE=run OUT=/tmp/tma-base PERFC=/tmp/pf/perfc-base bash bench/gpu/contractions.sh "$r" > /dev/null
  cat /tmp/tma-base/ratios-sm_90a.txt >> /tmp/tma-base.txt
  MODE=run OUT=/tmp/tma-new bash bench/gpu/contractions.sh "$r" > /dev/null
  cat /tmp/tma-new/ratios-sm_90a.txt >> /tmp/tma-new.txt
done
for d in base new; do  # every row's JSON: validity, perfc and cuBLASLt medians in the same process
  echo "== $d ($([ $d = base ] && echo 'cp.async, carry/gpu/perfc-base.xz' || echo 'this tree'))"
  for f in /tmp/tma-$d/*-sm_90a.json; do
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); b = (r.get("baseline") or {}).get("time_ms", {}).get("median", float("nan"))
t = (r.get("time_ms") or {}).get("median", float("nan"))
print("%-12s %-8s perfc %.4f ms  cuBLASLt %.4f ms  ratio %.3f" % (sys.argv[1].split("/")[-1][:-11], "valid" if r.get("valid") else "INVALID", t, b, b / t))' "$f"
  done
done
echo "== base, ratio to the faster of cuBLASLt and torch"; cat /tmp/tma-base.txt
echo "== this tree"; cat /tmp/tma-new.txt
if [ "${SANITIZE:-1}" = 1 ]; then
  S=/usr/local/cuda/bin/compute-sanitizer
  C=bench/gpu/contractions
  for a in "$C/mm.pdl -D M=512 -D N=512 -D K=512" "$C/mm_tn.pdl -D M=256 -D N=512 -D K=320" \
           "$C/bmm.pdl -D NB=2" "$C/mm.pdl -D U=bf16 -D M=1000 -D N=1000 -D K=1000" "$C/mm.pdl -D U=bf16 -D M=300 -D N=520 -D K=200"; do
    for tool in memcheck racecheck; do
      timeout ${STIME:-120} $S --tool $tool --error-exitcode 9 /tmp/pf/perfc $a -target sm_90a --run > /tmp/san.log 2>&1
      echo "$tool rc=$? $a: $(grep -E -m1 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log) $(grep -m1 -E '^(valid|INVALID)' /tmp/san.log)"
    done
  done
fi
