#!/usr/bin/env bash
# functions.sh PERFC LIB_CHECK DIR: the math functions of functions.pdl in every back
# end against the f64 interpreter: the host JIT (perfc --run, two fresh input sets
# per run, at a size that leaves a vector tail), the portable C code of `perfc lib`
# (lib_check, at the build-time size and one it was not built for), and the CUDA C
# back end compiled to PTX by NVRTC (no GPU here: compile only).
set -euo pipefail
PERFC=$1 CHECK=$2 DIR=$3
F=$DIR/functions.pdl
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for k in fns fns64 fns16 fnsvec; do
    "$PERFC" "$F" -k $k -D N=1037 --run --quiet --seed 7 >"$W/out" 2>&1 || { cat "$W/out"; fail "$k on the host JIT"; }
    "$PERFC" "$F" -k $k -D N=1037 -target interp >/dev/null 2>&1 || fail "$k on the interpreter"
    "$PERFC" "$F" -k $k -D N=1037 -target sm_90 -emit ptx -o "$W/$k.ptx" || fail "$k through NVRTC"
    [ -s "$W/$k.ptx" ] || fail "$k: no PTX"
done
grep -q "log1pf" < <("$PERFC" "$F" -k fns -D N=64 -target sm_90 -emit cuda) || fail "no log1pf in the CUDA C"
"$PERFC" lib "$F" -D N=1000 -o "$W/fn" >/dev/null || fail "perfc lib"
for k in fns fns64 fns16 fnsvec; do
    for n in 1000 77; do
        "$CHECK" "$W/libfn.so" fn "$F" $k N=$n >"$W/out" 2>&1 || { cat "$W/out"; fail "$k N=$n in the C library"; }
    done
done
echo "functions: every back end agrees with the interpreter"
