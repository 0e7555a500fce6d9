#!/usr/bin/env bash
# Fuzzes the PDL front end (lexer + parser + checker + AST printer) with libFuzzer
# for N seconds (default 60): `make fuzz` runs `bash scripts/fuzz.sh 60`.
#
# It builds tests/fuzz/fuzz_front.c with clang-19 and ASan/UBSan into build-fuzz/,
# compiling the front-end sources directly (lang/*.c, parser/build.c and the re2c and
# Lemon outputs generated into build-fuzz/gen) so it never waits on the rest of the
# tree.  The corpus lives in build-fuzz/corpus, kept between runs and seeded every
# run from stdlib/*.pdl and tests/front/*.pdl.  Any crash, sanitizer report, leak
# (LeakSanitizer is on by default), input slower than the per-input timeout, or
# memory blow-up stops libFuzzer with a nonzero status, which this script returns;
# the offending input is left in build-fuzz/ as crash-*, leak-*, timeout-* or oom-*.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
CC=${FUZZ_CC:-clang-19}
OUT=build-fuzz
GEN=$OUT/gen
mkdir -p "$GEN" "$OUT/corpus" "$OUT/obj"

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
for f in lang/*.c parser/build.c tests/fuzz/fuzz_front.c; do
  o=$OUT/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
  $CC $CFLAGS $WARN -c "$f" -o "$o" &
  objs+=("$o")
done
wait_all() { local rc=0; for j in $(jobs -p); do wait "$j" || rc=1; done; return $rc; }
wait_all || { echo "fuzz.sh: build failed" >&2; exit 1; }
$CC $SAN -o "$OUT/fuzz_front" "${objs[@]}" -lm

for f in stdlib/*.pdl tests/front/*.pdl; do
  [ -f "$f" ] && cp "$f" "$OUT/corpus/seed-$(basename "$f")"
done

# -max_len: room for whole stdlib files and mutations of them; -timeout: a second
# per input is already a hang for a front end that parses 10 000 statements in
# well under a second; -rss_limit_mb: memory must stay linear in the input.
echo "fuzz.sh: fuzzing the front end for ${SECS}s"
exec "$OUT/fuzz_front" -max_total_time="$SECS" -max_len=65536 -timeout=5 -rss_limit_mb=2048 \
  -dict=tests/fuzz/pdl.dict -artifact_prefix="$OUT/" -print_final_stats=1 "$OUT/corpus"
