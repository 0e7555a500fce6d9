#!/usr/bin/env bash
# bf16 products on a CPU with AMX tiles (the GPU machines' Intel Xeon hosts), in one
# device call, one thread unless said, each perfc kernel validated by `perfc --run`
# and set beside torch on the CPU (oneDNN inside torch, AMX kernels) in the same run:
#   - C = A·B (bench/gpu/contractions/mm.pdl, bf16 in, f32 out) at N^3 with the
#     default for the host (the AMX template, tune/rules_amx.c) and for
#     -target x86_64-avx512bf16 (vdpbf16ps, no tiles), two rounds;
#   - with SWEEP=1, the AMX template's KC and row block around its default;
#   - other sizes, odd and thin ones padded to whole tiles;
#   - nn.Linear (W[j, k], bf16 out) and Linear + bias + GELU
#     (bench/gpu/contractions/linear*.pdl), at N^3 and 333 x 1000 x 1001; a batch of
#     products (bmm.pdl, 32 x 512 x 512 x 128);
#   - N^3 on two threads.
# perfc's times are `perfc --run` medians (every buffer flushed from the caches
# before each repetition), torch's medians of a warm loop.  Carry carry/gpu/perfc.xz
# (the static perfc).
#   bash bench/cpu/amx_check.sh            N=2048 SWEEP=1 (0: not the blocking sweep)
#                                          QUICK=1: one round, no vdpbf16ps rows, two
#                                          other sizes, no two-thread row
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
N=${N:-2048}
K=bench/gpu/contractions
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u +%FT%TZ)"
echo "isa: $(grep -o -E 'avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
run() { # label, kernel file, then perfc arguments
    local l=$1 f=$2
    shift 2
    "$P" "$f" "$@" --run --quiet 2>&1 | grep -E '^(valid|time|perfc  )|error|perfc:' | cut -c1-160 | sed "s/^/$l: /"
}
mm() { # label, M N K, then perfc arguments
    local l=$1 m=$2 n=$3 k=$4
    shift 4
    run "$l" $K/mm.pdl -D M=$m -D N=$n -D K=$k -D T=bf16 -D U=f32 "$@"
}
torch_op() { # op (mm, linear, linear_gelu), M N K threads
    python3 - "$@" <<'PY'
import sys, time, torch
import torch.nn.functional as F
op = sys.argv[1]
m, n, k, t = map(int, sys.argv[2:6])
nb = int(sys.argv[6]) if len(sys.argv) > 6 else 1
torch.set_num_threads(t)
a = torch.randn(m, k).bfloat16(); b = torch.randn(k, n).bfloat16()
w = torch.randn(n, k).bfloat16(); bias = torch.randn(n).bfloat16()
a3 = torch.randn(nb, m, k).bfloat16(); b3 = torch.randn(nb, k, n).bfloat16()
f = {"mm": lambda: torch.matmul(a, b), "linear": lambda: F.linear(a, w),
     "linear_gelu": lambda: F.gelu(F.linear(a, w) + bias),
     "bmm": lambda: torch.bmm(a3, b3)}[op]
for _ in range(3): f()
ts = []
for _ in range(10):
    s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
ts.sort()
print("torch %s %dx%dx%dx%d bf16, %d thread(s): median %.3f ms, min %.3f ms, %.0f GFLOP/s" %
      (op, nb, m, n, k, t, ts[5] * 1e3, ts[0] * 1e3, 2 * nb * m * n * k / ts[5] / 1e9))
PY
}
echo "== A·B $N^3, one thread"
Q=${QUICK:-0}
for round in 1 2; do
    [ "$Q" = 1 ] && [ $round = 2 ] && break
    mm "amx   r$round" $N $N $N --threads 1
    [ "$Q" = 1 ] || mm "vdp   r$round" $N $N $N --threads 1 -target x86_64-avx512bf16
    torch_op mm $N $N $N 1
done
if [ "${SWEEP:-1}" = 1 ]; then
    echo "== the AMX template's blocking around its default, $N^3, one thread"
    T=$("$P" $K/mm.pdl -D M=$N -D N=$N -D K=$N -D T=bf16 -D U=f32 -emit ir --verbose 2>&1 >/dev/null | sed -n 's/^  //p')
    for v in "1024 8" "512 8" "1024 16" "2048 4"; do
        set -- $v
        t=$(echo "$T" | sed -e "s/param amx_kc = .*/param amx_kc = $1/" -e "s/param amx_mb = .*/param amx_mb = $2/")
        mm "kc $1 mb $2" $N $N $N --threads 1 --no-default-schedule -s "$t"
    done
fi
"$P" $K/mm.pdl -D M=$N -D N=$N -D K=$N -D T=bf16 -D U=f32 -emit asm -o /tmp/pf/mm.s 2>&1 | head -3
echo "tdpbf16ps in the default's code: $(grep -c tdpbf16ps /tmp/pf/mm.s)"
echo "== A·B, other sizes, one thread"
sizes=("1024 1024 1024" "4096 4096 4096" "1000 1000 1000" "2048 2048 2016" "777 333 1001" "512 4096 768"
       "16 4096 4096" "4095 4097 1023")
[ "$Q" = 1 ] && sizes=("1000 1000 1000" "777 333 1001")
for s in "${sizes[@]}"; do
    set -- $s
    mm "amx $1x$2x$3" $1 $2 $3 --threads 1
    torch_op mm $1 $2 $3 1
done
echo "== nn.Linear (W[j, k]) and Linear + bias + GELU, bf16 out, one thread"
for f in linear linear_gelu; do
    for s in "$N $N $N" "333 1000 1001"; do
        set -- $s
        run "$f $1x$2x$3" $K/$f.pdl -D M=$1 -D N=$2 -D K=$3 --threads 1
        torch_op $f $1 $2 $3 1
    done
done
echo "== a batch of products (torch.bmm), bf16 out, one thread"
run "bmm 32x512x512x128" $K/bmm.pdl -D NB=32 -D M=512 -D N=512 -D K=128 --threads 1
torch_op bmm 512 512 128 1 32
[ "$Q" = 1 ] && exit 0
echo "== A·B $N^3, two threads"
mm "amx 2thr" $N $N $N --threads 2
torch_op mm $N $N $N 2
