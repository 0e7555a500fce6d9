#!/usr/bin/env bash
# Before/after on the GPU in one call: two perfc builds (carried as carry/gpu/perfc.xz,
# the change, and carry/gpu/perfc-base.xz, the tree before it) time the same kernels
# alternately, ROUNDS rounds, each run validated on fresh inputs; attention rows are
# set beside SDPA and GEMM rows beside cuBLASLt in the same call.  Prints one line
# per run; then the GPU tests named in TESTS (CTest's cuda_NAME) run on the new build.
# With OUT set, the lines are also written to OUT/ab.txt.
#   bash bench/gpu/ab.sh   (ROWS, ROUNDS, TARGET=sm_80, TESTS="ahead_gpu flash_gpu ...")
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/ab
xz -dc carry/gpu/perfc.xz > /tmp/ab/new && xz -dc carry/gpu/perfc-base.xz > /tmp/ab/old && chmod +x /tmp/ab/new /tmp/ab/old
T=${TARGET:-sm_80}
A=stdlib/attention.pdl C=stdlib/attention_causal.pdl U=bench/gpu/kernels/user_attention.pdl
G=bench/gpu/contractions
row_args() {  # "kind|spec|perfc args"
  case $1 in
    d128) echo "att|4:16:16:2048:2048:128:bf16|$A -D B=4 -D H=16 -D S=2048 -D D=128" ;;
    d64) echo "att|4:16:16:2048:2048:64:bf16|$A -D B=4 -D H=16 -D S=2048 -D D=64" ;;
    c-d128) echo "att|4:16:16:2048:2048:128:bf16:causal|$C -D B=4 -D H=16 -D S=2048 -D D=128" ;;
    gqa) echo "att|4:16:4:2048:2048:128:bf16|$U -k gqa -D B=4 -D H=16 -D KVH=4 -D S=2048 -D D=128" ;;
    s4096) echo "att|1:16:16:4096:4096:128:bf16|$A -D B=1 -D H=16 -D S=4096 -D D=128" ;;
    s8192) echo "att|1:16:16:8192:8192:128:bf16|$A -D B=1 -D H=16 -D S=8192 -D D=128" ;;
    c-d64) echo "att|4:16:16:2048:2048:64:bf16:causal|$C -D B=4 -D H=16 -D S=2048 -D D=64" ;;
    decode) echo "att|8:16:16:1:8192:128:bf16|$U -k cross -D B=8 -D H=16 -D SQ=1 -D SK=8192 -D D=128" ;;
    mm) echo "mm||$G/mm.pdl" ;;
    mm-t3) echo "mm||$G/mm.pdl --no-schedule -s @bench/gpu/proto/mm80_t3.sched" ;;
    linear) echo "mm||$G/linear.pdl" ;;
    odd) echo "mm||$G/mm.pdl -D M=4095 -D N=4097 -D K=1023 -D U=bf16" ;;
  esac
}
one() {  # BIN ROW ROUND
  IFS='|' read -r kind spec args <<< "$(row_args "$2")"
  local a=() x
  for x in $args; do
    if [[ $x == @* ]]; then a+=("$(sed 's/param st in \[[0-9, ]*\]/param st = 4/' "${x#@}")"); else a+=("$x"); fi
  done
  local cmp=()
  [ "$kind" = mm ] && cmp=(--compare cublas)
  local sd=nan
  if [ "$kind" = att ]; then
    sd=$(python3 bench/gpu/attention.py "$spec" 2>/dev/null | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["ms"])')
  fi
  /tmp/ab/$1 "${a[@]}" -target "$T" --run --json "${cmp[@]}" 2>/tmp/ab/err.txt | python3 -c '
import json, sys
r = json.load(sys.stdin); t = r["time_ms"]["median"]
b = (r.get("baseline") or {}).get("time_ms", {}).get("median") or float(sys.argv[4])
print("round %s %-7s %-4s %s  perfc %.4f ms  library %.4f ms  ratio %.3f" % (sys.argv[3], sys.argv[2], sys.argv[1],
      "valid" if r["valid"] else "INVALID", t, b, b / t), flush=True)' "$1" "$2" "$3" "$sd" || tail -3 /tmp/ab/err.txt
}
[ -n "${OUT:-}" ] && exec > >(tee "$OUT/ab.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "target $T, $(date -u)"
for round in $(seq "${ROUNDS:-2}"); do
  for r in ${ROWS:-d128 c-d128 gqa d64 mm-t3 linear}; do
    one old "$r" "$round"; one new "$r" "$round"
  done
done
for t in ${TESTS:-}; do   # the command line of CTest's cuda_$t, on the new build
  cmd=$(sed -n "s/^add_test(NAME cuda_$t COMMAND \(.*\))\$/\1/p" tests/cuda/CMakeLists.txt |
        sed -e "s|\$<TARGET_FILE:perfc>|/tmp/ab/new|g" -e "s|\${CMAKE_CURRENT_SOURCE_DIR}|$PWD/tests/cuda|g" \
            -e "s|\${CMAKE_SOURCE_DIR}|$PWD|g")
  [ -n "$cmd" ] || { echo "test $t: not in tests/cuda/CMakeLists.txt"; continue; }
  # shellcheck disable=SC2086
  bash $cmd > /tmp/ab/$t.log 2>&1
  echo "test $t: rc=$?, $(grep -c '^ok' /tmp/ab/$t.log) ok, $(grep -c '^FAIL' /tmp/ab/$t.log) failed"; grep -A3 '^FAIL' /tmp/ab/$t.log
done
