#!/usr/bin/env bash
# Compares what two perfc binaries emit (assembly, or LLVM IR) for the stdlib
# kernels: the bench shapes of bench/cpu/run.sh and odd shapes that leave split
# tails, padded borders and partial tiles.  Prints SAME or DIFF (with the number of
# differing lines) per case; the outputs stay in OUT for a closer look.
#
#   bench/cpu/compare_emit.sh OLD_PERFC NEW_PERFC [asm|llvm] [OUT]
set -uo pipefail
cd "$(dirname "$0")/../.."
old=$1 new=$2 kind=${3:-asm} out=${4:-$(mktemp -d /tmp/perfc_cmp.XXXXXX)}
mkdir -p "$out/old" "$out/new"
cases=(
    "gemm_256 stdlib/gemm.pdl -D M=256 -D N=256 -D K=256"
    "gemm_1024 stdlib/gemm.pdl -D M=1024 -D N=1024 -D K=1024"
    "gemm_127 stdlib/gemm.pdl -D M=127 -D N=1024 -D K=1024"
    "gemm_k64 stdlib/gemm.pdl -D M=1024 -D N=1024 -D K=64"
    "gemm_odd stdlib/gemm.pdl -D M=37 -D N=53 -D K=29"
    "gemm_T_f16 stdlib/gemm.pdl -D T=f16 -D M=64 -D N=96 -D K=80"
    "gemm_nt stdlib/gemm_nt.pdl -D M=100 -D N=130 -D K=70"
    "gemm_tn stdlib/gemm_tn.pdl -D M=100 -D N=130 -D K=70"
    "gemm_bias_relu stdlib/gemm_bias_relu.pdl -D M=100 -D N=130 -D K=70"
    "batched_gemm stdlib/batched_gemm.pdl -D B=3 -D M=40 -D N=50 -D K=30"
    "conv_64 stdlib/conv2d.pdl -D N=1 -D C=64 -D H=56 -D W=56 -D K=64 -D R=3 -D S=3 -D U=1 -D P=1"
    "conv_128 stdlib/conv2d.pdl -D N=1 -D C=128 -D H=28 -D W=28 -D K=128 -D R=3 -D S=3 -D U=1 -D P=1"
    "conv_256 stdlib/conv2d.pdl -D N=1 -D C=256 -D H=14 -D W=14 -D K=256 -D R=3 -D S=3 -D U=1 -D P=1"
    "conv_small stdlib/conv2d.pdl"
    "conv_tiled stdlib/conv2d.pdl -k conv2d --schedule tiled -D H=28 -D W=28 -D K=128 -D U=1 -D N=1"
    "depthwise stdlib/depthwise_conv2d.pdl"
    "softmax stdlib/softmax.pdl -D R=4096 -D C=4096"
    "softmax_odd stdlib/softmax.pdl -D R=33 -D C=1000"
    "layernorm stdlib/layernorm.pdl -D R=4096 -D C=4096"
    "layernorm_odd stdlib/layernorm.pdl -D R=33 -D C=1000"
    "attention stdlib/attention.pdl -D B=1 -D H=2 -D S=64 -D D=32"
    "attention_causal stdlib/attention_causal.pdl -D B=1 -D H=2 -D S=64 -D D=32"
)
same=0 diff=0
for c in "${cases[@]}"; do
    read -r name args <<<"$c"
    # shellcheck disable=SC2086
    "$old" $args -emit "$kind" >"$out/old/$name" 2>&1
    # shellcheck disable=SC2086
    "$new" $args -emit "$kind" >"$out/new/$name" 2>&1
    if cmp -s "$out/old/$name" "$out/new/$name"; then
        echo "SAME $name"; same=$((same + 1))
    else
        echo "DIFF $name ($(diff "$out/old/$name" "$out/new/$name" | grep -c '^[<>]') lines)"; diff=$((diff + 1))
    fi
done
echo "# $same same, $diff different; outputs in $out"
