#!/usr/bin/env bash
# Golden-file test of `perfc FILE -emit ir`.
#
#   run_golden.sh PERFC PDL EXPECTED [EXTRA ARGS...]
#
# EXPECTED ending in .ir: perfc must succeed and print exactly that IR on stdout.
# EXPECTED ending in .err: perfc must fail with exit status 1 and print exactly
# that on stderr.  perfc runs in the PDL's folder with the bare file name, so
# diagnostics carry no machine-specific path.
#
# UPDATE=1 rewrites EXPECTED from the actual output instead of comparing (then
# review the change with git diff before committing it).
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 PERFC PDL EXPECTED [ARGS...]" >&2
  exit 2
fi
perfc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
pdl=$2
expected=$3
shift 3
case "$expected" in
  /*) ;;
  *) expected=$(pwd)/$expected ;;
esac
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
(cd "$(dirname "$pdl")" && "$perfc" "$(basename "$pdl")" -emit ir "$@" >"$out" 2>"$err")
rc=$?

case "$expected" in
  *.err) want_rc=1; actual=$err ;;
  *) want_rc=0; actual=$out ;;
esac

if [ "$rc" -ne "$want_rc" ]; then
  echo "FAIL: perfc $(basename "$pdl") -emit ir $* exited $rc, expected $want_rc"
  echo "--- stderr:"
  cat "$err"
  exit 1
fi
if [ "${UPDATE:-0}" = 1 ]; then
  cp "$actual" "$expected"
  echo "updated $expected"
  exit 0
fi
if [ ! -f "$expected" ]; then
  echo "FAIL: $expected does not exist; create it with UPDATE=1"
  exit 1
fi
if ! diff -u "$expected" "$actual"; then
  echo "FAIL: output differs from $expected (lines with + are what perfc printed;"
  echo "      if the change is intended, regenerate with UPDATE=1 and review git diff)"
  exit 1
fi
if [ "$want_rc" -eq 0 ] && [ -s "$err" ]; then
  echo "note: perfc also printed on stderr:"
  cat "$err"
fi
exit 0
