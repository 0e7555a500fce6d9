#!/bin/sh
# Every move that `perfc --actions` lists applies when given back with -s: the list
# is made on the kernel that a further -s statement extends (after the file's
# schedule, before `simplify`), so a loop of one trip that simplify removes is still
# there for the move that names it.  Cases: gemm with K = 1 (the k loop has one
# trip; the -s makes perfc run its pipeline), layernorm after its CPU schedule with
# C = 7 below the split factor, softmax with R = 1.
#   actions_cli.sh PERFC ROOT
set -u
PERFC=$1
ROOT=$2
fails=0
total=0
check() {
    file=$1
    shift
    list=$("$PERFC" "$ROOT/$file" "$@" --actions) || { echo "FAIL: --actions on $file $*"; fails=$((fails + 1)); return; }
    n=0
    while IFS= read -r move; do
        [ -n "$move" ] || continue
        n=$((n + 1))
        if ! out=$("$PERFC" "$ROOT/$file" "$@" -s "$move" -emit ir 2>&1 >/dev/null); then
            echo "FAIL: $file $* -s '$move' refused:"
            echo "$out"
            fails=$((fails + 1))
        fi
    done <<MOVES
$list
MOVES
    [ "$n" -gt 10 ] || { echo "FAIL: only $n moves listed for $file $*"; fails=$((fails + 1)); }
    total=$((total + n))
}
check stdlib/gemm.pdl -D M=2 -D N=9 -D K=1 --no-schedule -s "prefetch(B, k, k)"
check stdlib/layernorm.pdl -D R=2 -D C=7
check stdlib/softmax.pdl -D R=1 -D C=9
echo "$total listed moves applied with -s: $fails refused"
[ "$fails" -eq 0 ]
