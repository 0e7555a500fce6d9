#!/usr/bin/env bash
# Times the CUDA back end before and after the GPU target passes (passes/gpu_*.c)
# in one run on one GPU: the stdlib GEMMs (SIMT, mma.sync, wgmma), softmax,
# layernorm and an unscheduled GEMM, each with the old and the new perfc, old and new
# alternating three times per kernel, validated by perfc's harness each time.  It
# first diffs the CUDA C the two emit for every row: identical source means the same
# speed, and the table shows whether the times agree within noise anyway.
# Needs two static perfc builds (cmake -DPERFC_LLVM_STATIC=ON), xz-compressed:
#   carry/gpu/perfc_old.xz   built from the main commit the branch started from
#   carry/gpu/perfc_new.xz   built from the branch with the GPU target passes
# Run from the repository root:  bash bench/gpu/passes_compare.sh   (ROUNDS=N: alternations, default 3)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/passes_compare}; mkdir -p "$O" /tmp/pf
for v in old new; do
  [ -x /tmp/pf/perfc_$v ] || { xz -dc carry/gpu/perfc_$v.xz > /tmp/pf/perfc_$v && chmod +x /tmp/pf/perfc_$v; } || exit 1
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
med() {  # med PERFC ARGS...: the kernel's median time in ms, or "FAIL"
  "$1" "${@:2}" --run --json 2>>"$O/err.log" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); ok=r.get("valid", r.get("golden")); t=r["time_ms"]; print("%.4f" % t["median"] if t and ok is not False else "FAIL")' 2>>"$O/err.log" || echo FAIL
}
row() {  # row LABEL TARGET ARGS...
  local label=$1 t=$2; shift 2
  local same=differs
  /tmp/pf/perfc_old "$@" -target "$t" -emit cuda -o "$O/old.cu" 2>>"$O/err.log"
  /tmp/pf/perfc_new "$@" -target "$t" -emit cuda -o "$O/new.cu" 2>>"$O/err.log"
  # the one expected difference: a comment the old emitter wrote for a removed fill
  diff -q <(grep -v 'is overwritten by the next nest before any read' "$O/old.cu") "$O/new.cu" >/dev/null && same=identical
  local o=() n=()
  for ((i = 1; i <= ${ROUNDS:-3}; i++)); do
    o+=("$(med /tmp/pf/perfc_old "$@" -target "$t")")
    n+=("$(med /tmp/pf/perfc_new "$@" -target "$t")")
  done
  python3 - "$label" "$same" "${o[@]}" "${n[@]}" <<'PY'
import statistics, sys
label, same, v = sys.argv[1], sys.argv[2], sys.argv[3:]
o, n = v[:len(v) // 2], v[len(v) // 2:]  # ROUNDS old times, then ROUNDS new
def m(x):
    x = [float(a) for a in x if a != "FAIL"]
    return statistics.median(x) if x else float("nan")
mo, mn = m(o), m(n)
print(f"{label:28s} CUDA {same:9s} old {mo:8.4f} ms  new {mn:8.4f} ms  new/old {mn / mo:6.3f}   (old {' '.join(o)}; new {' '.join(n)})")
PY
}
row gemm-tiled-4096 sm_90 stdlib/gemm.pdl -k gemm --schedule tiled -D M=4096 -D N=4096 -D K=4096
row gemm-tiled32-4096 sm_90 stdlib/gemm.pdl -k gemm --schedule tiled32 -D M=4096 -D N=4096 -D K=4096
row gemm-f16-tc-4096 sm_90 stdlib/gemm.pdl -k gemm -D T=f16 --schedule tc -D M=4096 -D N=4096 -D K=4096
row gemm-bf16-tc-4096 sm_90 stdlib/gemm.pdl -k gemm -D T=bf16 --schedule tc -D M=4096 -D N=4096 -D K=4096
row gemm-f16-wg-4096 sm_90a stdlib/gemm.pdl -k gemm -D T=f16 --schedule wg -D M=4096 -D N=4096 -D K=4096
row gemm-bf16-wg-4096 sm_90a stdlib/gemm.pdl -k gemm -D T=bf16 --schedule wg -D M=4096 -D N=4096 -D K=4096
row batched_gemm-tiled sm_90 stdlib/batched_gemm.pdl -k batched_gemm --schedule tiled -D B=16 -D M=1024 -D N=1024 -D K=1024
row conv2d-tiled sm_90 stdlib/conv2d.pdl -k conv2d --schedule tiled -D N=8 -D C=128 -D H=28 -D W=28 -D K=128 -D U=1
row softmax-8192 sm_90 stdlib/softmax.pdl -D R=8192 -D C=8192
row layernorm-8192 sm_90 stdlib/layernorm.pdl -D R=8192 -D C=8192
row gemm-unscheduled-1024 sm_90 stdlib/gemm.pdl -k gemm -D M=1024 -D N=1024 -D K=1024
tail -20 "$O/err.log"
