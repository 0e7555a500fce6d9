#!/usr/bin/env bash
# Measures the warpgroup flash template with 256 query rows a block (four consumer
# warpgroups, one block an SM, the K and V tiles shared by four warpgroups instead of
# two) at 2 and 3 stages against the generated 128-row form (two warpgroups, two
# blocks an SM), 4x16x2048x128, validated and timed beside SDPA, two rounds.
#   bash bench/gpu/proto/rows256.sh   (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
P=bench/gpu/proto
for rep in 1 2; do
  echo "== round $rep"
  for v in rb128 rb256 rb256_st3; do
    echo "-- $v"; SCHEDFILE=$P/flash_wg_$v.sched bash bench/gpu/attention.sh d128 | grep -v '^NVIDIA\|^target'
  done
done
