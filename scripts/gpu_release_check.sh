#!/usr/bin/env bash
# One device call that checks the whole GPU side of a release: the GPU-labelled
# tests, every stdlib kernel validated on the GPU at odd shapes through `perfc --run`
# (default mapping, no schedule), and `make demo`'s script with its GPU rows (perfc
# vs cuBLAS, validated in the same run).  It runs from the repository root on the
# device machine with the carried folder carry/final (perfc.xz: the static perfc;
# the two GPU test binaries).  Logs go to $OUT.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/gpu_final}
mkdir -p "$O" /tmp/pf
xz -dc carry/final/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
rc=0
step() { echo "== $*"; }
step GPU; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1

step "GPU tests"
for t in test_cuda_gpu test_rt_gpu; do
  # carried xz-compressed when statically linked (the carry limit is 64 MiB)
  [ -f carry/final/$t.xz ] && { xz -dc carry/final/$t.xz > /tmp/pf/$t; chmod +x /tmp/pf/$t; } || cp carry/final/$t /tmp/pf/$t
  timeout 240 /tmp/pf/$t >"$O/$t.log" 2>&1; s=$?
  echo "$t: exit $s"; tail -3 "$O/$t.log"; [ $s = 0 ] || rc=1
done

step "every stdlib kernel on sm_90 at odd shapes, validated (default mapping)"
sizes="-D M=33 -D N=17 -D K=7 -D B=2 -D H=2 -D S=9 -D D=8 -D R=7 -D C=33"
for f in stdlib/*.pdl; do
  for k in $(sed -n 's/^kernel \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$f"); do
    params=$(sed -n "s/^kernel $k(\(.*\)).*/\1/p" "$f" | tr -d ' ')
    args=()
    for kv in $sizes; do
      [ "$kv" = -D ] && continue
      name=${kv%%=*}
      echo ",$params," | grep -qE ",$name(=[0-9]+)?," && args+=(-D "$kv")
    done
    # conv kernels keep their small default geometry
    case $k in conv2d*|depthwise_conv2d) args=();; esac
    # a kernel with a dtype parameter T (gemm) also runs with T = f16 and bf16
    dts=default; echo ",$params," | grep -q ',T=' && dts="default f16 bf16"
    for dt in $dts; do
      dd=(); [ $dt = default ] || dd=(-D T=$dt)
      out=$(timeout 60 "$P" "$f" -k "$k" "${dd[@]}" "${args[@]}" --no-schedule -target sm_90 --run --json 2>&1); s=$?
      echo "$k${dd[*]:+ ${dd[*]}}: exit $s $(echo "$out" | grep -o '"rel_error": [^,]*' | head -1)"
      [ $s = 0 ] || { rc=1; echo "$out" | tail -5; }
    done
  done
done

step "compute-sanitizer memcheck and racecheck on the stdlib GPU schedules (small shapes)"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
san() {  # san LABEL perfc-args...
  local label=$1; shift
  for tool in memcheck racecheck; do
    timeout 240 "$CS" --tool $tool --error-exitcode 9 "$P" "$@" --run --seed 3 >"$O/san.log" 2>&1; s=$?
    echo "$label $tool: exit $s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san.log" | head -1)"
    [ $s = 0 ] || { rc=1; grep -E 'Error|Hazard|error' "$O/san.log" | head -3; }
  done
}
san "gemm --schedule tiled" stdlib/gemm.pdl -k gemm --schedule tiled -target sm_90 -D M=256 -D N=256 -D K=64
san "gemm --schedule tiled32" stdlib/gemm.pdl -k gemm --schedule tiled32 -target sm_90 -D M=256 -D N=256 -D K=96
san "gemm T=f16 --schedule tc" stdlib/gemm.pdl -k gemm -D T=f16 --schedule tc -target sm_90 -D M=256 -D N=256 -D K=96
san "gemm T=f16 --schedule wg" stdlib/gemm.pdl -k gemm -D T=f16 --schedule wg -target sm_90a -D M=256 -D N=512 -D K=192
san "batched_gemm --schedule tiled" stdlib/batched_gemm.pdl -k batched_gemm --schedule tiled -target sm_90 -D B=2 -D M=128 -D N=256 -D K=32
san "conv2d --schedule tiled" stdlib/conv2d.pdl -k conv2d --schedule tiled -D H=28 -D W=28 -D K=128 -D U=1 -target sm_90 -D N=1 -D C=16
san softmax stdlib/softmax.pdl -target sm_90 -D R=4 -D C=4100
san layernorm stdlib/layernorm.pdl -target sm_90 -D R=4 -D C=4100

step "wgmma schedules validated at three shapes (tests/cuda/wg_gpu.sh)"
bash tests/cuda/wg_gpu.sh "$P" stdlib 2>&1 | tail -2; [ ${PIPESTATUS[0]} = 0 ] || rc=1

step "make demo's script (GPU rows present)"
# The CPU rows are skipped here: the static OpenBLAS is slow on the GPU hosts, so
# CPU ratios come from the development machine (docs/benchmarks.md).
DEMO_SKIP_CPU=1 timeout 400 bash scripts/demo.sh "$P" 2>&1 | tee "$O/demo.log" | tail -60

step "warm --autotune answers (the database the demo just filled)"
for dt in f32 f16; do   # stdlib gemm's input dtype T
  k=gemm-$dt
  t=sm_90; [ $dt = f16 ] && t=sm_90a   # as the demo tuned them
  t0=$(date +%s.%N)
  "$P" stdlib/gemm.pdl -D T=$dt -target $t -D M=4096 -D N=4096 -D K=4096 --no-schedule --autotune --compare cublas \
      >"$O/warm_$k.txt" 2>&1 || rc=1
  t1=$(date +%s.%N)
  echo "$k warm: $(awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.2f\", b - a }") s wall; $(grep -E '^database   hit|^ratio' "$O/warm_$k.txt" | tr '\n' ' ')"
done
exit $rc
