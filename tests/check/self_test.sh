#!/usr/bin/env bash
# The check runner must fail a case whose expectations are wrong, in each way it
# can be wrong, and pass the same case when they are right: a runner that always
# passes would make every golden in this folder worthless.
set -u
PY=$1 CHECK=$2 PERFC=$3
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
body='kernel scale(N) {
  in  X: f32[N]
  out Y: f32[N]
  Y[i] = 2 * X[i]
}'
case_() {  # NAME EXPECT(pass|fail) DIRECTIVES...
  local name=$1 want=$2; shift 2
  { printf '%s\n' "$@"; printf '%s\n' "$body"; } > "$dir/$name.pdl"
  if "$PY" "$CHECK" "$PERFC" "$dir/$name.pdl" > "$dir/$name.out" 2>&1; then got=pass; else got=fail; fi
  if [ "$got" != "$want" ]; then
    echo "self_test: case $name: expected $want, got $got"; cat "$dir/$name.out"; exit 1
  fi
}
R='# RUN: -D N=16 -emit ir'
case_ good       pass "$R" '# CHECK: for i in 0..N' '# CHECK-NEXT: | Y[i] = {{f32\(2\)}} * X[i]'
case_ slashes    pass "// RUN: -D N=16 -emit ir" '// CHECK: for i in 0..N'
case_ missing    fail "$R" '# CHECK: for j in 0..N'
case_ order      fail "$R" '# CHECK: Y[i] =' '# CHECK: for i in 0..N'
case_ next       fail "$R" '# CHECK: kernel scale' '# CHECK-NEXT: Y[i] ='
case_ not        fail "$R" '# CHECK: kernel scale' '# CHECK-NOT: for i' '# CHECK: Y[i]'
case_ count_ok   pass "$R" '# CHECK-COUNT-1: for i in 0..N'
case_ count_bad  fail "$R" '# CHECK-COUNT-2: for i in 0..N'
case_ exit_bad   fail '# RUN: -D N=0 -emit ir' '# CHECK: N'
case_ exit_ok    pass '# RUN: -D N=0 -emit ir' '# EXIT: 1' '# CHECK: {{error}}'
case_ no_checks  fail "$R"
echo "self_test: all cases behave"
