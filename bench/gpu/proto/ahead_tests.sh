#!/usr/bin/env bash
# The GPU tests that the fragments-ahead pass and the 32-bit cp.async addresses touch,
# in one device call (carry carry/gpu/perfc.xz): ahead_gpu.sh, pad_gpu.sh,
# splitk_gpu.sh, wg_gpu.sh and flash_gpu.sh against the carried static perfc.
set -u
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
rc=0
for t in "ahead_gpu $PWD" "pad_gpu $PWD/bench/gpu/contractions" "splitk_gpu $PWD" "wg_gpu $PWD/stdlib" "flash_gpu $PWD/stdlib"; do
  set -- $t
  s=$(date +%s)
  bash tests/cuda/$1.sh /tmp/pf/perfc "$2" > "${OUT:-/tmp}/$1.log" 2>&1; r=$?
  echo "$1: rc=$r ($(( $(date +%s) - s )) s), $(grep -c '^ok' "${OUT:-/tmp}/$1.log") ok, $(grep -c '^FAIL' "${OUT:-/tmp}/$1.log") FAIL"
  grep -A3 '^FAIL' "${OUT:-/tmp}/$1.log" | head -12
  [ $r = 0 ] || rc=1
done
exit $rc
