#!/usr/bin/env bash
# Measures the warpgroup flash kernels without the block-wide barrier at the top of
# every key tile (mkdecouple.py: the last warp done with a stage refills it) against
# them as generated, each validated and timed by perfc --run (PERFC_CUDA_SOURCE) beside
# SDPA, two rounds; and the edit under compute-sanitizer racecheck and memcheck at a
# small size.   bash bench/gpu/proto/decouple.sh   (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/pf /tmp/proto && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gen() {  # gen NAME PDL ARGS...
  local n=$1 f=$2; shift 2
  /tmp/pf/perfc "$f" "$@" -target sm_90a -emit cuda > /tmp/proto/$n.cu || exit 1
  python3 bench/gpu/proto/mkdecouple.py /tmp/proto/$n.cu /tmp/proto/$n-dec.cu || exit 1
}
A=stdlib/attention.pdl; C=stdlib/attention_causal.pdl
gen d128 $A -D B=4 -D H=16 -D S=2048 -D D=128
gen d64 $A -D B=4 -D H=16 -D S=2048 -D D=64
gen c-d128 $C -D B=4 -D H=16 -D S=2048 -D D=128
gen s8192 $A -D B=1 -D H=16 -D S=8192 -D D=128
gen small $A -D B=1 -D H=2 -D S=256 -D D=128
gen csmall $C -D B=1 -D H=2 -D S=384 -D D=64
for rep in 1 2; do
  echo "== round $rep"
  for r in d128 d64 c-d128 s8192; do
    bash bench/gpu/attention.sh $r | grep -v '^NVIDIA\|^target'
    echo "-- $r without the tile barrier"
    PERFC_CUDA_SOURCE=/tmp/proto/$r-dec.cu bash bench/gpu/attention.sh $r | grep -v '^NVIDIA\|^target'
  done
done
cs=/usr/local/cuda/bin/compute-sanitizer
for k in "small $A -D B=1 -D H=2 -D S=256 -D D=128" "csmall $C -D B=1 -D H=2 -D S=384 -D D=64"; do
  set -- $k; n=$1; shift
  for tool in memcheck racecheck; do
    PERFC_CUDA_SOURCE=/tmp/proto/$n-dec.cu $cs --tool $tool --error-exitcode 9 /tmp/pf/perfc "$@" -target sm_90a \
        --run --quiet > /tmp/proto/$n-$tool.txt 2>&1
    echo "$n $tool exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/proto/$n-$tool.txt) $(grep -m1 '^valid' /tmp/proto/$n-$tool.txt)"
  done
done
