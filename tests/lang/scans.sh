#!/usr/bin/env bash
# scans.sh PERFC DIR: scans.pdl's scans and scatters in the target lowerings that
# treat them apart, each checked against the f64 interpreter by perfc --run (two
# fresh input sets): on the host JIT unscheduled (the 1-D scan of 70000 elements is
# long enough for pass scan-blocks), with parallel(c) (the blocked parallel scan,
# passes/xform_scan.c) at one and two threads, with parallel(r) parallel(c)
# refused; and through NVRTC for sm_90 (compile only: no GPU here), checking that
# the block-wide scan and the atomic adds are what gets compiled, with ptxas when
# it is installed.
set -euo pipefail
PERFC=$1 DIR=$2
F=$DIR/scans.pdl
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PTXAS=$(command -v ptxas || true)
run() {  # run NAME SIZES [perfc args...]
    local k=$1 sizes=$2; shift 2
    local D=()
    for s in ${sizes//,/ }; do D+=(-D "$s"); done
    "$PERFC" "$F" -k "$k" "${D[@]}" --run --quiet --seed 7 "$@" >"$W/out" 2>&1 ||
        { cat "$W/out"; fail "$k $sizes $*"; }
}
while read -r k sizes sched gpu; do
    run "$k" "$sizes"
    run "$k" "$sizes" -target interp
    if [ "$sched" != - ]; then
        run "$k" "$sizes" -s "$sched" --threads 1
        run "$k" "$sizes" -s "$sched" --threads 2
    fi
    D=()
    for s in ${sizes//,/ }; do D+=(-D "$s"); done
    "$PERFC" "$F" -k "$k" "${D[@]}" -target sm_90 -emit cuda -o "$W/$k.cu" || fail "$k to CUDA C"
    grep -q "$gpu" "$W/$k.cu" || fail "$k: the CUDA C has no $gpu"
    "$PERFC" "$F" -k "$k" "${D[@]}" -target sm_90 -emit ptx -o "$W/$k.ptx" || fail "$k through NVRTC"
    if [ -n "$PTXAS" ]; then "$PTXAS" -arch=sm_90 "$W/$k.ptx" -o "$W/$k.cubin" || fail "$k through ptxas"; fi
done <<'LIST'
cumsum1d N=70000 parallel(i) pf_block_scan<0>
cumsum1d N=33 parallel(i) pf_block_scan<0>
cummax R=3,C=5001 parallel(c) pf_block_scan<2>
reverse_cummin R=2,C=4099 parallel(c) pf_block_scan<3>
cumsum_i32 R=3,C=3000 parallel(c) pf_block_scan<0>
cummax_i32 R=2,C=1000 parallel(c) pf_block_scan<2>
cumsum_f64 R=2,C=9000 parallel(c) pf_block_scan<0>
cumsum_f16 R=3,C=2000 parallel(c) pf_block_scan<0>
cumsum3d A=2,B=3,C=1000 parallel(c) pf_block_scan<0>
scatter1d N=5000,V=3 - atomicAdd(
scatter_i32 N=2000,V=4,D=33 - atomicAdd(
scatter_f64 N=3000,V=5 - atomicAdd(
LIST
if "$PERFC" "$F" -k cummax -D R=4 -D C=300 -s 'parallel(r) parallel(c)' -emit ir >"$W/out" 2>&1; then
    cat "$W/out"; fail "a blocked scan inside a parallel row loop was accepted"
fi
grep -q "c is inside parallel loop r" "$W/out" || { cat "$W/out"; fail "the nested parallel scan's message"; }
echo "scans: every scan and scatter agrees with the interpreter; the GPU code compiles"
