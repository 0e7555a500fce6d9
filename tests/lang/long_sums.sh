#!/usr/bin/env bash
# long_sums.sh PERFC DIR: long_sums.pdl's sums of 16M (and 1M-per-row) f32 terms,
# unscheduled, each validated by perfc --run against the f64 interpreter on fresh
# inputs (they failed the tolerance before sum-blocks); and the blocked form in
# the IR after the pass.
set -euo pipefail
PERFC=$1 DIR=$2
F=$DIR/long_sums.pdl
fail() { echo "FAIL: $*" >&2; exit 1; }
while read -r k sizes; do
    D=()
    for s in ${sizes//,/ }; do D+=(-D "$s"); done
    out=$("$PERFC" "$F" -k "$k" "${D[@]}" --run --quiet --threads 1 2>&1) || { echo "$out"; fail "$k $sizes"; }
    echo "$out" | grep -q '^valid      yes' || { echo "$out"; fail "$k $sizes: not valid"; }
done <<'CASES'
sumsq N=16777216
sumexp N=16777216
masked N=16777216
rowsum R=3,C=1048576
total2d R=4096,C=4096
CASES
ir=$("$PERFC" "$F" -k sumsq -D N=16777216 -dump-after=sum-blocks 2>&1)
echo "$ir" | grep -q 's_blk = -0' || { echo "$ir"; fail "sumsq: no partial sum after sum-blocks"; }
echo "PASS"
