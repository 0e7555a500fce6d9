#!/usr/bin/env bash
# The GPU default for attention decoding (tune/rules_decode.c): a few query rows a
# head against many keys, written as users write it (bench/gpu/kernels/
# user_attention.pdl: `cross`, one or several rows; `gqa_dec`, grouped-query heads;
# a causal mask written for rows at the end of the cache), gets the decoding
# template with no schedule given.  Its schedule keeps each kernel's meaning on the
# f64 interpreter (output sums to 1e-6 relative), at lengths no tile divides; the
# score's dot product reads eight 16-bit elements per access (pass gpu-vector); the
# CUDA assembles for sm_80 and sm_90a when ptxas is given.  A chain with many rows
# keeps flash attention.  Exit 77 without NVRTC for the PTX part.
# Usage: decode_default.sh PERFC ROOT [PTXAS]
set -u
perfc=$1; root=$2; ptxas=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/default_check.sh"
u="$root/bench/gpu/kernels/user_attention.pdl"
cat > "$tmp/cdec.pdl" <<'PDL'
kernel cdec(B, H, SQ, SK, D) {
  in  Q: f16[B, H, SQ, D]
  in  K: f16[B, H, SK, D]
  in  V: f16[B, H, SK, D]
  out O: f16[B, H, SQ, D]
  s[b, h, i, j] = sum(d) Q[b, h, i, d] * K[b, h, j, d] * 0.125      where j <= i + SK - SQ
  m[b, h, i]    = max(j) s[b, h, i, j]                              where j <= i + SK - SQ
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i])
  l[b, h, i]    = sum(j) p[b, h, i, j]                              where j <= i + SK - SQ
  O[b, h, i, d] = sum(j) p[b, h, i, j] * V[b, h, j, d] / l[b, h, i] where j <= i + SK - SQ
}
PDL
# the score's dot product reads 8 elements an access (pass gpu-vector)
wide_dot() { # file big what target
  [ "$4" = sm_90a ] || return 0
  # shellcheck disable=SC2086
  "$perfc" "$1" $2 -target sm_90a -dump-after=gpu-vector 2>&1 | grep -q 'd_Ks\[.*{wide}' ||
    bad "$3: the dot product's loads not 16 bytes wide"
}
check() { dc_check 'attention decoding' 5 wide_dot "$@"; }
check "$u" "-k cross -D B=2 -D H=3 -D SQ=1 -D SK=300 -D D=64" "-k cross -D B=8 -D H=16 -D SQ=1 -D SK=8192 -D D=128"
check "$u" "-k cross -D B=1 -D H=2 -D SQ=3 -D SK=1000 -D D=32" "-k cross -D B=8 -D H=16 -D SQ=4 -D SK=5000 -D D=128"
check "$u" "-k cross -D B=1 -D H=1 -D SQ=40 -D SK=700 -D D=32" "-k cross -D B=4 -D H=16 -D SQ=64 -D SK=4096 -D D=64"
check "$u" "-k gqa_dec -D B=2 -D H=8 -D KVH=2 -D SQ=2 -D SK=700 -D D=32" \
  "-k gqa_dec -D B=8 -D H=32 -D KVH=8 -D SQ=1 -D SK=8192 -D D=128"
# the heads of a group share their K/V head's tiles (the head loop split by the group)
grep -q 'split(s.h, 4, d_shk, d_shg)' "$tmp/sched" || bad "gqa_dec: the group's heads do not share the key tiles"
grep -q 'd_phk' "$tmp/sched" || bad "gqa_dec: the group's heads do not share the V tiles"
check "$tmp/cdec.pdl" "-D B=1 -D H=2 -D SQ=4 -D SK=500 -D D=32" "-D B=8 -D H=16 -D SQ=4 -D SK=8192 -D D=128"
# the keys split in planes of partial sums, the exponentials staged with V
grep -q 'rfactor(d_oz, name=d_part, expand=1)' "$tmp/sched" || bad "causal decode: the product not split over the keys"
grep -q 'cache(p, d_ot, mem=shared' "$tmp/sched" || bad "causal decode: the exponentials not staged"
# 128 rows a head or more: flash attention stays the default
"$perfc" "$u" -k cross -D B=1 -D H=2 -D SQ=128 -D SK=512 -D D=32 -target sm_90a -emit report --verbose 2>&1 |
  grep -q 'flash attention' || bad "cross SQ=128: not flash attention"
[ $fail = 0 ] && [ $nortc = 1 ] && exit 77
[ $fail = 0 ] && echo "attention decoding default: five kernels checked"
exit $fail
