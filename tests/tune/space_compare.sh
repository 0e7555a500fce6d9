#!/bin/sh
# Compares the tuner's search spaces of two perfc builds: runs each build's
# tune_space_dump (tests/tune/space_dump.c) and diffs the outputs.  Identical
# output means the same templates, parameters, candidates, schedule texts and
# scheduled IR (hashed) for every kernel of space_dump.c on host, sm_80 and sm_90a.
# The position of a refusal inside the template text is not compared (a template
# written as one text reported the line of the statement in it; the builder
# reports each statement on its own).
#
#   tests/tune/space_compare.sh OLD_BUILD/tests/tune/tune_space_dump NEW_BUILD/tests/tune/tune_space_dump
set -e
[ $# -eq 2 ] || { echo "usage: $0 OLD_DUMP NEW_DUMP" >&2; exit 2; }
tmp=${TMPDIR:-/tmp}/space_compare.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
norm() { sed 's/<autotune template>:[0-9]*:[0-9]*:/<autotune template>:/'; }
"$1" dump | norm > "$tmp/old"
"$2" dump | norm > "$tmp/new"
if cmp -s "$tmp/old" "$tmp/new"; then
    echo "identical: $(grep -c '^===' "$tmp/new") kernel/target pairs, $(grep -c '^  \[' "$tmp/new") candidates"
else
    diff "$tmp/old" "$tmp/new" | head -60
    exit 1
fi
