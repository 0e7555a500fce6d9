#!/usr/bin/env bash
# Every legal GPU schedule computes the right answer: random games of the dojo's
# move set (`perfc dojo --agent random`, which offers only moves that apply and
# that the CUDA back end emits) on small odd-sized stdlib kernels, every state
# compiled, run and validated on the GPU against the f64 reference.  Counts the
# measured states and the invalid ones (the harness prints "INVALID kernel after
# MOVES"); any invalid state is a miscompiled legal schedule.
# Carry carry/gpu/perfc.xz (static perfc).   bash bench/gpu/gpu_property.sh
#   SEEDS (default 6) games per kernel, STEPS (default 12) moves per game, TARGET sm_90
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=${WORK:-/tmp/perfc_gpu_property}; O=${OUT:-$W/out}; mkdir -p "$W" "$O"
[ -x "$W/perfc" ] || { xz -dc carry/gpu/perfc.xz > "$W/perfc" && chmod +x "$W/perfc"; } || exit 1
P=$W/perfc T=${TARGET:-sm_90}
# the dojo binds sizes only, not dtype parameters: gemm at T = f16 as a kernel of its own
python3 scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_f16 T=f16 > "$W/gemm_f16.pdl" || exit 1
games=(
    "stdlib/gemm.pdl -k gemm -D M=96 -D N=80 -D K=40"
    "$W/gemm_f16.pdl -k gemm_f16 -D M=64 -D N=48 -D K=32"
    "stdlib/softmax.pdl -k softmax -D R=33 -D C=100"
    "stdlib/layernorm.pdl -k layernorm -D R=17 -D C=96"
    "stdlib/batched_gemm.pdl -k batched_gemm -D B=3 -D M=40 -D N=24 -D K=16"
    "stdlib/conv2d.pdl -k conv2d"
)
total=0 bad=0 failed=0
for g in "${games[@]}"; do
    for ((s = 1; s <= ${SEEDS:-6}; s++)); do
        log=$O/$(echo "$g" | tr -c 'A-Za-z0-9' _)_$s.log
        # shellcheck disable=SC2086
        timeout 120 "$P" dojo --agent random $g -target "$T" --seed "$s" --steps "${STEPS:-12}" > "$log" 2>&1
        rc=$?
        n=$(grep -c '^  \[' "$log"); b=$(grep -c 'INVALID kernel' "$log")
        total=$((total + n)); bad=$((bad + b))
        [ $rc -ne 0 ] && failed=$((failed + 1)) && echo "exit $rc: $g seed $s" && tail -3 "$log"
        [ "$b" -gt 0 ] && grep 'INVALID kernel' "$log" | head -3
    done
done
echo "gpu property: $total states measured on $T, $bad invalid, $failed games that did not finish"
[ "$bad" -eq 0 ] && [ "$failed" -eq 0 ]
