#!/usr/bin/env bash
# A long fuzz campaign of the whole compile path (tests/fuzz/fuzz_compile.c, built
# with ASan/UBSan/LeakSanitizer by scripts/fuzz.sh) spread over several processes:
# TOTAL executions in all, split evenly over JOBS processes with distinct seeds on
# one shared corpus.  Prints each process's final libFuzzer statistics and the sum
# of executed units; exits nonzero if any process found a crash, a sanitizer
# report, a leak, a timeout or an out-of-memory (its input is left under OUT).
# Runs anywhere the binary runs (it needs only libc/libstdc++), so a campaign can
# use a many-core machine: carry the binary and a tarball of the corpus.
#
#   scripts/fuzz_campaign.sh TOTAL JOBS [BINARY] [CORPUS_DIR]
#   (defaults build-fuzz/fuzz_compile, build-fuzz/corpus-compile; MAX_TIME=S stops
#    each process after S seconds with its statistics; logs in $OUT or
#    /tmp/fuzz-campaign)
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:?TOTAL executions}
JOBS=${2:?JOBS}
BIN=${3:-build-fuzz/fuzz_compile}
CORPUS=${4:-build-fuzz/corpus-compile}
LOG=${OUT:-/tmp/fuzz-campaign}
mkdir -p "$LOG"
per=$(( (TOTAL + JOBS - 1) / JOBS ))
echo "fuzz_campaign: $JOBS x $per executions of $BIN on $CORPUS ($(ls "$CORPUS" | wc -l) inputs), $(date -u +%FT%TZ)"
# SHARD=1: each process starts from its own slice of the corpus (read-only) and
# writes what it finds to a folder of its own, so that no process spends its first
# minute replaying every input of a large corpus.
dirs=()
for ((i = 0; i < JOBS; i++)); do
  if [ -n "${SHARD:-}" ]; then
    mkdir -p "$LOG/new$i" "$LOG/shard$i"
    ls "$CORPUS" | awk -v n="$JOBS" -v i="$i" 'NR % n == i' | while read -r f; do ln -sf "$(realpath "$CORPUS/$f")" "$LOG/shard$i/$f"; done
    dirs[$i]="$LOG/new$i $LOG/shard$i"
  else
    dirs[$i]=$CORPUS
  fi
done
pids=()
for ((i = 0; i < JOBS; i++)); do
  # shellcheck disable=SC2086
  "$BIN" -runs="$per" ${MAX_TIME:+-max_total_time=$MAX_TIME} -seed=$((1000 + i)) -max_len=65536 -timeout=60 -rss_limit_mb=2048 \
    -dict=tests/fuzz/pdl.dict -artifact_prefix="$LOG/" -print_final_stats=1 ${dirs[$i]} \
    > "$LOG/job$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "fuzz_campaign: job $i exited $?: see $LOG/job$i.log"; tail -30 "$LOG/job$i.log"; rc=1; }
done
total=0
for ((i = 0; i < JOBS; i++)); do
  n=$(grep -m1 'stat::number_of_executed_units' "$LOG/job$i.log" | awk '{print $2}')
  echo "job $i: ${n:-?} executions, $(grep -m1 'stat::peak_rss_mb' "$LOG/job$i.log")"
  total=$((total + ${n:-0}))
done
echo "fuzz_campaign: $total executions in all, $(date -u +%FT%TZ), exit $rc"
ls "$LOG" | grep -E '^(crash|leak|timeout|oom)-' && rc=1
exit $rc
