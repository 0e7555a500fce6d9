#!/usr/bin/env bash
# Hardware counters of a perfc kernel, for deciding what to change in a template
# (never for the timings in docs/benchmarks.md, which come from perfc's own
# harness; counters perturb timings).  Runs `perfc FILE ARGS --run` under Nsight
# Compute with the clocks left alone.
#   NAME=mm_0 bash bench/gpu/ncu_kernel.sh FILE [perfc args...]
#       the first launch whose name matches NAME: speed-of-light, scheduler,
#       warp-state (stall reasons), compute, memory, occupancy and launch sections
#   STALLS=1 NAME=attention_0 bash bench/gpu/ncu_kernel.sh FILE [perfc args...]
#       the stall reasons per issued instruction, the instructions executed, and the
#       kernel's SASS instruction mix (cuobjdump of `-emit cubin`)
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
if [ -n "${STALLS:-}" ]; then
  /tmp/pf/perfc "$f" "$@" -emit cubin -o /tmp/pf/k.cubin && cuobjdump -sass /tmp/pf/k.cubin > /tmp/pf/k.sass
  echo "SASS: $(grep -c '^\s*/\*[0-9a-f]*\*/' /tmp/pf/k.sass) instructions; the most frequent:"
  grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' /tmp/pf/k.sass | awk '{print $NF}' | sort | uniq -c |
    sort -rn | head -20
  m=smsp__inst_executed.sum
  for s in wait barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle dispatch_stall \
           not_selected selected lg_throttle branch_resolving no_instruction; do
    m="$m,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
  done
  ncu --clock-control none --kernel-name "regex:^${NAME:-.*}$" --launch-count 1 --metrics "$m" \
      /tmp/pf/perfc "$f" "$@" --run --quiet 2>&1 | grep -E 'smsp__' | sed 's/smsp__average_warps_issue_stalled_//'
elif [ -n "${LAUNCHES:-}" ]; then
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
