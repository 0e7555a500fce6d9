#!/usr/bin/env bash
# Checks that perfc's GPU baseline (`--compare cublas`) is the library at its best:
# for each shape, perfc's baseline time (cuBLASLt, the fastest of its heuristic's
# algorithms, with a workspace), the old cublasGemmEx call (forced by hiding
# libcublasLt), and torch's product timed the same way (bench/gpu/torch_matmul.py),
# all in one run on one GPU.  The bar: perfc's baseline within 3% of torch.
# Needs carry/gpu/perfc.xz (the static perfc).  Run from the repository root:
#   bash bench/gpu/baseline.sh
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/baseline}; mkdir -p "$O" /tmp/pf
# always the carried build: a warm machine keeps /tmp from an earlier call, whose
# perfc may be an older build (a run timed one so once)
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
row() {  # row LABEL FILE AB CD M N K [perfc args...]
  local label=$1 f=$2 ab=$3 cd=$4 m=$5 n=$6 k=$7; shift 7
  local lt gx
  lt=$("$P" "$f" -target sm_90 -D M=$m -D N=$n -D K=$k --run --compare cublas --json "$@" 2>"$O/err.log" |
       python3 -c 'import json,sys; r=json.load(sys.stdin); b=r["baseline"]; print(b["time_ms"]["median"] if b and b["time_ms"] else "nan", r["time_ms"]["median"] if r["time_ms"] else "nan", json.dumps(b["call"] if b else None), r.get("golden"))' 2>>"$O/err.log") || true
  gx=$(PERFC_CUBLASLT=/nonexistent "$P" "$f" -target sm_90 -D M=$m -D N=$n -D K=$k --run --compare cublas --json "$@" 2>>"$O/err.log" |
       python3 -c 'import json,sys; r=json.load(sys.stdin); b=r["baseline"]; print(b["time_ms"]["median"] if b and b["time_ms"] else "nan")' 2>>"$O/err.log") || true
  local t
  t=$(python3 bench/gpu/torch_matmul.py "$ab:$cd:$m:$n:$k" 2>>"$O/err.log")
  echo "$label ${m}x${n}x${k} | perfc-kernel/lt-baseline/call/golden: $lt | gemmex-baseline: $gx | torch: $t"
}
row bf16-f32 bench/gpu/kernels/mm_bf16_f32.pdl bf16 f32 4096 4096 4096
row wg-bf16-f32 stdlib/gemm.pdl bf16 f32 4096 4096 4096 -k gemm -D T=bf16 --schedule wg -D M=4096 -D N=4096 -D K=4096 -target sm_90a
row wg-f16-f32 stdlib/gemm.pdl f16 f32 4096 4096 4096 -k gemm -D T=f16 --schedule wg -D M=4096 -D N=4096 -D K=4096 -target sm_90a
row f16-f32 bench/gpu/kernels/mm_f16_f32.pdl f16 f32 4096 4096 4096
row f32 bench/gpu/kernels/mm_f32.pdl f32 f32 4096 4096 4096
row bf16-f32 bench/gpu/kernels/mm_bf16_f32.pdl bf16 f32 8192 8192 8192
row bf16-f32-odd bench/gpu/kernels/mm_bf16_f32.pdl bf16 f32 4095 4097 1023
tail -20 "$O/err.log"
