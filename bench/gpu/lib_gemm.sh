#!/usr/bin/env bash
# GPU check of `perfc lib` (docs/library.md), in one device call: the library's GPU
# code called from C on device pointers and from PyTorch on CUDA tensors, against
# the same kernel under `perfc --run`, and the general GPU variant checked against
# the interpreter at sizes the library was not built for.
#
# What to carry (built on the build machine, which has LLVM):
#   cmake -S . -B build-static -DCMAKE_BUILD_TYPE=Release -DPERFC_LLVM_STATIC=ON
#   cmake --build build-static -j2 --target perfc lib_check
#   mkdir -p carry/gpu && xz -T2 -c build-static/perfc > carry/gpu/perfc.xz
#   cp build-static/tests/lib/lib_check carry/gpu/lib_check   # optional: step 1
# (perfc.xz is about 20 MiB, lib_check well under 1 MiB: inside the 64 MiB limit.)
# Then, on the GPU machine, from the repository root (carry: carry/gpu):
#   bash bench/gpu/lib_gemm.sh            # logs and lib_gemm.json in $OUT (default /tmp/lib_gemm)
#
# 1. tests/lib/gpu.sh: GEMM (f32, f16), softmax and layernorm through NAME_call_cuda
#    at sizes not given at build time (the general GPU variant), against the interpreter.
# 2. For each kernel (instances of stdlib gemm's variants: gemm_tiled32 f32 SIMT, gemm_tc_f16 mma.sync, gemm_wg_f16 wgmma on
#    sm_90a) at 4096^3: three alternating rounds of perfc --run, the C caller
#    bench/gpu/lib_gemm.c and the PyTorch caller bench/gpu/lib_gemm_torch.py, both
#    timing as perfc --run does (L2 flush and ~1.5 ms of queued writes before each
#    timed call, events on the same stream).  The bar: within 5% of perfc --run.  The
#    PyTorch caller also reports its old "gap" timing and the host time of one call.
# 3. The general GPU variant of gemm_tiled32 at 4000x4096x4096 (no specialised code).
# Exit status 0 when everything validated and every ratio is within 5%.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/lib_gemm}
W=/tmp/lib_gemm_work
mkdir -p "$O" "$W"
xz -dc carry/gpu/perfc.xz > "$W/perfc" && chmod +x "$W/perfc" || { echo "no carry/gpu/perfc.xz"; exit 1; }
P=$W/perfc
PY=python3
rc=0
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$O/gpu.txt"
CC_=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
ARCH=sm_$CC_

echo "== 1. the general GPU variant against the interpreter (tests/lib/gpu.sh)"
if [ -f carry/gpu/lib_check ]; then
    cp carry/gpu/lib_check "$W/lib_check" && chmod +x "$W/lib_check"
    bash tests/lib/gpu.sh "$P" "$W/lib_check" . > "$O/lib_gpu.log" 2>&1; s=$?
    grep -E "worst|general|GPU code|lib_gpu|FAIL" "$O/lib_gpu.log" | tail -40
    echo "tests/lib/gpu.sh: exit $s"; [ $s = 0 ] || rc=1
else
    echo "(carry/gpu/lib_check not carried: skipped)"
fi

echo "== 2. library vs perfc --run at 4096^3"
TARGETS="host,sm_80,$ARCH"
[ "$ARCH" = sm_90 ] && TARGETS="$TARGETS,sm_90a"
echo "perfc lib -target $TARGETS"
# stdlib's gemm with three of its GPU schedule variants, each made a kernel of its own
# (library functions are named after kernels; scripts/pdl_instance.py)
S4="M=4096 N=4096 K=4096"
{ $PY scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_tiled32 --variant tiled32 $S4 && echo &&
  $PY scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_tc_f16 --variant tc T=f16 $S4 && echo &&
  $PY scripts/pdl_instance.py stdlib/gemm.pdl gemm gemm_wg_f16 --variant wg T=f16 $S4; } >"$W/gemm_variants.pdl" || exit 1
( time "$P" lib "$W/gemm_variants.pdl" -k gemm_tiled32 -k gemm_tc_f16 -k gemm_wg_f16 -target "$TARGETS" -o "$W/gk" ) \
    >"$O/lib_build.log" 2>&1 || { cat "$O/lib_build.log"; exit 1; }
