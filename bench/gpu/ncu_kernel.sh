#!/usr/bin/env bash
# Hardware counters of a perfc kernel, for deciding what to change in a template
# (never for the timings in docs/benchmarks.md, which come from perfc's own
# harness; counters perturb timings).  Runs `perfc FILE ARGS --run` under Nsight
# Compute with the clocks left alone.
#   NAME=mm_0 bash bench/gpu/ncu_kernel.sh FILE [perfc args...]
#       the first launch whose name matches NAME: speed-of-light, scheduler,
#       warp-state (stall reasons), compute, memory, occupancy and launch sections
#   LAUNCHES=3 bash bench/gpu/ncu_kernel.sh FILE [perfc args...]
#       the duration, DRAM bytes and SM throughput of the kernel's first LAUNCHES
#       launches: which launch of a multi-launch kernel (realigned copies, split-K's
#       combination) takes the time
# (carry carry/gpu)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
f=$1; shift
if [ -n "${LAUNCHES:-}" ]; then
  ncu --clock-control none --kernel-name "regex:^$(basename "$f" .pdl)_[0-9]+$" --launch-count "$LAUNCHES" \
      --metrics gpu__time_duration.sum,dram__bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
      /tmp/pf/perfc "$f" "$@" --run --quiet 2>&1 |
    grep -E '^\s+[a-z_]+_[0-9]+|gpu__time|dram__bytes|sm__throughput' | cut -c1-120
else
  ncu --clock-control none --kernel-name "regex:^${NAME:-.*}$" --launch-count 1 \
      --section SpeedOfLight --section SchedulerStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats \
      /tmp/pf/perfc "$f" "$@" --run --quiet 2>&1 | grep -v '^==PROF==' | sed -n '/Section:/,$p' |
    grep -v -E '^\s*-+\s*$|OPT |^\s*$' | cut -c1-150
fi
