#!/usr/bin/env bash
# Side-by-side speed of two perfc binaries on the CPU bench kernels: sgemm at the
# shapes of bench/cpu/run.sh, conv2d at three ResNet-50 layers, softmax and
# layernorm at 4096 x 4096, 1 thread, `--run --json` (every timed kernel validated
# in the same process).  Runs alternate between the binaries (old, new, old, new,
# ...) so that a change in the machine's load hits both alike; each column is the
# median of REPS runs, and the load average is printed before and after.
#
#   bench/cpu/compare.sh OLD_PERFC NEW_PERFC
#   REPS=5 THREADS=1 bench/cpu/compare.sh /tmp/perfc-base build/perfc
set -euo pipefail
cd "$(dirname "$0")/../.."
old=$1 new=$2
REPS=${REPS:-3}
THREADS=${THREADS:-1}
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
echo "# $(date -u +%FT%TZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;  load before: $(cut -d' ' -f1-3 /proc/loadavg);  REPS=$REPS, $THREADS thread(s)"
printf '%-34s %10s %10s %7s  %s\n' case old new new/old unit
cases=(
    "sgemm 256^3|gflops|stdlib/gemm.pdl -D M=256 -D N=256 -D K=256"
    "sgemm 512^3|gflops|stdlib/gemm.pdl -D M=512 -D N=512 -D K=512"
    "sgemm 1024^3|gflops|stdlib/gemm.pdl -D M=1024 -D N=1024 -D K=1024"
    "sgemm 2048^3|gflops|stdlib/gemm.pdl -D M=2048 -D N=2048 -D K=2048"
    "sgemm 127x1024x1024|gflops|stdlib/gemm.pdl -D M=127 -D N=1024 -D K=1024"
    "sgemm 1024x1024x64|gflops|stdlib/gemm.pdl -D M=1024 -D N=1024 -D K=64"
    "conv2d 64,56x56,64|gflops|stdlib/conv2d.pdl -D N=1 -D C=64 -D H=56 -D W=56 -D K=64 -D R=3 -D S=3 -D U=1 -D P=1"
    "conv2d 128,28x28,128|gflops|stdlib/conv2d.pdl -D N=1 -D C=128 -D H=28 -D W=28 -D K=128 -D R=3 -D S=3 -D U=1 -D P=1"
    "conv2d 256,14x14,256|gflops|stdlib/conv2d.pdl -D N=1 -D C=256 -D H=14 -D W=14 -D K=256 -D R=3 -D S=3 -D U=1 -D P=1"
    "softmax 4096x4096|gbps|stdlib/softmax.pdl -D R=4096 -D C=4096"
    "layernorm 4096x4096|gbps|stdlib/layernorm.pdl -D R=4096 -D C=4096"
)
for c in "${cases[@]}"; do
    IFS='|' read -r label field args <<<"$c"
    os=() ns=()
    for ((r = 0; r < REPS; r++)); do
        for which in old new; do
            bin=$old; [[ $which == new ]] && bin=$new
            # shellcheck disable=SC2086
            v=$("$bin" $args --threads "$THREADS" --run --json 2>/dev/null | jq -r ".$field // empty" || true)
            if [[ $which == old ]]; then os+=("$v"); else ns+=("$v"); fi
        done
    done
    o=$(printf '%s\n' "${os[@]}" | grep -v '^$' | median)
    n=$(printf '%s\n' "${ns[@]}" | grep -v '^$' | median)
    awk -v l="$label" -v o="$o" -v n="$n" -v u="${field/gflops/GFLOP\/s}" \
        'BEGIN {u = (u == "gbps" ? "GB/s" : u); printf "%-34s %10.2f %10.2f %7.3f  %s\n", l, o, n, (o > 0 ? n / o : 0), u}'
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
