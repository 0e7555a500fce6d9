#!/usr/bin/env bash
# One device call for the K step 32 SIMT f32 GEMM (stdlib/gemm.pdl tiled32)
# against tiled (K step 16) on the GPU: names the GPU, prints ptxas's
# registers and spills for each variant, validates tiled32 at small shapes
# (fewer, as many and more K tiles than stages), runs compute-sanitizer racecheck
# and memcheck on it at a small shape (its copy mappings are new), then times at
# 4096^3 with `--run --compare cublas --json` (validated first, cuBLAS SGEMM in the
# same process), alternating the kernels 3 times each so that clock drift hits
# them alike:
#   tiled         K step 16, 2 stages (the 0.796 x cuBLAS of docs/benchmarks.md)
#   tiled32       K step 32, k unrolled 16 at a time, 2 stages (the defaults)
#   k32_st3            the same, 3 stages               (param ST = 3)
#   k32_ku32           the same, k unrolled whole (167 registers: 1 block per SM)
# The variants are stdlib/gemm.pdl with tiled32's `param` lines fixed, written
# to a temporary folder.  Ends with a table of the medians and vs_baseline per run.
# JSON reports and logs go to $OUT when set (the device tool brings them back),
# else /tmp/gpu_f32k32.
# Usage: scripts/gpu_gemm_f32_kstep.sh PERFC   (run from the repository root)
set -u
. "$(dirname "$0")/gemm_variants.sh"   # gemm_args LABEL: perfc arguments of a GEMM variant
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=${1:?usage: scripts/gpu_gemm_f32_kstep.sh PERFC}
O=${OUT:-/tmp/gpu_f32k32}
T=$(mktemp -d)
mkdir -p "$O"
rc=0
step() { echo "== $*"; }
step GPU; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
g=stdlib/gemm.pdl
fix() {  # KU ST OUT: gemm.pdl with tiled32's parameters fixed
  sed "s/^  param KU in \[[^]]*\]/  param KU = $1/; s/^  param ST in \[[^]]*\]/  param ST = $2/" "$g" >"$3"
  grep -q "^  param KU = $1" "$3" && grep -q "^  param ST = $2" "$3" || { echo "cannot fix KU=$1 ST=$2"; rc=1; }
}
fix 16 3 "$T/st3.pdl"
fix 32 2 "$T/ku32.pdl"
# label file variant-label
runs=("tiled $g tiled" "tiled32 $g tiled32" "k32_st3 $T/st3.pdl tiled32"
      "k32_ku32 $T/ku32.pdl tiled32")
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for r in "${runs[@]}"; do
  set -- $r
  step "$1: ptxas (sm_90)"
  "$P" "$2" $(gemm_args "$3") -target sm_90 -emit ptx -o "$T/$1.ptx" || rc=1
  [ -x "$PTXAS" ] && "$PTXAS" -arch=sm_90 -v "$T/$1.ptx" -o "$T/$1.cubin" 2>&1 | grep -E 'registers|spill'
done
for r in "${runs[@]:1}"; do
  set -- $r
  for kk in 32 96 160; do
    step "$1 256x384x$kk validated"
    timeout 60 "$P" "$2" $(gemm_args "$3") -D M=256 -D N=384 -D K=$kk -target sm_90 --run 2>&1 | tail -2
    [ ${PIPESTATUS[0]} = 0 ] || rc=1
  done
done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in racecheck memcheck; do
  step "compute-sanitizer $t on tiled32 256x256x96"
  timeout 120 "$CS" --tool $t --error-exitcode 9 "$P" $g -k gemm --schedule tiled32 -D M=256 -D N=256 -D K=96 \
      -target sm_90 --run --seed 3 >"$O/san_$t.log" 2>&1; s=$?
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san_$t.log" | head -1; echo "status $s"; [ $s = 0 ] || rc=1
done
for rep in 1 2 3; do
  for r in "${runs[@]}"; do
    set -- $r
    step "$1 4096^3 vs cuBLAS (round $rep)"
    timeout 120 "$P" "$2" $(gemm_args "$3") -target sm_90 --run --compare cublas --json >"$O/$1.$rep.json" 2>"$O/$1.$rep.err"; s=$?
    echo "status $s"; tail -3 "$O/$1.$rep.err"; [ $s = 0 ] || rc=1
  done
done
step "summary (median ms, cuBLAS median ms, vs_baseline)"
python3 - "$O" "${runs[@]}" <<'PY' || echo "(no python3: the JSON reports are in $O)"
import json, sys
out, runs = sys.argv[1], [r.split()[0] for r in sys.argv[2:]]
for name in runs:
    row = []
    for rep in (1, 2, 3):
        try:
            j = json.load(open(f"{out}/{name}.{rep}.json"))
            row.append("%.3f / %.3f / %.3f" % (j["time_ms"]["median"], j["baseline"]["time_ms"]["median"], j["vs_baseline"]))
        except Exception as e:
            row.append("n/a (%s)" % type(e).__name__)
    print("%-14s %s" % (name, "   ".join(row)))
PY
rm -rf "$T"
exit $rc
