#!/usr/bin/env bash
# Runs one front-end golden test: `run.sh PERFC NAME`.
#
# NAME.pdl is compiled with `perfc NAME.pdl -emit ast` from this folder, so the
# file name in diagnostics is the bare NAME.pdl whatever the build folder.  NAME.args,
# when present, replaces those arguments ({} stands for NAME.pdl).  Cases named gen_*
# have no committed .pdl: inputs too big or too binary to keep in git (a 1 MB line,
# 10 000 brackets, NUL and non-UTF-8 bytes) are generated here into a scratch folder.
#
# Expected results: good_* cases exit 0 and print NAME.ast on stdout; every other
# case exits 1 with nothing on stdout.  Stderr must equal NAME.err exactly (empty when
# there is no .err).  With UPDATE=1 the .err and .ast files are rewritten from what
# perfc printed; read each one before committing it.
set -u
PERFC=$1
NAME=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# A small header shared by generated inputs: the error is in what follows it.
header() { printf 'kernel k(N) {\n  in  A: f32[N]\n  out C: f32[N]\n'; }

# Deterministic "binary garbage": an ELF-like header, then bytes from a fixed LCG.
garbage() {
  printf '\177ELF\002\001\001\000'
  local x=12345 i s=""
  for ((i = 0; i < 1024; i++)); do
    x=$(( (x * 1103515245 + 12345) & 0x7fffffff ))
    s+=$(printf '\\%03o' $(( (x >> 16) & 255 )))
  done
  printf "$s"
}

generate() {
  case $1 in
    gen_binary_garbage) garbage ;;
    gen_long_line)  # one 1 MB name on one line
      header; printf '  C[i] = A[i] * '; head -c 1000000 /dev/zero | tr '\0' x; printf '\n}\n' ;;
    gen_long_comment_line)  # a 1 MB comment is fine; the error after it must still be located
      header; printf '  # '; head -c 1000000 /dev/zero | tr '\0' '='; printf '\n  C[i] = A[i] * B[i]\n}\n' ;;
    gen_nested_parens)  # 10 000 levels of brackets
      header; printf '  C[i] = '; head -c 10000 /dev/zero | tr '\0' '('; printf 'A[i]'
      head -c 10000 /dev/zero | tr '\0' ')'; printf '\n}\n' ;;
    gen_deep_expression)  # 5 000 terms need no brackets to make a deep tree
      header; printf '  C[i] = A[i]'; for ((i = 0; i < 5000; i++)); do printf ' + A[i]'; done; printf '\n}\n' ;;
    gen_too_many_statements)  # the statement limit is checked before sema, lowering and LLVM
      printf 'kernel k(N) {\n  in  A: f32[N]\n  out C: f32[N]\n  C[i] = A[i]\n'
      for ((i = 0; i < 2000; i++)); do printf '  t%d[i] = A[i]\n' $i; done; printf '}\n' ;;
    gen_too_many_operations)  # 100 statements of 350 terms: over the limit on expression nodes
      printf 'kernel k(N) {\n  in  A: f32[N]\n  out C: f32[N]\n  C[i] = A[i]\n'
      for ((i = 0; i < 100; i++)); do
        printf '  t%d[i] = A[i]' $i; yes ' + A[i]' | head -n 349 | tr -d '\n'; printf '\n'
      done; printf '}\n' ;;
    gen_nul_byte)
      header; printf '  C[i] = A[i]\000 * 2.0\n}\n' ;;
    gen_non_utf8)  # a Latin-1 byte outside a comment
      header; printf '  C[i] = A[i] * \351\n}\n' ;;
    gen_non_utf8_comment)  # "café" in Latin-1
      printf '# caf\351\n'; header; printf '  C[i] = A[i]\n}\n' ;;
    *) echo "run.sh: no generator for $1" >&2; exit 2 ;;
  esac
}

if [[ $NAME == gen_* ]]; then
  WORK=$TMP/in
  mkdir -p "$WORK"
  generate "$NAME" >"$WORK/$NAME.pdl"
else
  WORK=$HERE
fi

ARGS="{} -emit ast"
[ -f "$HERE/$NAME.args" ] && ARGS=$(cat "$HERE/$NAME.args")
ARGS=${ARGS//\{\}/$NAME.pdl}
# shellcheck disable=SC2086  # the argument list is word-split on purpose
(cd "$WORK" && exec "$PERFC" $ARGS) >"$TMP/out" 2>"$TMP/err"
rc=$?

if [[ $NAME == good_* ]]; then want_rc=0; else want_rc=1; fi

if [ "${UPDATE:-}" = 1 ]; then
  if [ -s "$TMP/err" ]; then cp "$TMP/err" "$HERE/$NAME.err"; else rm -f "$HERE/$NAME.err"; fi
  if [ $want_rc = 0 ]; then cp "$TMP/out" "$HERE/$NAME.ast"; fi
fi

fail=0
if [ $rc != $want_rc ]; then
  echo "FAIL $NAME: exit status $rc, expected $want_rc"
  fail=1
fi
want_err=/dev/null
[ -f "$HERE/$NAME.err" ] && want_err=$HERE/$NAME.err
if ! cmp -s "$want_err" "$TMP/err"; then
  echo "FAIL $NAME: stderr differs from $(basename "$want_err") (- expected, + actual):"
  diff -u "$want_err" "$TMP/err" | head -40 | cut -c1-300
  fail=1
fi
want_out=/dev/null
[ $want_rc = 0 ] && want_out=$HERE/$NAME.ast
if ! cmp -s "$want_out" "$TMP/out"; then
  echo "FAIL $NAME: stdout differs from $(basename "$want_out") (- expected, + actual):"
  diff -u "$want_out" "$TMP/out" | head -40 | cut -c1-300
  fail=1
fi
exit $fail
