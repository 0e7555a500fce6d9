#!/usr/bin/env bash
# Row-wise kernels written fresh (bench/gpu/kernels/user_rows.pdl: RMSNorm, softmax,
# layernorm over [B, T, D]) on the GPU beside torch in the same run: each compiled with
# no schedule (the GPU default, tune/rules_rows.c: a row a block), validated on fresh
# inputs and timed by `perfc --run`; then with --no-default-schedule (the default
# mapping it replaced, one thread per row for the reductions); then torch
# (bench/gpu/rows.py).  Prints perfc ms, the default mapping's, torch's, and torch /
# perfc.   bash bench/gpu/rows.sh   (carry carry/gpu/perfc.xz)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/pf
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc F=bench/gpu/kernels/user_rows.pdl
ms() { python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.4f %s" % ((r.get("time_ms") or {}).get("median", float("nan")), "valid" if r.get("valid") else "INVALID"))'; }
row() {  # row LABEL TORCHSPEC perfc args...
  local label=$1 spec=$2; shift 2
  local a b t
  a=$(timeout 300 "$P" $F "$@" -target sm_90a --run --json 2>/dev/null | ms)
  b=$(timeout 300 "$P" $F "$@" -target sm_90a --no-default-schedule --run --json 2>/dev/null | ms)
  t=$(python3 bench/gpu/rows.py "$spec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ms"])')
  python3 -c "import sys; a=float('${a%% *}'); t=float('$t'); print('%-12s perfc %s ms | default mapping %s ms | torch %.4f ms | torch/perfc %.3f' % ('$label', '$a', '$b', t, t/a))"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
row rmsnorm    rmsnorm:8192:4096:bf16   -k rmsnorm -D N=8192 -D D=4096
row softmax    softmax:8192:4096:f16    -k softmax_rows -D N=8192 -D C=4096
row layernorm  layernorm:8192:4096:f32  -k layernorm3 -D B=4 -D T=2048 -D D=4096
row softmax-odd softmax:1000:1000:f16   -k softmax_rows -D N=1000 -D C=1000
row rms-odd    rmsnorm:77:3000:bf16     -k rmsnorm -D N=77 -D D=3000
