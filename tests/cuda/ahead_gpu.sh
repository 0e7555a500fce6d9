#!/usr/bin/env bash
# Contractions whose mma.sync slices read their fragments one slice ahead (pass
# gpu-frag-ahead: two register sets, the barrier that admits the next stage moved
# before the last slice's products), as sm_80 code with no schedule on a GPU (label
# gpu): each case first checks that the pass marked the slice loop, then validates
# on fresh inputs by --run; square and padded odd sizes, the nn.Linear and Aᵀ·B
# layouts, a batch, split-K, a fused epilogue, two products (SwiGLU), an NHWC
# convolution, and the 128 x 256 tiles of eight warps (a tuner template, given as a
# schedule) at 3 and 4 stages; small ones
# under compute-sanitizer memcheck and racecheck when the tool is there.
# Exit 77 without a GPU.  Usage: ahead_gpu.sh PERFC REPO_DIR
set -u
perfc=$1; dir=$2
. "$(dirname "$0")/gpu_check.sh"   # exits 77 without a GPU; sets tmp and fail
c=$dir/bench/gpu/contractions
t3=$(sed 's/param st in \[[0-9, ]*\]/param st = ST/' "$dir/bench/gpu/proto/mm80_t3.sched")
cases=("mm.pdl -D M=300 -D N=520 -D K=200" "mm.pdl -D M=1024 -D N=1024 -D K=16384"
       "mm.pdl -D M=16 -D N=4096 -D K=1000" "mm.pdl -D M=513 -D N=512 -D K=256 -D U=bf16"
       "linear.pdl -D M=200 -D N=384 -D K=256" "mm_tn.pdl -D M=256 -D N=192 -D K=96"
       "bmm.pdl" "linear_gelu.pdl -D M=256 -D N=512 -D K=200" "swiglu.pdl" "conv_nhwc.pdl")
ahead() {  # LABEL ARGS...: the pass marked a slice loop, and the kernel is valid
  local label=$1; shift
  if "$perfc" "$@" -target sm_80 -emit ir 2>&1 | grep -q 'fragments ahead'; then
    valid "$label" "$@" -target sm_80
  else
    echo "FAIL $label: no slice loop marked fragments ahead"; fail=1
  fi
}
for r in "${cases[@]}"; do
  # shellcheck disable=SC2086
  ahead "$r" "$c"/$r
done
for st in 3 4; do
  ahead "mm.pdl 128 x 256, $st stages, 512 x 768 x 320" "$c/mm.pdl" -D M=512 -D N=768 -D K=320 --no-schedule \
      -s "${t3/ST/$st}"
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$cs" ]; then
  for tool in memcheck racecheck; do
    for r in "mm.pdl -D M=300 -D N=200 -D K=100" "linear_gelu.pdl -D M=130 -D N=128 -D K=96"; do
      # shellcheck disable=SC2086
      clean "$cs" $tool "$r" "$c"/$r -target sm_80
    done
    clean "$cs" $tool "mm.pdl 128 x 256, 3 stages" "$c/mm.pdl" -D M=128 -D N=256 -D K=160 --no-schedule \
        -s "${t3/ST/3}" -target sm_80
  done
fi
exit $fail
