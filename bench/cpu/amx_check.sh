#!/usr/bin/env bash
# bf16 GEMM on a CPU with AMX tiles (the GPU machines' Intel Xeon hosts), in one
# device call: perfc's default schedule for the host (the AMX template,
# tune/rules_amx.c) and for -target x86_64-avx512bf16 (vdpbf16ps, no tiles), each
# validated by `perfc --run`, beside torch's bf16 matmul (oneDNN, AMX) in the same
# run, one thread; then odd sizes (validation only) and two threads.  Carry
# carry/gpu/perfc.xz (the static perfc).
#   bash bench/cpu/amx_check.sh            N=2048 SWEEP=1 (0: not the blocking sweep)
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
N=${N:-2048}
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u +%FT%TZ)"
echo "isa: $(grep -o -E 'avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
cat > /tmp/pf/bf16.pdl <<'PDL'
kernel mm(M, N, K) {
  in  A: bf16[M, K]
  in  B: bf16[K, N]
  out C: f32[M, N]
  C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j])
}
PDL
run() { # label, then perfc arguments
    local l=$1
    shift
    "$P" /tmp/pf/bf16.pdl "$@" --run --quiet 2>&1 | grep -E '^(valid|time|perfc  )|error|perfc:' | cut -c1-160 |
        sed "s/^/$l: /"
}
torch_mm() { # M N K threads
    python3 - "$@" <<'PY'
import sys, time, torch
m, n, k, t = map(int, sys.argv[1:])
torch.set_num_threads(t)
a = torch.randn(m, k).bfloat16(); b = torch.randn(k, n).bfloat16()
for _ in range(3): torch.matmul(a, b)
ts = []
for _ in range(10):
    s = time.perf_counter(); torch.matmul(a, b); ts.append(time.perf_counter() - s)
ts.sort()
print("torch bf16 matmul %dx%dx%d, %d thread(s): median %.3f ms, min %.3f ms, %.0f GFLOP/s" %
      (m, n, k, t, ts[5] * 1e3, ts[0] * 1e3, 2 * m * n * k / ts[5] / 1e9))
PY
}
echo "== $N^3, one thread"
for round in 1 2; do
    run "amx   r$round" -D M=$N -D N=$N -D K=$N --threads 1
    run "vdp   r$round" -D M=$N -D N=$N -D K=$N --threads 1 -target x86_64-avx512bf16
    torch_mm $N $N $N 1
done
[ "${SWEEP:-1}" = 1 ] && echo "== the AMX template's blocking around its default, $N^3, one thread"
[ "${SWEEP:-1}" = 1 ] && T=$("$P" /tmp/pf/bf16.pdl -D M=$N -D N=$N -D K=$N -emit ir --verbose 2>&1 >/dev/null | sed -n 's/^  //p')
[ "${SWEEP:-1}" = 1 ] && for v in "1024 8" "512 8" "1024 16" "2048 4"; do
    set -- $v
    t=$(echo "$T" | sed -e "s/param amx_kc = .*/param amx_kc = $1/" -e "s/param amx_mb = .*/param amx_mb = $2/")
    run "kc $1 mb $2" -D M=$N -D N=$N -D K=$N --threads 1 --no-default-schedule -s "$t"
done
echo "== the default's schedule"
"$P" /tmp/pf/bf16.pdl -D M=$N -D N=$N -D K=$N -emit asm -o /tmp/pf/mm.s 2>&1 | head -3
echo "tdpbf16ps in the code: $(grep -c tdpbf16ps /tmp/pf/mm.s)"
echo "== other sizes, one thread"
for s in "1024 1024 1024" "4096 4096 4096" "1000 1000 1000" "2048 2048 2016" "777 333 1001" "512 4096 768" \
         "16 4096 4096" "4095 4097 1023"; do
    set -- $s
    run "amx $1x$2x$3" -D M=$1 -D N=$2 -D K=$3 --threads 1
    torch_mm $1 $2 $3 1
done
echo "== nn.Linear layout, Y = X W^T, and with bias and GELU, one thread"
cat > /tmp/pf/linear.pdl <<'PDL'
kernel linear(M, N, K) {
  in  X: bf16[M, K]
  in  W: bf16[N, K]
  out Y: f32[M, N]
  Y[i, j] = sum(k) f32(X[i, k]) * f32(W[j, k])
}
PDL
cat > /tmp/pf/linear_gelu.pdl <<'PDL'
kernel linear_gelu(M, N, K) {
  in  X: bf16[M, K]
  in  W: bf16[N, K]
  in  bias: f32[N]
  out Y: f32[M, N]
  local t: f32[M, N]
  t[i, j] = sum(k) f32(X[i, k]) * f32(W[j, k])
  Y[i, j] = 0.5 * (t[i, j] + bias[j]) * (1.0 + erf((t[i, j] + bias[j]) * 0.70710678))
}
PDL
for f in linear linear_gelu; do
    "$P" /tmp/pf/$f.pdl -D M=$N -D N=$N -D K=$N --threads 1 --run --quiet 2>&1 | grep -E '^(valid|time)' | cut -c1-120 |
        sed "s/^/$f $N^3: /"
    "$P" /tmp/pf/$f.pdl -D M=333 -D N=1000 -D K=1001 --threads 1 --run --quiet 2>&1 | grep -E '^(valid|time)' |
        cut -c1-120 | sed "s/^/$f 333x1000x1001: /"
done
torch_mm 333 1000 1001 1
python3 - <<'PY'
import time, torch
torch.set_num_threads(1)
x = torch.randn(2048, 2048).bfloat16(); w = torch.randn(2048, 2048).bfloat16(); b = torch.randn(2048)
f = lambda: torch.nn.functional.gelu(torch.nn.functional.linear(x, w).float() + b)
for _ in range(3): f()
ts = []
for _ in range(10):
    s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
ts.sort()
print("torch linear (bf16) + bias + gelu (f32), 2048^3, one thread: median %.3f ms" % (ts[5] * 1e3))
PY
echo "== $N^3, two threads"
run "amx 2thr" -D M=$N -D N=$N -D K=$N --threads 2
torch_mm $N $N $N 2
