#!/usr/bin/env bash
# One device call for programmatic dependent launch (docs/cuda.md "Launch
# boundaries"): the A/B timing (bench/gpu/pdl_ab.sh), compute-sanitizer memcheck and
# racecheck on a small split-K kernel, and the GPU tests whose kernels have several
# launches (split-K, decoding's combination, padded odd shapes), each with a time
# limit, logs under $OUT.  Carry carry/gpu/perfc.xz and carry/gpu/perfc-base.xz.
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/pdl_check}; mkdir -p "$O"
ROUNDS=${ROUNDS:-3} OUT=$O timeout ${AB_LIMIT:-280} bash bench/gpu/pdl_ab.sh > /dev/null 2>&1
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  timeout ${SAN_LIMIT:-100} "$CS" --tool $tool --error-exitcode 9 /tmp/pdl/new bench/gpu/kernels/user_klarge.pdl -k lin \
      -D M=200 -D N=250 -D K=4096 -target sm_90a --run --seed 3 > "$O/san_$tool.log" 2>&1
  echo "$tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san_$tool.log" | head -1) $(grep -m1 -o 'valid .*' "$O/san_$tool.log")" >> "$O/checks.log"
done
for t in ${TESTS:-splitk_gpu decode_gpu pad_gpu}; do
  dir=.; [ "$t" = pad_gpu ] && dir=bench/gpu/contractions
  timeout ${TEST_LIMIT:-80} bash tests/cuda/$t.sh /tmp/pdl/new $dir > "$O/$t.log" 2>&1
  echo "$t: exit $? $(tail -1 "$O/$t.log")" >> "$O/checks.log"
done
cat "$O/pdl_ab.log" "$O/checks.log"
