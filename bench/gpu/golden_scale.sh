#!/usr/bin/env bash
# Validation at full size on a GPU (docs/benchmarks-log.md, "Golden references at
# bench sizes"): the wall time of `perfc FILE -target sm_90 --run` for a GEMM written
# as a new user writes it (bf16 in and out, no schedule) at 4096^3, the same as a
# linear layer (Y = X W^T), and stdlib attention and causal attention at S = 4096,
# with the golden reference each used and its seconds (--verbose).  Bar: under 5 s
# in all on an H100/H200.  It builds nothing: perfc is the static binary carried as
# carry/gpu/perfc.xz (or PERFC=path).  Logs go to $OUT.
#
#   bench/gpu/golden_scale.sh [target] [extra perfc args...]
#   SMALL=1 PERFC=build/perfc bench/gpu/golden_scale.sh host   # smoke test on the CPU, small sizes
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/golden_scale}
mkdir -p "$O"
if [ -z "${PERFC:-}" ]; then
  mkdir -p /tmp/pf
  xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
  PERFC=/tmp/pf/perfc
fi
target=${1:-sm_90}
[ $# -gt 0 ] && shift
extra=("$@")
echo "# $(date -u +%FT%TZ)  target $target"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
printf '%-34s %-44s %9s %9s %9s %s\n' case golden "golden s" "wall s" "kernel ms" valid
rc=0
one() {  # one LABEL perfc-args...
  local label=$1; shift
  local t0 t1 s
  t0=$(date +%s.%N)
  "$PERFC" "$@" -target "$target" --run --json --verbose "${extra[@]}" >"$O/$label.json" 2>"$O/$label.err"
  s=$?
  t1=$(date +%s.%N)
  local g ms valid
  g=$(sed -n 's/^perfc: golden \(.*\): \([0-9.]*\) ms in all.*/\1 \2/p' "$O/$label.err")
  ms=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print((j.get("time_ms") or {}).get("median"), j.get("valid"))' \
       "$O/$label.json" 2>/dev/null || echo "- exit$s")
  printf '%-34s %-44s %9.2f %9.2f %9s %s\n' "$label" "${g% *}" "$(awk -v m="${g##* }" 'BEGIN{print m/1000}')" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" ${ms}
  [ $s = 0 ] || { rc=1; tail -3 "$O/$label.err"; }
  grep '^perfc: check' "$O/$label.err" | sed 's/^/    /'
}
if [ "${SMALL:-0}" = 1 ]; then
  g=(-D M=256 -D N=256 -D K=256) a=(-D B=1 -D H=2 -D S=512 -D D=64) n=small
else
  g=() a=(-D B=1 -D H=8 -D S=4096 -D D=64) n=4096   # the .pdl defaults are 4096^3
fi
one user_bf16_gemm_$n bench/gpu/kernels/user_bf16_gemm.pdl "${g[@]}"
one user_linear_bf16_$n bench/gpu/kernels/user_linear_bf16.pdl "${g[@]}"
one attention_S$n stdlib/attention.pdl "${a[@]}"
one attention_causal_S$n stdlib/attention_causal.pdl "${a[@]}"
exit $rc
