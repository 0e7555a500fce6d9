#!/usr/bin/env bash
# GPU check of `perfc lib` (docs/library.md): a library built with GPU code, called
# from C on device pointers and from PyTorch on CUDA tensors, against the same
# kernel under `perfc --run`.  Run from the repository root on the GPU machine with
# the carried folder carry/gpu (perfc.xz: perfc built with -DPERFC_LLVM_STATIC=ON):
#
#   bash bench/gpu/lib_gemm.sh            # logs and lib_gemm.json in $OUT (default /tmp/lib_gemm)
#
# For each kernel (gemm_tiled32 f32 SIMT, gemm_tc_f16 mma.sync, gemm_wg_f16 wgmma on
# sm_90a) at 4096^3: three alternating rounds of perfc --run (L2 flushed before
# every timed run), the C caller bench/gpu/lib_gemm.c and the PyTorch caller
# bench/gpu/lib_gemm_torch.py (the same flush); the bar is library time within 5% of
# perfc --run.  Exit status 0 when every run validated and every ratio is within 5%.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/lib_gemm}
W=/tmp/lib_gemm_work
mkdir -p "$O" "$W"
xz -dc carry/gpu/perfc.xz > "$W/perfc" && chmod +x "$W/perfc"
P=$W/perfc
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$O/gpu.txt"
CC_=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
ARCH=sm_$CC_
TARGETS="host,sm_80,$ARCH"
[ "$ARCH" = sm_90 ] && TARGETS="$TARGETS,sm_90a"
echo "perfc lib -target $TARGETS"
time "$P" lib stdlib/gemm.pdl -k gemm_tiled32 -k gemm_tc_f16 -k gemm_wg_f16 -target "$TARGETS" -o "$W/gk" \
    >"$O/lib_build.log" 2>&1 || { cat "$O/lib_build.log"; exit 1; }
tail -3 "$O/lib_build.log"
gcc -O2 -std=c11 bench/gpu/lib_gemm.c -o "$W/lib_gemm" -ldl -lm || exit 1
PY=python3
rc=0
echo '[' > "$O/lib_gemm.json"
first=1
for kd in gemm_tiled32:f32:$ARCH gemm_tc_f16:f16:$ARCH gemm_wg_f16:f16:sm_90a; do
    k=${kd%%:*}; rest=${kd#*:}; dt=${rest%%:*}; tgt=${rest#*:}
    [ "$tgt" = sm_90a ] && [ "$ARCH" != sm_90 ] && continue
    run=(); cl=(); py=()
    for round in 1 2 3; do
        r=$("$P" stdlib/gemm.pdl -k $k -target $tgt --run --json --seed $round 2>>"$O/run.log" |
            $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["time_ms"]["median"] if d.get("valid") else "invalid")')
        run+=("$r")
        c=$(PERFC_LIB_TRACE=0 "$W/lib_gemm" "$W/libgk.so" gk $k $dt 4096 4096 4096 50 2>>"$O/c.log")
        s=$?; echo "$c" >> "$O/c.log"; [ $s = 0 ] || { echo "$k: C caller exit $s"; rc=1; }
        cl+=("$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"])' "$c" 2>/dev/null || echo nan)")
        t=$(PYTHONPATH=python $PY bench/gpu/lib_gemm_torch.py "$W/libgk.so" $k $dt 4096 4096 4096 50 2>>"$O/torch.log")
        s=$?; echo "$t" >> "$O/torch.log"; [ $s = 0 ] || { echo "$k: torch caller exit $s"; rc=1; }
        py+=("$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"])' "$t" 2>/dev/null || echo nan)")
    done
    line=$($PY - "$k" "${run[*]}" "${cl[*]}" "${py[*]}" <<'PYEOF'
import json, statistics, sys
k = sys.argv[1]
def med(s):
    v = [float(x) for x in s.split() if x not in ("invalid", "nan")]
    return statistics.median(v) if v else float("nan")
run, c, t = med(sys.argv[2]), med(sys.argv[3]), med(sys.argv[4])
ok = all(x == x for x in (run, c, t)) and c <= run * 1.05 and t <= run * 1.05
print(json.dumps({"kernel": k, "perfc_run_ms": run, "c_ms": c, "torch_ms": t,
                  "c_vs_run": round(c / run, 4), "torch_vs_run": round(t / run, 4), "within_5pct": ok}))
PYEOF
)
    echo "$line"
    [ $first = 1 ] || echo ',' >> "$O/lib_gemm.json"; first=0
    echo "$line" >> "$O/lib_gemm.json"
    echo "$line" | grep -q '"within_5pct": true' || rc=1
done
echo ']' >> "$O/lib_gemm.json"
# a call at sizes without GPU code is an error, not a crash
echo "sizes without GPU code: $("$W/lib_gemm" "$W/libgk.so" gk gemm_tiled32 f32 4000 4096 4096 3 2>&1 | tail -1)"
echo "lib_gemm.sh: exit $rc"
exit $rc
