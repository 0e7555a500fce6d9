#!/usr/bin/env bash
# Measures hand-written variants of the sm_80 GEMM main loop (mkmm80.py) against the
# generated kernel, each validated and timed by perfc --run (PERFC_CUDA_SOURCE) beside
# cuBLASLt in the same process, two rounds, 4096^3 bf16 -> f32 as sm_80 code.
#   bash bench/gpu/proto/mm80.sh   (carry carry/gpu/perfc.xz)
# CASES: "TEMPLATE:STAGES:VARIANT[:BK]" ... (templates: mm80_t1.sched 128 x 128, mm80_t3.sched
# 128 x 256; VARIANT gen = as generated, plain or dbuf as in mkmm80.py, serp, x4 or
# serp,x4 as in mkahead.py)
set -u
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf /tmp/proto && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
F=bench/gpu/contractions/mm.pdl
sched() { sed "s/param st in \[[0-9, ]*\]/param st = $2/" bench/gpu/proto/mm80_$1.sched; }
one() {  # CASE
  IFS=: read -r t st v bk <<< "$1"
  local env=()
  if [ "$v" != gen ]; then
    /tmp/pf/perfc $F -target sm_80 --no-schedule -s "$(sched $t $st)" -emit cuda > /tmp/proto/g.cu || return
    case $v in
      plain*|dbuf*) python3 bench/gpu/proto/mkmm80.py /tmp/proto/g.cu /tmp/proto/$v.cu $v ${bk:-32} > /dev/null || return ;;
      *) python3 bench/gpu/proto/mkahead.py /tmp/proto/g.cu /tmp/proto/$v.cu $v || return ;;
    esac
    env=(PERFC_CUDA_SOURCE=/tmp/proto/$v.cu)
  fi
  env "${env[@]}" /tmp/pf/perfc $F -target sm_80 --no-schedule -s "$(sched $t $st)" --run --compare cublas --json 2>/tmp/proto/err.txt | python3 -c '
import json, sys
r = json.load(sys.stdin); t = r["time_ms"]["median"]; b = r["baseline"]["time_ms"]["median"]
print("%-16s %s  perfc %.4f ms  cuBLASLt %.4f ms  ratio %.3f  %.0f TFLOP/s" % (sys.argv[1], "valid" if r["valid"] else "INVALID", t, b, b / t, 2 * 4096**3 / t / 1e9))' "$1" || tail -5 /tmp/proto/err.txt
}
for rep in 1 2; do
  for c in ${CASES:-t1:4:gen t1:4:dbuf t3:4:gen t3:4:plain t3:4:dbuf t3:4:dbuf:64 t3:3:dbuf}; do one $c; done
done
