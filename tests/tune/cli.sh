#!/bin/sh
# perfc --autotune end to end on a scratch database: a search, a warm repeat that
# must come from the database, the listing, and an export that perfc accepts back.
set -eu
perfc=$1 root=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
db=$dir/tune.db
cat > "$dir/g.pdl" <<'PDL'
kernel g(M, N, K) {
  in  A: f32[M, K]
  in  B: f32[K, N]
  out C: f32[M, N]
  C[i, j] = sum(k) A[i, k] * B[k, j]
}
PDL
"$perfc" "$dir/g.pdl" -D M=48 -D N=64 -D K=64 --autotune --budget 4 --db "$db" --seed 3 > "$dir/first.txt"
grep -q '^search ' "$dir/first.txt"
grep -q '^schedule g for cpu {' "$dir/first.txt"
"$perfc" "$dir/g.pdl" -D M=48 -D N=64 -D K=64 --autotune --budget 4 --db "$db" --seed 4 > "$dir/second.txt"
grep -q '^database   hit' "$dir/second.txt"
"$perfc" tune --show --db "$db" > "$dir/show.txt"
grep -q 'M=48 N=64 K=64' "$dir/show.txt"
"$perfc" tune --export --db "$db" -k g > "$dir/export.pdl"
cat "$dir/g.pdl" "$dir/export.pdl" > "$dir/g2.pdl"
"$perfc" "$dir/g2.pdl" -D M=48 -D N=64 -D K=64 -emit ir > "$dir/g2.ir"
# the winner's schedule is in the IR (unless the kernel as written, always a
# candidate, won at this small size)
grep -q 'vector' "$dir/g2.ir" || grep -A1 '^top ' "$dir/first.txt" | tail -n 1 | grep -q '(no schedule)'
# a matrix-vector product (a contraction no micro-kernel fits) is tuned as a
# reduction, never a silent exit 1, and the kernel as written is a candidate
cat > "$dir/mv.pdl" <<'PDL'
kernel mv(M, K) {
  in  A: f32[M, K]
  in  x: f32[K]
  out y: f32[M]
  y[i] = sum(k) A[i, k] * x[k]
}
PDL
"$perfc" "$dir/mv.pdl" -D M=64 -D K=128 --autotune --budget 4 --db "$db" --seed 5 > "$dir/mv.txt" 2>&1
grep -q '^space      row-wise.*no schedule (the kernel as written)' "$dir/mv.txt"
grep -q '(no schedule): ' "$dir/mv.txt"
# no database, bad usage
if "$perfc" tune --show --db "$dir/none.db" 2>/dev/null; then exit 1; fi
if "$perfc" tune 2>/dev/null; then exit 1; fi
echo ok