tail -4 "$O/lib_build.log"
gcc -O2 -std=c11 bench/gpu/lib_gemm.c -o "$W/lib_gemm" -ldl -lm || exit 1
echo '[' > "$O/lib_gemm.json"
first=1
for kd in gemm_tiled32:f32:$ARCH gemm_tc_f16:f16:$ARCH gemm_wg_f16:f16:sm_90a; do
    k=${kd%%:*}; rest=${kd#*:}; dt=${rest%%:*}; tgt=${rest#*:}
    [ "$tgt" = sm_90a ] && [ "$ARCH" != sm_90 ] && continue
    run=(); cl=(); py=(); gap=(); host=()
    for round in 1 2 3; do
        r=$("$P" "$W/gemm_variants.pdl" -k $k -target $tgt --run --json --seed $round 2>>"$O/run.log" |
            $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["time_ms"]["median"] if d.get("valid") else "invalid")')
        run+=("$r")
        c=$("$W/lib_gemm" "$W/libgk.so" gk $k $dt 4096 4096 4096 50 2>>"$O/c.log")
        s=$?; echo "$c" >> "$O/c.log"; [ $s = 0 ] || { echo "$k: C caller exit $s"; rc=1; }
        cl+=("$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"])' "$c" 2>/dev/null || echo nan)")
        t=$(PYTHONPATH=python $PY bench/gpu/lib_gemm_torch.py "$W/libgk.so" $k $dt 4096 4096 4096 50 2>>"$O/torch.log")
        s=$?; echo "$t" >> "$O/torch.log"; [ $s = 0 ] || { echo "$k: torch caller exit $s"; rc=1; }
        py+=("$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"])' "$t" 2>/dev/null || echo nan)")
        gap+=("$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["gap_timing_median_ms"])' "$t" 2>/dev/null || echo nan)")
        host+=("$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["host_us_per_call"])' "$t" 2>/dev/null || echo nan)")
    done
    line=$($PY - "$k" "${run[*]}" "${cl[*]}" "${py[*]}" "${gap[*]}" "${host[*]}" <<'PYEOF'
import json, statistics, sys
k = sys.argv[1]
def med(s):
    v = [float(x) for x in s.split() if x not in ("invalid", "nan")]
    return statistics.median(v) if v else float("nan")
run, c, t, g, h = (med(x) for x in sys.argv[2:7])
ok = all(x == x for x in (run, c, t)) and c <= run * 1.05 and t <= run * 1.05
print(json.dumps({"kernel": k, "perfc_run_ms": run, "c_ms": c, "torch_ms": t, "c_vs_run": round(c / run, 4),
                  "torch_vs_run": round(t / run, 4), "torch_gap_timing_ms": g, "torch_gap_vs_run": round(g / run, 4),
                  "torch_host_us_per_call": h, "within_5pct": ok}))
PYEOF
)
    [ $first = 1 ] || echo ',' >> "$O/lib_gemm.json"; first=0
    echo "$line" >> "$O/lib_gemm.json"
    echo "$line" | grep -q '"within_5pct": true' || rc=1
done
echo ']' >> "$O/lib_gemm.json"
$PY - "$O/lib_gemm.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))
print("%-14s %10s %9s %7s %9s %7s %13s %8s %6s" % ("kernel", "--run ms", "C ms", "C/run", "torch ms", "t/run",
                                                    "old timing", "host us", "<=5%"))
for r in rows:
    print("%-14s %10.4f %9.4f %7.3f %9.4f %7.3f %6.4f (%.3f) %8.1f %6s" % (
        r["kernel"], r["perfc_run_ms"], r["c_ms"], r["c_vs_run"], r["torch_ms"], r["torch_vs_run"],
        r["torch_gap_timing_ms"], r["torch_gap_vs_run"], r["torch_host_us_per_call"], r["within_5pct"]))
PYEOF

echo "== 3. the general GPU variant: sizes without specialised code"
out=$(PERFC_LIB_TRACE=1 "$W/lib_gemm" "$W/libgk.so" gk gemm_tiled32 f32 4000 4096 4096 5 2>&1); s=$?
echo "$out" | tail -2
[ $s = 0 ] && grep -q "general variant" <<<"$out" || { echo "the general variant at 4000x4096x4096 failed"; rc=1; }
echo "lib_gemm.sh: exit $rc"
exit $rc
