#!/usr/bin/env bash
# Flash attention (plain and causal) on the GPU beside torch's scaled_dot_product_attention in the same
# run: each row compiles an attention kernel with perfc (no schedule: the tuner's
# default, wgmma on sm_90a and mma.sync on sm_80; rows marked --flash take stdlib's
# mma.sync `flash` schedule instead), validates it on fresh random
# inputs and times it (`--run`), then times SDPA's default backend on the same shape
# (bench/gpu/attention.py).  Prints one line per row: perfc's ms, SDPA's ms, the
# ratio SDPA / perfc (above 1: perfc faster), validity and the golden used.
#   bash bench/gpu/attention.sh [ROWS...]   (carry carry/gpu/perfc.xz)
# Environment: TARGET (sm_90a), OUT (logs), SCHEDFILE (a file of schedule statements
# applied with --no-schedule -s, instead of the default), TUNE (a budget: the row is
# tuned first, --autotune --budget TUNE, and its best timed).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/attention}; mkdir -p "$O" /tmp/pf
# always the carried build: a warm machine keeps /tmp from an earlier call, whose
# perfc may be an older build (a run timed one so once)
xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=${PERFC:-/tmp/pf/perfc}
T=${TARGET:-sm_90a}
WANT="$*"
want() { [ -z "$WANT" ] && return 0; for w in $WANT; do [ "$w" = "$1" ] && return 0; done; return 1; }
row() {  # row LABEL SDPASPEC FILE [--flash] [perfc args...]
  local label=$1 spec=$2 f=$3; shift 3
  want "$label" || return 0
  local t0 t1
  t0=$(date +%s.%N)
  local how=()   # no schedule: the GPU default
  [ -n "${TUNE:-}" ] && how=(--autotune --budget "$TUNE")
  if [ "${1:-}" = --flash ]; then how=(--schedule flash); shift; fi
  if [ -n "${SCHEDFILE:-}" ]; then
    timeout 300 "$P" "$f" -target "$T" "$@" --no-schedule -s "$(cat "$SCHEDFILE")" --run --json --verbose \
        > "$O/$label-$T.json" 2> "$O/$label-$T.err"
  else
    timeout 300 "$P" "$f" -target "$T" "$@" "${how[@]}" --run --json --verbose \
        > "$O/$label-$T.json" 2> "$O/$label-$T.err"
  fi
  local rc=$?
  t1=$(date +%s.%N)
  local tj
  tj=$(python3 bench/gpu/attention.py "$spec" 2>>"$O/torch.err" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read() or "{}"); print(r.get("ms") or "nan")')
  python3 - "$label" "$T" "$rc" "$O/$label-$T.json" "$tj" "$t0" "$t1" <<'PY'
import json, math, sys
label, tgt, rc, jf, tj, t0, t1 = sys.argv[1:8]
try:
    r = json.load(open(jf))
except Exception:
    r = {}
pt = (r.get("time_ms") or {}).get("median", float("nan"))
valid = "valid" if r.get("valid") else "INVALID:" + str(r.get("reason"))[:60].replace(" ", "_")
gold = str(r.get("golden") or r.get("golden_kind") or "?")[:24]
tt = float(tj)
ratio = tt / pt if pt and not math.isnan(pt) and not math.isnan(tt) else float("nan")
print("%-12s %-7s rc=%s %-8s perfc %8.4f ms | SDPA %8.4f ms | ratio %.3f | run %5.1f s | golden %s"
      % (label, tgt, rc, valid, pt, tt, ratio, float(t1) - float(t0), gold), flush=True)
PY
  [ "$rc" = 0 ] || tail -5 "$O/$label-$T.err"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "target $T, $(date -u)"
A=stdlib/attention.pdl
row d128        4:16:16:2048:2048:128:bf16   $A -D B=4 -D H=16 -D S=2048 -D D=128
row d64         4:16:16:2048:2048:64:bf16    $A -D B=4 -D H=16 -D S=2048 -D D=64
row s4096       1:16:16:4096:4096:128:bf16   $A -D B=1 -D H=16 -D S=4096 -D D=128
row s8192       1:16:16:8192:8192:128:bf16   $A -D B=1 -D H=16 -D S=8192 -D D=128
# stdlib's hand-written schedule (mma.sync on every target), for comparison
row flash-d128  4:16:16:2048:2048:128:bf16   $A --flash -D B=4 -D H=16 -D S=2048 -D D=128
# written fresh by a user, no schedule: the tuner's flash template as the default
U=bench/gpu/kernels/user_attention.pdl
row user-f16    1:64:64:2048:2048:64:f16     $U -k attn -D NH=64 -D T=2048 -D E=64
row user-head   1:1:1:4096:4096:128:bf16     $U -k head -D T=4096 -D E=128
# causal: the mask as selects, key tiles above the block's last row skipped
C=stdlib/attention_causal.pdl
row c-d128      4:16:16:2048:2048:128:bf16:causal $C -D B=4 -D H=16 -D S=2048 -D D=128
row c-d64       4:16:16:2048:2048:64:bf16:causal  $C -D B=4 -D H=16 -D S=2048 -D D=64
row c-s8192     1:16:16:8192:8192:128:bf16:causal $C -D B=1 -D H=16 -D S=8192 -D D=128
row c-flash     4:16:16:2048:2048:128:bf16:causal $C --flash -D B=4 -D H=16 -D S=2048 -D D=128
row c-user      1:64:64:2048:2048:64:f16:causal   $U -k causal -D NH=64 -D T=2048 -D E=64
# lengths no tile divides: a padded last block of rows, the last key tile masked
row odd-head    1:1:1:1000:1000:64:bf16      $U -k head -D T=1000 -D E=64
row odd-attn    1:16:16:1000:1000:64:f16     $U -k attn -D NH=16 -D T=1000 -D E=64
row odd-causal  1:16:16:1000:1000:64:f16:causal $U -k causal -D NH=16 -D T=1000 -D E=64
# decoding: one query row against 8192 keys (the bar's shape), 8 sequences
row decode      8:16:16:1:8192:128:bf16      $U -k cross -D B=8 -D H=16 -D SQ=1 -D SK=8192 -D D=128
# decoding written other ways: head size 64, 4 new rows (speculative), a cache of
# 5000 keys (no tile divides it), grouped-query heads (32 on 8)
row dec-d64     8:16:16:1:8192:64:bf16       $U -k cross -D B=8 -D H=16 -D SQ=1 -D SK=8192 -D D=64
row dec-sq4     8:16:16:4:8192:128:bf16      $U -k cross -D B=8 -D H=16 -D SQ=4 -D SK=8192 -D D=128
row dec-odd     8:16:16:1:5000:128:bf16      $U -k cross -D B=8 -D H=16 -D SQ=1 -D SK=5000 -D D=128
row dec-gqa     8:32:8:1:8192:128:bf16       $U -k gqa_dec -D B=8 -D H=32 -D KVH=8 -D SQ=1 -D SK=8192 -D D=128
# a bias on the scores as its own statement (SDPA given the same bias as attn_mask), and
# ALiBi (its bias computed from the distance; SDPA's causal form for reference only)
row bias        4:16:16:2048:2048:64:f16:bias  $U -k bias -D B=4 -D H=16 -D T=2048 -D E=64
row bias32      4:16:16:2048:2048:64:bf16:bias tests/check/attn_bias.pdl -k bias32 -D B=4 -D H=16 -D T=2048 -D E=64
row alibi       4:16:16:2048:2048:128:bf16:causal $U -k alibi -D B=4 -D H=16 -D T=2048 -D E=128
# grouped-query: 16 query heads on 4 key/value heads
row gqa         4:16:4:2048:2048:128:bf16    $U -k gqa -D B=4 -D H=16 -D KVH=4 -D S=2048 -D D=128
# batch-first [B, T, H, E], as FlashAttention's API and model code lay it out (SDPA
# takes the same memory as transposed views)
BT=bench/gpu/kernels/user_bthd.pdl
row bthd        4:16:16:2048:2048:128:bf16:bthd        $BT -k plain_bthd -D B=4 -D T=2048 -D H=16 -D E=128
row c-bthd      4:16:16:2048:2048:128:f16:causal:bthd  $BT -k causal_bthd -D B=4 -D T=2048 -D H=16 -D E=128
# f32 as users first write it (no tensor cores: tune/rules_attn_simt.c, one query row
# a thread), head sizes no mma depth step divides (40: a UNet's first blocks; padded)
SM=bench/gpu/kernels/user_simt_attn.pdl
row f32-d64     4:16:16:2048:2048:64:f32     $SM -k attn_f32 -D B=4 -D H=16 -D S=2048 -D D=64
row f32-d128    4:16:16:2048:2048:128:f32    $SM -k attn_f32 -D B=4 -D H=16 -D S=2048 -D D=128
row f32-c-odd   2:8:8:1000:1000:64:f32:causal:bthd  $SM -k causal_f32 -D B=2 -D T=1000 -D H=8 -D E=64
row h40         1:16:16:4096:4096:40:f16     $SM -k head40 -D NH=16 -D T=4096 -D E=40
row h40-c-odd   1:16:16:1000:1000:40:f16:causal  $U -k causal -D NH=16 -D T=1000 -D E=40
row dec-f32     8:16:16:1:8192:128:f32       $SM -k decode_f32 -D B=8 -D H=16 -D SQ=1 -D SK=8192 -D D=128
# three batch loops (grouped-query heads as their own dimension): collapsed on the grid
row gqa-3b      2:16:4:2048:2048:128:bf16    tests/check/flash_batch3.pdl -D B=2 -D HK=4 -D G=4 -D T=2048 -D E=128
row h72-bthd    4:16:16:2048:2048:72:bf16:bthd   $BT -k plain_bthd -D B=4 -D T=2048 -D H=16 -D E=72
