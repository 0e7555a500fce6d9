#!/usr/bin/env bash
# The new language constructs on a GPU: every kernel of tests/lang/ops.pdl (input
# domains, gathers, a scatter, scans) and tests/lang/functions.pdl (pow, sigmoid,
# log1p, expm1, floor, ceil, round, sign, clamp) validated on sm_90 against the f64
# interpreter through `perfc --run` (two fresh input sets, default GPU mapping),
# then --inputs/--save-outputs on the GPU with a NumPy check when NumPy is there,
# then compute-sanitizer memcheck on the gather, scatter and scan kernels.
#
# Runs from the repository root on the device machine, with the static perfc
# carried as carry/lang/perfc.xz (build it here with -DPERFC_LLVM_STATIC=ON, as
# scripts/gpu_final.sh describes):
#   bash bench/gpu/lang_ops.sh        logs under $OUT (default /tmp/lang_ops)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/lang_ops}
mkdir -p "$O" /tmp/pf
if [ -f carry/lang/perfc.xz ]; then xz -dc carry/lang/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc; fi
P=${PERFC:-/tmp/pf/perfc}
T=${TARGET:-sm_90}
rc=0
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1
run() {  # run FILE KERNEL SIZES...
    local f=$1 k=$2; shift 2
    local args=()
    for s in "$@"; do args+=(-D "$s"); done
    out=$(timeout 120 "$P" "$f" -k "$k" "${args[@]}" -target "$T" --run --json --quiet 2>&1); s=$?
    echo "$k: exit $s $(echo "$out" | grep -o '"rel_error": [^,]*' | head -1) $(echo "$out" | grep -o '"median": [^,]*' | head -1)"
    [ $s = 0 ] || { rc=1; echo "$out" | tail -5; }
}
F=tests/lang/functions.pdl
for k in fns fns64 fns16; do run $F $k N=100003; done
F=tests/lang/ops.pdl
run $F batchnorm N=8 C=64 H=28 W=28
run $F xent_onehot N=4096 C=1000
run $F embedding N=8192 V=50000 D=256
run $F index_select N=4096 V=50000 D=128
run $F xent_gather N=4096 C=1000
run $F shifted_lookup N=100000 V=1000
run $F cumsum R=2048 C=2048
run $F cumprod R=512 C=300
run $F reverse_cumsum R=2048 C=2048
run $F cummax_rows R=300 C=4096
run $F scatter_add N=20000 V=100 D=64
run $F gather_of_temp N=100000

PY=$(command -v python3 || true)
if [ -n "$PY" ] && $PY -c 'import numpy' 2>/dev/null; then
    $PY - "$P" "$T" "$O" <<'PYEOF' || rc=1
import subprocess, sys
import numpy as np
P, T, O = sys.argv[1:4]
rng = np.random.default_rng(3)
X = rng.uniform(-1, 1, (300, 1000)).astype(np.float32)
np.savez(O + "/in.npz", X=X)
subprocess.run([P, "tests/lang/ops.pdl", "-k", "cumsum", "-D", "R=300", "-D", "C=1000", "-target", T, "--run",
                "--quiet", "--inputs", O + "/in.npz", "--save-outputs", O + "/out.npz"], check=True)
err = np.abs(np.load(O + "/out.npz")["Y"] - np.cumsum(X.astype(np.float64), 1)).max()
print("cumsum on the GPU from --inputs, against NumPy: max difference %.3g" % err)
sys.exit(0 if err < 1e-3 else 1)
PYEOF
fi

CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for k in "embedding N=500 V=300 D=64" "scatter_add N=500 V=30 D=16" "cumsum R=64 C=300" "shifted_lookup N=500 V=40"; do
    set -- $k
    name=$1; shift
    args=(); for s in "$@"; do args+=(-D "$s"); done
    timeout 240 "$CS" --tool memcheck --error-exitcode 9 "$P" $F -k "$name" "${args[@]}" -target "$T" --run --seed 3 \
        >"$O/san_$name.log" 2>&1; s=$?
    echo "$name memcheck: exit $s $(grep -E 'ERROR SUMMARY' "$O/san_$name.log" | head -1)"
    [ $s = 0 ] || rc=1
done
echo "lang_ops: exit $rc"
exit $rc
