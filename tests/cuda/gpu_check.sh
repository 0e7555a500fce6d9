# Sourced by the GPU test scripts (flash_gpu.sh, decode_gpu.sh, rows_gpu.sh) after they
# set perfc: exits 77 (skipped) without a GPU, makes the scratch folder tmp (removed on
# exit) and fail=0, and defines the checks, one kernel run and validated, or run under
# a compute-sanitizer tool, each printing one ok / FAIL line and setting fail=1 on a
# failure.
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 || exit 77
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0

# valid LABEL FILE ARGS...: `perfc FILE ARGS --run` validates on fresh inputs
valid() {
  local label=$1 f=$2; shift 2
  if "$perfc" "$f" "$@" --run --quiet > "$tmp/r" 2>&1 && grep -q '^valid      yes' "$tmp/r"; then
    echo "ok   $label: $(grep -m1 '^time' "$tmp/r" | awk '{print $3, $4}')"
  else
    echo "FAIL $label"; tail -5 "$tmp/r"; fail=1
  fi
}

# clean SANITIZER TOOL LABEL FILE ARGS...: the same run reports no error or hazard
clean() {
  local cs=$1 tool=$2 label=$3 f=$4; shift 4
  "$cs" --tool "$tool" --error-exitcode 9 "$perfc" "$f" "$@" --run --quiet > "$tmp/s" 2>&1
  local r=$?
  if [ $r = 0 ] && grep -q 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' "$tmp/s"; then
    echo "ok   $label $tool clean"
  else
    echo "FAIL $label $tool (exit $r)"; grep -m5 -E 'ERROR|SUMMARY|hazard|Invalid' "$tmp/s"; fail=1
  fi
}
