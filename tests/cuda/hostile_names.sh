#!/usr/bin/env bash
# No user text reaches generated code except as a checked or mangled identifier.
#
# A kernel whose names are C++ keywords, alternative tokens, macro names, CUDA
# built-ins, functions the generated code calls, perfc's own spellings, the mangled
# form of another name (int and int_, pfBint), and size parameters named after
# functions the CUDA headers declare (sinf, y0: fine as the per-launch constants
# they are, fatal as globals) is compiled to CUDA C and to
# LLVM IR: the CUDA source must be printable ASCII whose only preprocessor lines are
# perfc's `#pragma unroll`, with every hostile name mangled; NVRTC must accept it
# (when present); on the host it must run and validate.  Strings that try to inject
# a preprocessor line (a carriage return and `#include </etc/passwd>`) through -s, a
# schedule block and a tuning-database row are refused or dropped, and nothing of
# the file they name is ever printed.
# Usage: hostile_names.sh PERFC
set -u
perfc=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cd "$tmp"

cat >h.pdl <<'PDL'
kernel reinterpret_cast(sinf, y0 = 5) {
  in  int: f32[sinf, y0]
  in  int_: f32[sinf, y0]
  in  pfBint: f32[sinf, y0]
  in  threadIdx: f32[y0]
  out NULL: f32[sinf, y0]
  local assert: f32[sinf, y0]
  assert[decltype, bitand] = int[decltype, bitand] * int_[decltype, bitand]
  compl[requires] = sum(char8_t) pfBint[requires, char8_t]
  NULL[requires, co_await] = assert[requires, co_await] + compl[requires] * threadIdx[co_await]
}
schedule reinterpret_cast {
  split(decltype, 2, "float4", "atomicAdd")
  split(bitand, 2, "idx_t", "pf_t")
}
PDL
sched='split(NULL.requires, 2, "expf", "a.b")'

# CUDA C
"$perfc" h.pdl -D sinf=7 -target sm_80 -emit cuda -s "$sched" -o h.cu 2>err || bad "-emit cuda: $(cat err)"
LC_ALL=C grep -n '[^ -~]' h.cu && bad "a byte outside printable ASCII in the CUDA source"
grep -n '^[[:space:]]*#' h.cu | grep -v '#pragma unroll' && bad "a preprocessor line in the CUDA source"
code=$(sed 's|/\*.*\*/||g; s|"[^"]*"||g' h.cu | grep -v '^ \*\|^/\*')
for w in reinterpret_cast decltype bitand requires co_await char8_t compl NULL assert float4 atomicAdd expf \
         a.b int__; do
  grep -nE "(^|[^A-Za-z0-9_.])$w([^A-Za-z0-9_]|$)" <<<"$(grep -v 'reinterpret_cast<' <<<"$code")" >/dev/null &&
    bad "the raw name $w is in the CUDA code: $(grep -nE "(^|[^A-Za-z0-9_.])$w([^A-Za-z0-9_]|$)" <<<"$code" | head -2)"
done
for w in pfKreinterpret_ucast_0 pfBint int_ pfBpfBint pfBNULL pfBassert pfBcompl pfVco_uawait pfVchar8_ut \
         pfVcompl_drequires pfVfloat4 pfVatomicAdd pfVidx_ut pfVpf_ut pfVexpf pfVa_db 'constexpr idx_t sinf' \
         'constexpr idx_t y0'; do
  grep -qw "$w" h.cu || bad "$w is not in the CUDA source"
done
if "$perfc" h.pdl -D sinf=7 -target sm_80 -emit ptx -s "$sched" -o h.ptx 2>err; then
  grep -q '.entry pfKreinterpret_ucast_0' h.ptx || bad "no entry pfKreinterpret_ucast_0 in the PTX"
elif ! grep -qE 'cannot compile CUDA for [^:]*: NVRTC' err; then
  bad "NVRTC rejected the CUDA for hostile names: $(head -20 err)"
fi

# LLVM: the IR is printable, and the kernel runs and validates on the host
"$perfc" h.pdl -D sinf=7 -emit llvm -s "$sched" -o h.ll 2>err || bad "-emit llvm: $(cat err)"
LC_ALL=C grep -n $'[^\t -~]' h.ll && bad "a byte outside printable ASCII in the LLVM IR"
"$perfc" h.pdl -D sinf=7 -s "$sched" --run --seed 3 >run 2>err || bad "--run of the hostile kernel: $(cat err run)"
grep -q '^valid      yes' run || bad "the hostile kernel did not validate: $(cat run)"
# a kernel named after a function its code calls, and after the JIT's own symbols
for name in expf memcpy perfc_parallel_for main; do
  printf 'kernel %s(N = 64) {\n  in A: f32[N]\n  out B: f32[N]\n  B[i] = exp(A[i])\n}\nschedule %s { parallel(i) }\n' \
    "$name" "$name" >"k_$name.pdl"
  "$perfc" "k_$name.pdl" --run --seed 3 >run 2>err && grep -q '^valid      yes' run || bad "kernel $name: $(cat err run)"
  "$perfc" "k_$name.pdl" -emit llvm | grep -q "^define void @pfk_$name(" || bad "kernel $name is not pfk_$name"
done

# injection through schedule strings: -s, a schedule block, a tuning-database row
inj=$'split(i, 4, "a\r#include </etc/passwd>", "b")'
printf 'kernel vadd(N = 256) {\n  in A: f32[N]\n  in B: f32[N]\n  out C: f32[N]\n  C[i] = A[i] + B[i]\n}\n' >v.pdl
"$perfc" v.pdl -target sm_80 -emit cuda -s "$inj" >out 2>err && bad "-s with a CR and #include accepted"
{ cat v.pdl; printf 'schedule vadd { %s }\n' "$inj"; } >vs.pdl
"$perfc" vs.pdl -target sm_80 -emit cuda >>out 2>>err && bad "a schedule block with a CR and #include accepted"
if command -v sqlite3 >/dev/null; then
  "$perfc" v.pdl --autotune --budget 2 --time 2 --db t.db --seed 1 >/dev/null 2>&1 || bad "autotune to fill the database"
  sqlite3 t.db "UPDATE measurement SET schedule = 'split(i, 4, \"a' || char(13) || '#include </etc/passwd>\", \"b\")'" ||
    bad "sqlite3 update"
  "$perfc" v.pdl --autotune --budget 2 --time 2 --db t.db --seed 1 >>out 2>>err || bad "autotune over a tampered row: $(tail -3 err)"
  grep -q 'failed again' err || bad "the tampered database row was not refused: $(cat err)"
fi
grep -q 'root:' out err && bad "the contents of /etc/passwd were printed"
grep -q '#include' out && bad "an #include reached the output"
[ $fail = 0 ] && echo "hostile names and strings: ok"
exit $fail
