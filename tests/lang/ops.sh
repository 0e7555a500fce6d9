#!/usr/bin/env bash
# ops.sh PERFC LIB_CHECK DIR: every kernel of ops.pdl (input domains, gathers,
# scans) on the host JIT and the interpreter (perfc --run validates against the f64
# interpreter on two fresh input sets), in the portable C code of `perfc lib` at
# sizes it was not built for (lib_check against the interpreter), and compiled to
# PTX by NVRTC (no GPU here: compile only).  Then a parallel schedule on a scan's
# outer loop is legal and stays right, one on its scanned loop is the blocked
# parallel scan and stays right, and a fusion across a gather and a parallel loop
# over a scatter's terms are refused.
set -euo pipefail
PERFC=$1 CHECK=$2 DIR=$3
F=$DIR/ops.pdl
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
while read -r k sizes lib; do
    D=()
    for s in ${sizes//,/ }; do D+=(-D "$s"); done
    "$PERFC" "$F" -k "$k" "${D[@]}" --run --quiet --seed 5 >"$W/out" 2>&1 || { cat "$W/out"; fail "$k on the host JIT"; }
    "$PERFC" "$F" -k "$k" "${D[@]}" --run -target interp >"$W/out" 2>&1 || { cat "$W/out"; fail "$k on the interpreter"; }
    "$PERFC" "$F" -k "$k" "${D[@]}" -target sm_90 -emit ptx -o "$W/$k.ptx" || fail "$k through NVRTC"
    "$PERFC" lib "$F" -k "$k" "${D[@]}" -o "$W/$k" >/dev/null || fail "perfc lib $k"
    "$CHECK" "$W/lib$k.so" "$k" "$F" "$k" "$lib" >"$W/out" 2>&1 || { cat "$W/out"; fail "$k in the C library"; }
done <<'LIST'
batchnorm N=2,C=5,H=4,W=3 N=1,C=3,H=5,W=2
xent_onehot N=9,C=6 N=5,C=4
embedding N=50,V=20,D=7 N=9,V=31,D=3
index_select N=10,V=20,D=7 N=5,V=9,D=4
xent_gather N=50,C=5 N=7,C=11
shifted_lookup N=50,V=20 N=33,V=4
cumsum R=37,C=101 R=3,C=17
cumprod R=5,C=40 R=2,C=9
reverse_cumsum R=37,C=101 R=3,C=17
cummax_rows R=37,C=19 R=6,C=3
scatter_add N=50,V=7,D=3 N=9,V=30,D=2
gather_of_temp N=40 N=7
LIST
"$PERFC" "$F" -k cumsum -D R=64 -D C=300 -s 'parallel(r)' --run --quiet --seed 3 >/dev/null ||
    fail "cumsum with its rows in parallel"
"$PERFC" "$F" -k cumsum -D R=64 -D C=300 -s 'parallel(c)' --run --quiet --seed 3 >/dev/null ||
    fail "cumsum as a blocked parallel scan along its rows"
if "$PERFC" "$F" -k gather_of_temp -D N=64 -s 'fuse(t.n, Y.n)' -emit ir >"$W/out" 2>&1; then
    cat "$W/out"; fail "fusing a gather with the nest of the tensor it reads was accepted"
fi
if "$PERFC" "$F" -k scatter_add -D N=64 -D V=5 -D D=4 -s 'parallel(i)' -emit ir >"$W/out" 2>&1; then
    cat "$W/out"; fail "a parallel loop over a scatter's terms was accepted"
fi
echo "ops: every kernel agrees with the interpreter in every back end"
