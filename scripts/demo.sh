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
    # Bind only the parameters this kernel has.
    params=$(sed -n "s/^kernel $k(\(.*\)).*/\1/p" "$f" | tr -d ' ')
    args=()
    for ((i = 0; i < ${#sizes[@]}; i += 2)); do
      name=${sizes[i+1]%%=*}
      if echo ",$params," | grep -qE ",$name(=[0-9]+)?,"; then
        echo ",$params," | grep -qE ",$name=[0-9]+," || args+=(-D "${sizes[i+1]}")
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
if "$perfc" stdlib/gemm.pdl -D M=64 -D N=64 -D K=64 -emit llvm >/dev/null 2>&1; then
  for t in 1 $(nproc); do
    "$perfc" stdlib/gemm.pdl -k gemm -target host -D M=1024 -D N=1024 -D K=1024 --threads "$t" --run --compare openblas || fail=1
    echo
  done
else
  echo "this perfc has no CPU code generator (LLVM 19 missing at build time): CPU rows skipped"
fi

printf '\n== 3. GPU ==\n\n'
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  for dt in gemm gemm_f16; do
    "$perfc" stdlib/gemm.pdl -k $dt -target sm_90 -D M=4096 -D N=4096 -D K=4096 --run --compare cublas || fail=1
  done
else
  echo "no NVIDIA GPU on this machine: GPU rows skipped (perfc still emits CUDA: -target sm_90 -emit cuda)"
fi
exit $fail
