#!/usr/bin/env bash
# The GPU default for attention a user writes (tune/rules_attn.c): with no schedule,
# stdlib attention and two kernels written fresh (bench/gpu/kernels/user_attention.pdl:
# other names, f16, heads folded, the scale as a division, no batch loop) get the
# flash-attention template, and so do stdlib's causal attention and a causal kernel
# written fresh (the mask as selects, key tiles bounded per block), and grouped-query
# attention (K and V heads indexed by a division); its schedule
# keeps each kernel's meaning on the f64
# interpreter (output sums to 1e-6 relative); the lowering keeps the softmax in
# registers; the PTX assembles for sm_80 and sm_90a when ptxas is given.  Lengths that
# are no multiple of the tiles (200, 130, 1000) get it too.
# Exit 77 without NVRTC for the PTX part.  Usage: flash_default.sh PERFC ROOT [PTXAS]
set -u
perfc=$1; root=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/default_check.sh"
# the second product reads the exponentials from registers (A operand of mma)
p_from_regs() { # file big what target
  # shellcheck disable=SC2086
  "$perfc" "$1" $2 -target $4 -dump-after=gpu-mma 2>&1 | grep -q 'from registers' || bad "$3 $4: P·V not from registers"
}
check() { dc_check 'flash attention' 4 p_from_regs "$@"; }
u="$root/bench/gpu/kernels/user_attention.pdl"
check "$root/stdlib/attention.pdl" "-D B=1 -D H=2 -D S=256 -D D=32" "-D B=4 -D H=16 -D S=2048 -D D=64"
check "$u" "-k attn -D NH=3 -D T=128 -D E=48" "-k attn -D NH=64 -D T=2048 -D E=64"
check "$u" "-k head -D T=256 -D E=32" "-k head -D T=4096 -D E=128"
# causal: the mask as -inf / 0 selects, the key tiles bounded per block (skip_tiles)
check "$root/stdlib/attention_causal.pdl" "-D B=1 -D H=2 -D S=384 -D D=32" "-D B=4 -D H=16 -D S=2048 -D D=128"
grep -q 'skip_tiles' "$tmp/sched" || bad "stdlib causal: no skip_tiles in the default"
grep -q 'reverse(f_io)' "$tmp/sched" || bad "stdlib causal: the row blocks with the most key tiles do not start first"
grep -q 'bind(f_io, block.z)' "$tmp/sched" || bad "stdlib causal: the row blocks are not the slowest block index"
# at 4x16x2048x128 on sm_90a ptxas (CUDA 13) gives this kernel 138 registers, one block
# of 256 threads an SM where shared memory admits two: the compile asks for two
# (codegen/cuda/occupancy.c), and the PTX carries the request
if "$perfc" "$root/stdlib/attention_causal.pdl" -D B=4 -D H=16 -D S=2048 -D D=128 -target sm_90a -emit ptx \
    -o "$tmp/c.ptx" 2> /dev/null; then
  grep -q 'minnctapersm 2' "$tmp/c.ptx" || bad "causal 4x16x2048x128 sm_90a: no request for 2 blocks per SM"
fi
check "$u" "-k causal -D NH=3 -D T=256 -D E=48" "-k causal -D NH=64 -D T=2048 -D E=64"
grep -qE 'online_softmax\(y, y.u, [a-z0-9]+, mask=inf\)' "$tmp/sched" || bad "user causal: not mask=inf"
# grouped-query attention: K and V indexed by h / (H / KVH), staged per block all the same
check "$u" "-k gqa -D B=1 -D H=4 -D KVH=2 -D S=256 -D D=32" "-k gqa -D B=4 -D H=16 -D KVH=4 -D S=2048 -D D=128"
# any length: rows not a multiple of 128 run in a padded last block, keys not a
# multiple of 64 are masked in the last tile (plain and causal)
check "$u" "-k head -D T=200 -D E=32" "-k head -D T=1000 -D E=64"
check "$u" "-k causal -D NH=2 -D T=130 -D E=16" "-k causal -D NH=16 -D T=1000 -D E=64"
# (2 heads of 130 rows make few blocks: 64 rows a block, so more SMs have work)
grep -q 'split(y.t, 64, f_io, f_ii, tail=pad)' "$tmp/sched" || bad "causal T=130: rows not padded in blocks of 64"
# head sizes a multiple of 64 on sm_90a: the warpgroup form (wgmma for both products,
# P from registers as wgmma's A operand, the row vectors in the lanes of a warpgroup),
# on the interpreter at sizes no tile divides; sm_80 keeps mma.sync
p_wg() { # file big what target
  # shellcheck disable=SC2086
  "$perfc" "$1" $2 -target $4 -emit cuda -o "$tmp/k.cu" 2>&1 || { bad "$3 $4: -emit cuda"; return; }
  if [ "$4" = sm_90a ]; then
    grep -q 'A from registers, B from shared memory' "$tmp/k.cu" || bad "$3 $4: P·V not a wgmma with A in registers"
    grep -qE 'pf_mma_b?f16\([A-Za-z_0-9]+\[' "$tmp/k.cu" && bad "$3 $4: an mma.sync product left"
  else
    grep -q 'wgmma.mma_async' "$tmp/k.cu" && bad "$3 $4: wgmma on sm_80"
  fi
  p_from_regs "$@"
}
check_wg() { dc_check 'flash attention (wgmma)' 4 p_wg "$@"; }
check_wg "$root/stdlib/attention.pdl" "-D B=1 -D H=2 -D S=200 -D D=64" "-D B=4 -D H=16 -D S=2048 -D D=128"
check_wg "$u" "-k causal -D NH=2 -D T=130 -D E=64" "-k causal -D NH=16 -D T=1000 -D E=64"
check_wg "$u" "-k gqa -D B=1 -D H=4 -D KVH=2 -D S=256 -D D=128" "-k gqa -D B=4 -D H=16 -D KVH=4 -D S=2048 -D D=128"
[ $fail = 0 ] && [ $nortc = 1 ] && exit 77
[ $fail = 0 ] && echo "flash-attention default: eleven kernels checked"
exit $fail
