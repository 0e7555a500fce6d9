#!/usr/bin/env bash
# The duration of each launch of a perfc kernel under Nsight Compute (clocks left
# alone): which launch of a multi-launch kernel (realigned copies, split-K's
# combination) takes the time.  Counters perturb timings; use for shares, not for
# docs/benchmarks.md.
#   N=3 bash bench/gpu/ncu_launches.sh FILE [perfc args...]   (carry carry/gpu)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
f=$1; shift
kn=$(basename "$f" .pdl)
ncu --clock-control none --kernel-name "regex:^${kn}_[0-9]+$" --launch-count "${N:-3}" \
    --metrics gpu__time_duration.sum,dram__bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    /tmp/pf/perfc "$f" "$@" --run --quiet 2>&1 | grep -E '^\s+[a-z_]+_[0-9]+|gpu__time|dram__bytes|sm__throughput' | cut -c1-120
