#!/usr/bin/env bash
# Hardware counters of one launch of a perfc kernel, for deciding what to change in
# a template (never for the timings in docs/benchmarks.md, which come from perfc's
# own harness).  Runs `perfc FILE ARGS --run` under Nsight Compute with the clocks
# left alone, profiles the first launch whose name matches NAME, and prints the
# speed-of-light, scheduler, warp-state (stall reasons), compute and memory sections.
#   NAME=mm_0 bash bench/gpu/ncu_kernel.sh FILE [perfc args...]   (carry carry/gpu)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
f=$1; shift
ncu --clock-control none --kernel-name "regex:^${NAME:-.*}$" --launch-count 1 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
    --section LaunchStats \
    /tmp/pf/perfc "$f" "$@" --run --quiet 2>&1 | grep -v '^==PROF==' | sed -n '/Section:/,$p' | grep -v -E '^\s*-+\s*$|OPT |^\s*$' | cut -c1-150
