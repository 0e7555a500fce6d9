#!/usr/bin/env bash
# The CPU of a lent GPU machine (often an AVX-512 or AMX Xeon), in one device call:
# its ISA, CPU attention's default against the FMA peak (bench/cpu/attention.sh), and
# bf16 GEMM 2048^3 at one thread against torch's CPU matmul (oneDNN inside torch),
# each perfc run validated.  Carry carry/gpu/perfc.xz (the static perfc); with
# carry/gpu/perfc-base.xz beside it, attention runs both, interleaved.
#   bash bench/cpu/host_check.sh
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "isa: $(grep -o -E 'avx512f|avx512_bf16|amx_bf16|amx_tile|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "== attention 1x1x2048x64 bf16, one thread"
if [ -f carry/gpu/perfc-base.xz ]; then
    # a base perfc beside it: two rounds, interleaved, the default form's lines only
    xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc-base && chmod +x /tmp/pf/perfc-base
    for round in 1 2; do
        for p in /tmp/pf/perfc-base "$P"; do
            echo "-- $p, round $round"
            REPS=5 bash bench/cpu/attention.sh "$p" 2048 64 2>&1 | grep -E '^(form|default)|peak'
        done
    done
else
    REPS=5 bash bench/cpu/attention.sh "$P" 2048 64 2>&1 | tail -6
fi
echo "== bf16 GEMM 2048^3, one thread"
cat > /tmp/pf/bf16.pdl <<'PDL'
kernel mm(M, N, K) {
  in  A: bf16[M, K]
  in  B: bf16[K, N]
  out C: f32[M, N]
  C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j])
}
PDL
"$P" /tmp/pf/bf16.pdl -D M=2048 -D N=2048 -D K=2048 --threads 1 --run --verbose 2>&1 |
    grep -E '^(valid|time|perfc  )|default schedule' | cut -c1-200
python3 - <<'PY'
import time, torch
torch.set_num_threads(1)
a = torch.randn(2048, 2048).bfloat16(); b = torch.randn(2048, 2048).bfloat16()
for _ in range(3): torch.matmul(a, b)
ts = []
for _ in range(10):
    t = time.perf_counter(); torch.matmul(a, b); ts.append(time.perf_counter() - t)
ts.sort()
print("torch bf16 matmul (oneDNN), one thread: median %.2f ms, min %.2f ms, %.0f GFLOP/s" %
      (ts[5] * 1e3, ts[0] * 1e3, 2 * 2048 ** 3 / ts[5] / 1e9))
print("torch mkldnn bf16 fast path:", torch.backends.mkldnn.is_available())
PY
