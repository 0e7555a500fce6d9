#!/usr/bin/env bash
# Nsight Compute's memory and throughput figures for the sm_80 GEMM templates
# (128 x 128 x 32 and 128 x 256 x 32, ST stages) at 4096^3 bf16 -> f32: is the L2 the limit?
#   bash bench/gpu/proto/mm80_ncu.sh   (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
for t in "t1 4" "t3 4" "t3 3"; do
  set -- $t
  echo "== template $1, $2 stages"
  ncu --clock-control none --kernel-name regex:^mm_0$ --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats \
      /tmp/pf/perfc bench/gpu/contractions/mm.pdl -target sm_80 --no-schedule \
      -s "$(sed "s/param st in \[[0-9, ]*\]/param st = $2/" bench/gpu/proto/mm80_$1.sched)" --run --quiet 2>&1 |
    grep -E "Duration|Throughput|Hit Rate|Busy|Achieved Occupancy|Eligible Warps|Active Warps Per|Bandwidth" | sed 's/  */ /g'
done
