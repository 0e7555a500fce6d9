#!/usr/bin/env bash
# Flash attention on a GPU (label gpu): the `flash` schedules of stdlib/attention.pdl
# and attention_causal.pdl as sm_80 and sm_90a code, and the tuner's default (wgmma
# on sm_90a, mma.sync on sm_80), head sizes 64 and 128, validated on fresh inputs by --run
# (sampled exact checks and the device's full-tensor golden), and the same kernel
# under compute-sanitizer memcheck and racecheck at a small size when the tool is
# there.  Exit 77 without a GPU.  Usage: flash_gpu.sh PERFC STDLIB_DIR
set -u
perfc=$1; dir=$2
. "$(dirname "$0")/gpu_check.sh"   # exits 77 without a GPU; sets tmp and fail
a="$dir/attention.pdl"
c="$dir/attention_causal.pdl"
for f in "$a" "$c"; do
  for how in "--schedule flash" ""; do
    for t in sm_80 sm_90a; do
      for sz in "-D B=2 -D H=3 -D S=384 -D D=64" "-D B=1 -D H=2 -D S=640 -D D=128" "-D B=1 -D H=2 -D S=1000 -D D=64"; do
        # shellcheck disable=SC2086
        valid "${f##*/} ${how:-default} $t $sz" "$f" $how $sz -target $t
      done
    done
  done
done
# batch-first [B, T, H, E] with grouped-query heads (the template reorders the output
# nest first: tune/rules_attn.c row_order), a length no tile divides
bt="$dir/../tests/check/flash_bthd.pdl"
for t in sm_80 sm_90a; do
  for sz in "-D B=2 -D T=200 -D H=8 -D E=64" "-D B=1 -D T=384 -D H=4 -D E=128"; do
    # shellcheck disable=SC2086
    valid "${bt##*/} $t $sz" "$bt" $sz -target $t
  done
done
# what tensor cores do not take, or take padded: f32 attention (one query row a thread,
# tune/rules_attn_simt.c; head sizes 64 and 72), a head size of 40 (the score depth
# padded to 48), three batch loops (collapsed onto the grid), a bias stage on the
# scores (a bias tensor; ALiBi's distance term under a causal mask)
chk="$dir/../tests/check"
extra=("attn_simt.pdl -D B=2 -D T=300 -D H=4 -D E=64" "attn_simt.pdl -D B=1 -D T=200 -D H=3 -D E=72"
       "flash_head40.pdl -D NH=3 -D T=333 -D E=40" "flash_batch3.pdl -D B=2 -D HK=2 -D G=3 -D T=200 -D E=64"
       "attn_bias.pdl -k bias -D B=2 -D H=3 -D T=200 -D E=64" "attn_bias.pdl -k alibi -D B=1 -D H=2 -D T=333 -D E=128"
       "attn_bias.pdl -k kpm -D B=2 -D H=2 -D T=300 -D E=64" "attn_bias.pdl -k bias32 -D B=1 -D H=2 -D T=333 -D E=64")
for t in sm_80 sm_90a; do
  for e in "${extra[@]}"; do
    # shellcheck disable=SC2086
    valid "$e $t" "$chk/${e%% *}" ${e#* } -target $t
  done
done
# where a driver is, NVRTC may answer a compile it has seen from the CUDA compute cache,
# without ptxas' report, and the occupancy request (two blocks an SM for the causal
# kernel at D = 128) was lost on every compile after the first: both compiles ask
for n in 1 2; do
  "$perfc" "$c" -D B=4 -D H=16 -D S=2048 -D D=128 -target sm_90a -emit ptx -o "$tmp/c$n.ptx" 2> /dev/null
  if grep -q 'minnctapersm 2' "$tmp/c$n.ptx"; then echo "ok   causal 4x16x2048x128 compile $n asks for 2 blocks an SM"
  else echo "FAIL causal 4x16x2048x128 compile $n: no request for 2 blocks an SM"; fail=1; fi
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$cs" ]; then
  for f in "$a" "$c"; do
    for how in "--schedule flash" ""; do
      for tool in memcheck racecheck; do
        # shellcheck disable=SC2086
        clean "$cs" $tool "${f##*/} ${how:-default}" "$f" $how -D B=1 -D H=1 -D S=200 -D D=64 -target sm_90a
      done
    done
  done
  for tool in memcheck racecheck; do
    clean "$cs" $tool "${bt##*/}" "$bt" -D B=1 -D T=200 -D H=4 -D E=64 -target sm_90a
    for e in "attn_simt.pdl -D B=1 -D T=150 -D H=1 -D E=64" "attn_simt.pdl -D B=1 -D T=100 -D H=1 -D E=72" \
             "flash_head40.pdl -D NH=1 -D T=150 -D E=40" "flash_batch3.pdl -D B=1 -D HK=1 -D G=2 -D T=130 -D E=64" \
             "attn_bias.pdl -k bias -D B=1 -D H=1 -D T=150 -D E=64" "attn_bias.pdl -k alibi -D B=1 -D H=1 -D T=150 -D E=64"; do
      # shellcheck disable=SC2086
      clean "$cs" $tool "${e%% *}" "$chk/${e%% *}" ${e#* } -target sm_90a
    done
  done
fi
exit $fail
