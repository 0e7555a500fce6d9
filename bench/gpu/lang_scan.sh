#!/usr/bin/env bash
# GPU scatters with atomics and block-wide scans (docs/cuda.md "Scatters and
# scans"), on a lent GPU, in one run:
#   1. validation against the f64 interpreter through `perfc --run` (two fresh
#      input sets each, default mapping: passes gpu-map and gpu-scan): scatter-add
#      in f32 and i32 with heavy collisions (the index tensor drawn from 3 or 1000
#      values), scans with +, *, max, min and reversed, rows of 1, 1000, 4096 and
#      1M elements;
#   2. compute-sanitizer memcheck and racecheck on small versions of each kernel;
#   3. timing against torch in the same run: scatter-add of 1M values into 1K bins
#      (perfc's zero fill + atomic adds against torch's zeros + index_add_ and
#      scatter_add_), and cumsum along the rows of 2048 x 2048 f32 (torch.cumsum).
#      torch is timed like perfc's harness: CUDA events around the work alone, a
#      write of twice the L2 size queued before each repetition, median of 50.
#
# Runs from the repository root on the device machine, with the static perfc
# carried as carry/scan/perfc.xz (build it with -DPERFC_LLVM_STATIC=ON, as
# scripts/gpu_final.sh describes), or PERFC=/path/to/perfc:
#   bash bench/gpu/lang_scan.sh        logs under $OUT (default /tmp/lang_scan)
# Exit 0 when every validation and sanitizer run passed.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/lang_scan}
mkdir -p "$O" /tmp/pf
if [ -f carry/scan/perfc.xz ]; then xz -dc carry/scan/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc; fi
P=${PERFC:-/tmp/pf/perfc}
T=${TARGET:-sm_90}
OPS=tests/lang/ops.pdl
SC=tests/lang/scans.pdl
rc=0
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1
"$P" --version 2>&1 | head -1

# run FILE KERNEL SIZES...: validate on the GPU; prints exit, error and median time
run() {
    local f=$1 k=$2; shift 2
    local args=()
    for s in "$@"; do args+=(-D "$s"); done
    out=$(timeout 300 "$P" "$f" -k "$k" "${args[@]}" -target "$T" --run --json --quiet 2>&1); s=$?
    echo "$out" > "$O/run_${k}_$(echo "$*" | tr ' =' '_-').json"
    echo "$k $*: exit $s $(echo "$out" | grep -o '"rel_error": [^,]*' | head -1)" \
         "$(echo "$out" | grep -o '"tolerance": [^,]*' | head -1) $(echo "$out" | grep -o '"median": [^,]*' | head -1)"
    [ $s = 0 ] || { rc=1; echo "$out" | tail -5; }
}
# the CUDA C shows the mapping the passes chose
"$P" $SC -k scatter1d -D N=1000000 -D V=1000 -target "$T" -emit cuda > "$O/scatter1d.cu" 2>&1
"$P" $OPS -k cumsum -D R=2048 -D C=2048 -target "$T" -emit cuda > "$O/cumsum.cu" 2>&1
grep -c "atomicAdd" "$O/scatter1d.cu" | sed 's/^/scatter1d: atomicAdd lines: /'
grep -c "pf_block_scan<0>(pf_ss" "$O/cumsum.cu" | sed 's/^/cumsum: block scans: /'

echo "== validation"
run $SC scatter1d N=1000000 V=1000
run $SC scatter1d N=1000000 V=3
run $OPS scatter_add N=100000 V=10 D=64
run $SC scatter_i32 N=200000 V=3 D=33
run $SC scatter_f64 N=300000 V=7
for C in 1 1000 4096 1048576; do
    R=$(( C >= 1048576 ? 2 : 300 ))
    run $OPS cumsum R=$R C=$C
    run $OPS cumprod R=$R C=$(( C > 1000 ? 1000 : C ))   # a long product of [0.5, 1.5) under/overflows
    run $SC cummax R=$R C=$C
    run $SC reverse_cummin R=$R C=$C
    run $OPS reverse_cumsum R=$R C=$C
done
run $SC cumsum1d N=1048576
run $SC cumsum_i32 R=100 C=5000
run $SC cummax_i32 R=100 C=5000
run $SC cumsum_f64 R=100 C=5000
run $SC cumsum_f16 R=100 C=3000
run $SC cumsum3d A=3 B=5 C=2000
run $OPS cummax_rows R=300 C=4096

echo "== compute-sanitizer"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for k in "$SC scatter1d N=3000 V=3" "$SC scatter_i32 N=500 V=4 D=33" "$OPS scatter_add N=500 V=30 D=16" \
         "$OPS cumsum R=8 C=5000" "$OPS reverse_cumsum R=4 C=1000" "$SC cummax R=4 C=4099" \
         "$SC cumsum1d N=70000" "$SC cumsum_f64 R=3 C=3000" "$OPS cumprod R=4 C=300"; do
    set -- $k
    f=$1 name=$2; shift 2
    args=(); for s in "$@"; do args+=(-D "$s"); done
    for tool in memcheck racecheck; do
        timeout 600 "$CS" --tool $tool --error-exitcode 9 "$P" $f -k "$name" "${args[@]}" -target "$T" --run \
            --seed 3 >"$O/san_${tool}_$name.log" 2>&1; s=$?
        echo "$name $tool: exit $s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san_${tool}_$name.log" | head -1)"
        [ $s = 0 ] || rc=1
    done
done

echo "== timing against torch (same run)"
run $SC scatter1d N=1048576 V=1024
run $OPS cumsum R=2048 C=2048
PY=$(command -v python3 || true)
if [ -n "$PY" ] && $PY -c 'import torch' 2>/dev/null; then
    $PY - <<'PYEOF' 2>&1 | tee "$O/torch.txt"
import torch
dev = torch.device("cuda")
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device=dev)
def med(fn, reps=50):
    for _ in range(3): fn()
    ts = []
    for _ in range(reps):
        flush.fill_(1.0)            # queued ahead of the start event, like perfc's flush
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]
g = torch.Generator(device=dev); g.manual_seed(1)
N, V = 1 << 20, 1024
X = torch.rand(N, device=dev, generator=g) * 2 - 1
T = torch.randint(0, V, (N,), device=dev, generator=g)
def ia(): Y = torch.zeros(V, device=dev); Y.index_add_(0, T, X); return Y
def sa(): Y = torch.zeros(V, device=dev); Y.scatter_add_(0, T, X); return Y
print("torch index_add_   1M -> 1K f32: median %.4f ms" % med(ia))
print("torch scatter_add_ 1M -> 1K f32: median %.4f ms" % med(sa))
A = torch.rand(2048, 2048, device=dev, generator=g) * 2 - 1
out = torch.empty_like(A)
print("torch cumsum 2048x2048 f32 dim 1: median %.4f ms" % med(lambda: torch.cumsum(A, 1, out=out)))
PYEOF
else
    echo "no torch: timing comparison skipped"
fi
echo "lang_scan: exit $rc"
exit $rc
