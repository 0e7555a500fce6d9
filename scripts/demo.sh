#!/usr/bin/env bash
# The main job, as far as perfc goes today (make demo):
#   1. every stdlib kernel parsed, checked, lowered and run on the f64 interpreter at
#      a small odd shape, with a one-line summary each;
#   2. the stdlib GEMM compiled for this CPU, validated and timed beside OpenBLAS,
#      1 thread and all threads;
#   3. the GPU rows (perfc vs cuBLAS) when a GPU is present, and a plain sentence when not.
set -uo pipefail
perfc=${1:-build/perfc}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

printf '\n== 1. stdlib kernels: parse, check, lower, interpret (f64 reference) ==\n\n'
printf '%-34s %-18s %6s %10s  %s\n' "file" "kernel" "loops" "interp ms" "status"
# Small odd sizes for every parameter the demo may meet; kernels with defaults keep them.
sizes=(-D M=33 -D N=17 -D K=7 -D B=2 -D H=2 -D S=9 -D D=8 -D R=7 -D C=33)
fail=0
for f in stdlib/*.pdl; do
  for k in $(sed -n 's/^kernel \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$f"); do
    # Bind the parameters this kernel has (overriding large defaults such as the
    # 4096 of the GPU GEMMs); convolution geometry keeps its own defaults.
    params=$(sed -n "s/^kernel $k(\(.*\)).*/\1/p" "$f" | tr -d ' ')
    args=()
    for ((i = 0; i < ${#sizes[@]}; i += 2)); do
      name=${sizes[i+1]%%=*}
      if echo ",$params," | grep -qE ",$name,"; then
        args+=(-D "${sizes[i+1]}")
      else
        def=$(echo ",$params," | sed -n "s/.*,$name=\([0-9]*\),.*/\1/p")
        [ -n "$def" ] && [ "$def" -gt 256 ] && args+=(-D "${sizes[i+1]}")
      fi
    done
    loops=$("$perfc" "$f" -k "$k" "${args[@]}" --no-schedule -emit ir 2>/dev/null | grep -c 'for ')
    out=$("$perfc" "$f" -k "$k" "${args[@]}" --no-schedule --run -target interp --seed 7 2>&1)
    rc=$?
    ms=$(echo "$out" | sed -n 's/.*seed [0-9]*, \([0-9.]*\) ms/\1/p' | head -1)
    if [ $rc -eq 0 ]; then st="ok"; else st="FAILED (exit $rc)"; fail=1; fi
    printf '%-34s %-18s %6s %10s  %s\n' "$f" "$k" "$loops" "${ms:--}" "$st"
  done
done

printf '\n== 2. CPU: sgemm through perfc beside OpenBLAS (validated, then timed) ==\n\n'
# One row per run: every number is from a kernel that passed validation in the same
# process (perfc exits 2 and prints no speed otherwise).
row() {  # row LABEL perfc-args...
  local label=$1; shift
  local j
  if j=$("$perfc" "$@" --json 2>/tmp/perfc_demo_err.$$); then
    echo "$j" | jq -r --arg l "$label" '[$l, (.time_ms.median|tostring), (.gflops*100|round/100|tostring),
        (.baseline.gflops // 0 |.*100|round/100|tostring), (.vs_baseline // 0 |.*1000|round/1000|tostring),
        (.rel_error|tostring)] | @tsv' | awk -F'\t' '{printf "%-34s %10.3f %9s %9s %7s  %s\n", $1, $2, $3, $4, $5, $6}'
  else
    echo "$label: FAILED (exit $?): $(tail -3 /tmp/perfc_demo_err.$$ | tr '\n' ' ')"; fail=1
  fi
  rm -f /tmp/perfc_demo_err.$$
}
if [ "${DEMO_SKIP_CPU:-0}" = 1 ]; then
  echo "DEMO_SKIP_CPU=1: CPU rows skipped"
elif "$perfc" stdlib/gemm.pdl -D M=64 -D N=64 -D K=64 -emit llvm >/dev/null 2>&1; then
  printf '%-34s %10s %9s %9s %7s  %s\n' "sgemm 1024^3" "ms" "GFLOP/s" "OpenBLAS" "ratio" "rel.error"
  for t in 1 $(nproc); do
    row "schedule from stdlib, $t thread(s)" stdlib/gemm.pdl -k gemm -target host -D M=1024 -D N=1024 -D K=1024 \
        --threads "$t" --run --compare openblas
  done
  printf '\n-- autotuning the same GEMM (database: %s) --\n\n' "${XDG_CACHE_HOME:-$HOME/.cache}/perfc/tune.db"
  "$perfc" stdlib/gemm.pdl -k gemm -target host -D M=1024 -D N=1024 -D K=1024 --threads 1 \
      --autotune --budget 24 --time 120 --compare openblas || fail=1
else
  echo "this perfc has no CPU code generator (LLVM 19 missing at build time): CPU rows skipped"
fi
printf '\n== 3. GPU ==\n\n'
# One JSON field of a perfc report (python3, which the GPU hosts have; jq may not be).
jf() { python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print("-" if d is None else ("%.4g" % d if isinstance(d, float) else d))' "$1"; }
gpu_row() {  # gpu_row LABEL perfc-args...: validated, then timed beside the library or copy
  local label=$1; shift
  local j
  if j=$("$perfc" "$@" --json 2>/tmp/perfc_demo_err.$$); then
    printf '%-44s %10s %10s %10s %8s  %s\n' "$label" "$(echo "$j" | jf time_ms.median)" \
      "$(echo "$j" | jf gflops)" "$(echo "$j" | jf gbps)" "$(echo "$j" | jf vs_baseline)" "$(echo "$j" | jf rel_error)"
  else
    echo "$label: FAILED (exit $?): $(tail -3 /tmp/perfc_demo_err.$$ | tr '\n' ' ')"; fail=1
  fi
  rm -f /tmp/perfc_demo_err.$$
}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  g=(-target "$arch")
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), target $arch"
  printf '%-44s %10s %10s %10s %8s  %s\n' "kernel (validated in the same run)" "ms" "GFLOP/s" "GB/s" "vs lib" "rel.error"
  # stdlib's gemm with each of its GPU schedule variants (and the dtypes they take)
  s4=(-D M=4096 -D N=4096 -D K=4096)
  for v in "tiled f32" "tiled32 f32" "tc f16" "tc bf16"; do
    set -- $v
    gpu_row "gemm $2 --schedule $1 4096^3 vs cuBLAS" stdlib/gemm.pdl -D T=$2 --schedule $1 "${s4[@]}" "${g[@]}" \
        --run --compare cublas
  done
  # Hopper: the warpgroup (wgmma) variant needs the architecture-specific target
  if [ "$arch" = sm_90 ]; then
    for t in f16 bf16; do
      gpu_row "gemm $t --schedule wg 4096^3 vs cuBLAS (sm_90a)" stdlib/gemm.pdl -D T=$t --schedule wg "${s4[@]}" \
          -target sm_90a --run --compare cublas
    done
  fi
  gpu_row "batched_gemm --schedule tiled 16x1024^3 vs cuBLAS" stdlib/batched_gemm.pdl -k batched_gemm --schedule tiled -D B=16 -D M=1024 -D N=1024 -D K=1024 "${g[@]}" --run --compare cublas
  gpu_row "conv2d --schedule tiled (ResNet 28x28x128, batch 8)" stdlib/conv2d.pdl --schedule tiled -D N=8 -D C=128 -D H=28 -D W=28 -D K=128 -D U=1 "${g[@]}" --run
  gpu_row "copy 8192^2 (the bandwidth yardstick)" bench/cpu/copy.pdl -D R=8192 -D C=8192 "${g[@]}" --run
  gpu_row "softmax 8192^2" stdlib/softmax.pdl -D R=8192 -D C=8192 "${g[@]}" --run
  gpu_row "layernorm 8192^2" stdlib/layernorm.pdl -D R=8192 -D C=8192 "${g[@]}" --run
  printf '\n-- autotuning on the GPU (database: %s) --\n\n' "${XDG_CACHE_HOME:-$HOME/.cache}/perfc/tune.db"
  for dt in f32 f16; do
    t=$arch; [ "$arch" = sm_90 ] && [ $dt = f16 ] && t=sm_90a   # wgmma templates on Hopper
    "$perfc" stdlib/gemm.pdl -D T=$dt -target $t -D M=4096 -D N=4096 -D K=4096 --no-schedule --autotune --budget 24 \
        --time 240 --compare cublas || fail=1
    echo
  done
else
  echo "no NVIDIA GPU on this machine: GPU rows skipped (perfc still emits CUDA: -target sm_90 -emit cuda)"
fi
exit $fail
