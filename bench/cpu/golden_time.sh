#!/usr/bin/env bash
# How long the golden reference takes in `perfc --run` at the bench sizes of the CPU
# (docs/benchmarks-log.md, "Golden references at bench sizes"): every stdlib kernel that
# has a CPU meaning (the GPU-only kernels, whose defaults are 4096^3 tensor-core
# shapes, are left out), one run each with --verbose, which prints the golden's
# total time (set-up, and the reference on every input set).  Prints one row per
# kernel: the golden kind and its seconds, and the wall time of the whole --run.
#
#   bench/cpu/golden_time.sh [perfc] [extra perfc args...]
set -uo pipefail
cd "$(dirname "$0")/../.."
PERFC=${1:-build/perfc}
[ $# -gt 0 ] && shift
extra=("$@")

cases=(
  "gemm 2048^3|stdlib/gemm.pdl -k gemm -D M=2048 -D N=2048 -D K=2048"
  "gemm T=f16 1024^3|stdlib/gemm.pdl -D T=f16 -D M=1024 -D N=1024 -D K=1024"
  "gemm_nt 1024^3|stdlib/gemm_nt.pdl -D M=1024 -D N=1024 -D K=1024"
  "gemm_tn 1024^3|stdlib/gemm_tn.pdl -D M=1024 -D N=1024 -D K=1024"
  "gemm_bias_relu 1024^3|stdlib/gemm_bias_relu.pdl -D M=1024 -D N=1024 -D K=1024"
  "batched_gemm 8x256^3|stdlib/batched_gemm.pdl -k batched_gemm -D B=8 -D M=256 -D N=256 -D K=256"
  "conv2d 64,56x56,64 3x3|stdlib/conv2d.pdl -k conv2d -D N=1 -D C=64 -D H=56 -D W=56 -D K=64 -D R=3 -D S=3 -D U=1 -D P=1"
  "depthwise_conv2d 128,56x56|stdlib/depthwise_conv2d.pdl -D N=1 -D C=128 -D H=56 -D W=56"
  "softmax 4096^2|stdlib/softmax.pdl -D R=4096 -D C=4096"
  "layernorm 4096^2|stdlib/layernorm.pdl -D R=4096 -D C=4096"
  "attention 1x8x1024x64|stdlib/attention.pdl -D B=1 -D H=8 -D S=1024 -D D=64"
  "attention_causal 1x8x1024x64|stdlib/attention_causal.pdl -D B=1 -D H=8 -D S=1024 -D D=64"
  "user bf16 gemm 1024^3|bench/gpu/kernels/user_bf16_gemm.pdl -D M=1024 -D N=1024 -D K=1024"
)
echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;  load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-30s %-44s %9s %9s %s\n' kernel golden "golden s" "total s" valid
for c in "${cases[@]}"; do
  label=${c%%|*}
  read -r -a args <<<"${c#*|}"
  t0=$(date +%s.%N)
  out=$("$PERFC" "${args[@]}" --run --json --verbose --seed 1 "${extra[@]}" 2>/tmp/perfc_golden_err.$$)
  rc=$?
  t1=$(date +%s.%N)
  g=$(sed -n 's/^perfc: golden \(.*\): \([0-9.]*\) ms in all.*/\1 \2/p' /tmp/perfc_golden_err.$$)
  valid=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("valid"))' 2>/dev/null || echo "exit $rc")
  printf '%-30s %-44s %9.2f %9.2f %s\n' "$label" "${g% *}" "$(awk -v m="${g##* }" 'BEGIN{print m/1000}')" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$valid"
done
rm -f /tmp/perfc_golden_err.$$
