#!/usr/bin/env bash
# Fuzzes perfc with libFuzzer for N seconds in all (default 60, split evenly between
# the two targets): `make fuzz` runs `bash scripts/fuzz.sh 60`.
#   fuzz_front    lexer + parser + checker + AST printer (tests/fuzz/fuzz_front.c)
#   fuzz_compile  parse -> check -> lower -> schedule -> IR printer and CUDA C
#                 emitter (tests/fuzz/fuzz_compile.c; no LLVM, see there)
# `bash scripts/fuzz.sh SECS compile` (or `front`) runs one target for SECS seconds;
# FUZZ_RUNS=N runs a target for N executions instead (the long campaigns).
#
# It builds the targets with clang-19 and ASan/UBSan into build-fuzz/, compiling
# the sources directly (lang/, parser/build.c, ir/, passes/, codegen/cuda/ and the
# re2c and Lemon outputs generated into build-fuzz/gen) so it never waits on the rest
# of the tree.  Corpora live in build-fuzz/corpus (front) and build-fuzz/corpus-compile,
# kept between runs and seeded every run from stdlib/*.pdl and tests/front/*.pdl
# (for fuzz_compile with the six control bytes its input starts with).  Any crash, sanitizer report, leak
# (LeakSanitizer is on by default), input slower than the per-input timeout, or
# memory blow-up stops libFuzzer with a nonzero status, which this script returns;
# the offending input is left in build-fuzz/ as crash-*, leak-*, timeout-* or oom-*.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
ONLY=${2:-}
CC=${FUZZ_CC:-clang-19}
OUT=build-fuzz
GEN=$OUT/gen
mkdir -p "$GEN" "$OUT/corpus" "$OUT/corpus-compile" "$OUT/obj"

command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (make setup installs it)" >&2; exit 1; }
LEMPAR=$(ls /usr/share/lemon/lempar.c /usr/local/share/lemon/lempar.c 2>/dev/null | head -1 || true)
cp parser/grammar.y "$GEN/grammar.y"
lemon -q ${LEMPAR:+-T$LEMPAR} "$GEN/grammar.y"
re2c -W --no-generation-date -o "$GEN/lexer.c" parser/lexer.re

SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=c11 -g -O1 $SAN -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. -Iparser -I$GEN"
WARN="-Wall -Wextra -Werror -Wno-unused-parameter"
# Generated code is compiled without -Werror, as in the main build.  -fsanitize=fuzzer
# on every object gives coverage feedback inside the parser tables too.
objs=()
for f in "$GEN/lexer.c" "$GEN/grammar.c"; do
  o=$OUT/obj/$(basename "$f" .c).o
  $CC $CFLAGS -w -c "$f" -o "$o" &
  objs+=("$o")
done
wait_all() { local rc=0; for j in $(jobs -p); do wait "$j" || rc=1; done; return $rc; }
# two compilations at a time: the machine is shared
n=0
for f in lang/*.c parser/build.c ir/*.c passes/*.c codegen/cuda/*.c tests/fuzz/fuzz_front.c tests/fuzz/fuzz_compile.c; do
  o=$OUT/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
  if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || [ -n "$(find lang ir passes codegen/cuda parser -name '*.h' -newer "$o" 2>/dev/null | head -1)" ]; then
    $CC $CFLAGS $WARN -c "$f" -o "$o" &
    n=$((n + 1))
    if [ $((n % 2)) = 0 ]; then wait_all || { echo "fuzz.sh: build failed" >&2; exit 1; }; fi
  fi
done
wait_all || { echo "fuzz.sh: build failed" >&2; exit 1; }
front_objs=("${objs[@]}")
compile_objs=("${objs[@]}")
for f in lang/*.c parser/build.c; do front_objs+=("$OUT/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"); done
for f in lang/*.c parser/build.c ir/*.c passes/*.c codegen/cuda/*.c; do
  compile_objs+=("$OUT/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')")
done
$CC $SAN -o "$OUT/fuzz_front" "${front_objs[@]}" "$OUT/obj/tests_fuzz_fuzz_front.o" -lm
$CC $SAN -o "$OUT/fuzz_compile" "${compile_objs[@]}" "$OUT/obj/tests_fuzz_fuzz_compile.o" -lm -ldl -lpthread

for f in stdlib/*.pdl tests/front/*.pdl; do
  [ -f "$f" ] || continue
  cp "$f" "$OUT/corpus/seed-$(basename "$f")"
  # control bytes: target, kernel, moves, candidates (see fuzz_compile.c)
  for c in '\000\000\000\000\000\000' '\001\000\002\007\003\011' '\000\001\001\005\002\001'; do
    { printf "$c"; cat "$f"; } > "$OUT/corpus-compile/seed-$(printf "$c" | od -An -tx1 | tr -d ' \n')-$(basename "$f")"
  done
done

# -max_len: room for whole stdlib files and mutations of them; -timeout: a second
# per input is already a hang for a front end that parses 10 000 statements in
# well under a second (the compile target gets more: lowering and scheduling);
# -rss_limit_mb: memory must stay linear in the input.
run() {  # NAME SECONDS CORPUS TIMEOUT
  local limit=(-max_total_time="$2")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  echo "fuzz.sh: fuzzing $1 (${FUZZ_RUNS:+$FUZZ_RUNS executions}${FUZZ_RUNS:-${2}s})"
  "$OUT/$1" "${limit[@]}" -max_len=65536 -timeout="$4" -rss_limit_mb=2048 \
    -dict=tests/fuzz/pdl.dict -artifact_prefix="$OUT/" -print_final_stats=1 "$OUT/$3"
}
case "$ONLY" in
  front) run fuzz_front "$SECS" corpus 5 ;;
  compile) run fuzz_compile "$SECS" corpus-compile 10 ;;
  *) run fuzz_front $((SECS / 2)) corpus 5 && run fuzz_compile $((SECS - SECS / 2)) corpus-compile 10 ;;
esac
