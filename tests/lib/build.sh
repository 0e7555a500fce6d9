#!/usr/bin/env bash
# The lib_build test (tests/lib/CMakeLists.txt): builds one library from stdlib
# kernels and checks it.
#   build.sh PERFC LIB_CHECK SOURCE_DIR
# 1. every kernel against the interpreter at its build-time sizes with 64-byte
#    aligned tensors (the specialised, scheduled code: PERFC_LIB_TRACE proves it),
#    again with every tensor 4 bytes off (as malloc may place it: the same
#    specialised code), and at three sizes not given at build time (the general
#    variant);
# 2. bad calls: NULL tensors, negative and overflowing sizes, an unknown kernel,
#    shapes that are negative or undefined, reads that would leave a tensor;
# 3. the header compiles as C11 and C++17 with -Wall -Wextra -Werror, and a C
#    program links the static library;
# 4. the Python package on NumPy arrays (skipped when NumPy is missing).
set -euo pipefail
PERFC=$1 CHECK=$2 SRC=$3
S=$SRC/stdlib
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# perfc lib builds a kernel at its default dtypes: the f16 GEMM of stdlib's gemm
# (T = f16) becomes a kernel of its own, gemm_f16, for the library (scripts/pdl_instance.py)
python3 "$SRC/scripts/pdl_instance.py" "$S/gemm.pdl" gemm gemm_f16 T=f16 >"$W/gemm_f16.pdl"

"$PERFC" lib "$S/gemm.pdl" "$W/gemm_f16.pdl" "$S/softmax.pdl" "$S/conv2d.pdl" "$S/layernorm.pdl" "$S/attention_causal.pdl" \
    "$SRC/tests/lib/window.pdl" -k gemm -k gemm_f16 -k softmax -k conv2d -k layernorm -k attention_causal -k window \
    -D M=64 -D N=48 -D K=32 --sizes softmax:R=16,C=100 --sizes layernorm:R=16,C=100 \
    --sizes B=1,H=2,S=16,D=8 -o "$W/tk" >/dev/null
for f in libtk.a libtk.so tk.h; do [ -s "$W/$f" ] || fail "perfc lib wrote no $f"; done

check() { "$CHECK" "$W/libtk.so" tk "$@" || fail "lib_check $*"; }
spec() { # the build-time sizes must run specialised code, aligned or not
    local out al
    for al in --aligned ""; do
        # shellcheck disable=SC2086
        out=$(PERFC_LIB_TRACE=1 "$CHECK" "$W/libtk.so" tk "$@" $al 2>&1) || { echo "$out"; fail "lib_check $* $al"; }
        echo "$out"
        grep -q "specialised variant" <<<"$out" || fail "$2 at $3 ${al:-4 bytes off} did not run its specialised code"
    done
}
spec "$S/gemm.pdl" gemm M=64,N=48,K=32
spec "$W/gemm_f16.pdl" gemm_f16 M=64,N=48,K=32
spec "$S/softmax.pdl" softmax R=16,C=100
spec "$S/layernorm.pdl" layernorm R=16,C=100
spec "$S/conv2d.pdl" conv2d N=2,C=3,H=11,W=13,K=4,R=3,S=3,U=2,P=1
spec "$S/attention_causal.pdl" attention_causal B=1,H=2,S=16,D=8
# three sizes per kernel that were not given at build time
for m in M=1,N=1,K=1 M=33,N=17,K=5 M=65,N=49,K=31; do
    check "$S/gemm.pdl" gemm $m
    check "$W/gemm_f16.pdl" gemm_f16 $m
done
for m in R=1,C=1 R=7,C=1001 R=17,C=99; do
    check "$S/softmax.pdl" softmax $m
    check "$S/layernorm.pdl" layernorm $m
done
for m in N=1,C=2,H=7,W=9,K=3,R=3,S=3,U=2,P=1 N=2,C=1,H=5,W=4,K=2,R=2,S=3,U=1,P=0 N=1,C=3,H=9,W=9,K=2,R=5,S=5,U=3,P=2; do
    check "$S/conv2d.pdl" conv2d $m
done
for m in B=1,H=1,S=1,D=1 B=2,H=3,S=17,D=8 B=1,H=2,S=33,D=5; do
    check "$S/attention_causal.pdl" attention_causal $m
done
for m in N=10,M=8,W=3 N=5,M=5,W=1 N=100,M=1,W=100; do
    check "$SRC/tests/lib/window.pdl" window $m
done
# (sizes below 1 are refused by the language, so the interpreter has no empty
# tensor to compare an empty call with)

# bad calls
check "$S/softmax.pdl" softmax R=7,C=1001 --errors
check "$S/conv2d.pdl" conv2d N=1,C=1,H=1,W=1,K=1,R=3,S=3,U=1,P=0 --expect 2   # negative output size
check "$S/conv2d.pdl" conv2d N=1,C=1,H=5,W=5,K=1,R=3,S=3,U=0,P=0 --expect 2   # stride 0
check "$SRC/tests/lib/window.pdl" window N=10,M=9,W=3 --expect 3             # X[i + w] leaves X

# bad use of perfc lib: exit status 1 and one message that names the problem
bad() { # bad EXPECTED-TEXT ARGS...
    local want=$1 out; shift
    out=$("$@" 2>&1) && fail "perfc lib $* succeeded"
    grep -q -- "$want" <<<"$out" || { echo "$out"; fail "perfc lib $*: no '$want' in the message"; }
}
bad "-o DIR/NAME is required" "$PERFC" lib "$S/gemm.pdl"
bad "must be a C identifier" "$PERFC" lib "$S/gemm.pdl" -o "$W/1bad"
bad "does not exist" "$PERFC" lib "$S/gemm.pdl" -o "$W/nowhere/x"
bad "no input file has a kernel" "$PERFC" lib "$S/gemm.pdl" -k nope -o "$W/x"
bad "unknown target 'pdp11'" "$PERFC" lib "$S/gemm.pdl" -target pdp11 -o "$W/x"
bad "unknown GPU target 'sm_99'" "$PERFC" lib "$S/gemm.pdl" -target sm_99 -o "$W/x"
bad "not a parameter of any exported kernel" "$PERFC" lib "$S/gemm.pdl" -D Q=3 -o "$W/x"
bad "defined in both" "$PERFC" lib "$S/gemm.pdl" "$S/gemm.pdl" -o "$W/x"
bad "non-negative integer" "$PERFC" lib "$S/gemm.pdl" -D M=-1 -o "$W/x"
bad "'false' failed" env CC=false "$PERFC" lib "$S/gemm.pdl" -k gemm -o "$W/x"
[ -e "$W/libx.a" ] && fail "a failed build left libx.a"

# the header as C11 and C++17, and a program linked with the static library
cat > "$W/use.c" <<'C'
#include "tk.h"
#include <stdio.h>
#include <string.h>
int main(void)
{
    static float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4];
    int rc = tk_gemm(A, B, C, 2, 2, 3); /* A 2x3, B 3x2 */
    if (rc || C[0] != 4 || C[1] != 5 || C[2] != 10 || C[3] != 11) {
        printf("tk_gemm: %d %s %g %g %g %g\n", rc, tk_last_error(), C[0], C[1], C[2], C[3]);
        return 1;
    }
    if (tk_gemm(NULL, B, C, 2, 2, 3) != PERFC_LIB_ENULL || !strstr(tk_last_error(), "NULL"))
        return 1;
    for (int i = 0; i < tk_nkernels; i++)
        if (!tk_kernels[i].name || tk_kernels[i].ntensors < 2)
            return 1;
    return 0;
}
C
cp "$W/use.c" "$W/use.cpp"
for cc in gcc clang-19; do
    command -v $cc >/dev/null || continue
    $cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$W" -c "$W/use.c" -o "$W/use_$cc.o" || fail "tk.h as C11 with $cc"
done
for cxx in g++ clang++-19; do
    command -v $cxx >/dev/null || continue
    $cxx -std=c++17 -Wall -Wextra -Werror -pedantic -I"$W" -c "$W/use.cpp" -o "$W/use_$cxx.o" || fail "tk.h as C++17 with $cxx"
done
gcc "$W/use_gcc.o" "$W/libtk.a" -lm -lpthread -o "$W/use" || fail "linking libtk.a"
"$W/use" || fail "the C program on libtk.a"
echo "C11/C++17 header and static link: ok"

# GPU code: built with NVRTC when it is there; on a machine without a GPU the _cuda
# entry points answer PERFC_LIB_EDEVICE with a reason (bench/gpu/lib_gemm.sh runs them)
python3 "$SRC/scripts/pdl_instance.py" "$S/gemm.pdl" gemm gemm_tiled --variant tiled M=4096 N=4096 K=4096 \
    >"$W/gemm_tiled.pdl"
if "$PERFC" lib "$W/gemm_tiled.pdl" -k gemm_tiled --sizes gemm_tiled:M=256,N=256,K=64 -target host,sm_80,sm_90 \
        -o "$W/gk" >"$W/gk.log" 2>&1; then
    grep -q 'int gk_gemm_tiled_cuda(const float \*A, const float \*B, float \*C, int64_t M, int64_t N, int64_t K, void \*stream);' \
        "$W/gk.h" || fail "gk.h lacks gk_gemm_tiled_cuda"
    cat > "$W/gk.c" <<'C'
#include "gk.h"
#include <stdio.h>
#include <string.h>
int main(void)
{
    float x[4] = {0};
    int rc = gk_gemm_tiled_cuda(x, x, x, 256, 256, 64, NULL);
    printf("gk_gemm_tiled_cuda: %d %s\n", rc, gk_last_error());
    if (rc != PERFC_LIB_OK && (rc != PERFC_LIB_EDEVICE || !strstr(gk_last_error(), "CUDA")))
        return 1;
    rc = gk_gemm_tiled_cuda(x, x, x, 100, 256, 64, NULL); /* other sizes: the general variant, no driver either */
    printf("other sizes: %d %s\n", rc, gk_last_error());
    return rc == PERFC_LIB_EDEVICE ? 0 : 1;
}
C
    gcc -std=c11 -Wall -Wextra -Werror -pedantic -I"$W" "$W/gk.c" "$W/libgk.a" -lm -lpthread -ldl -o "$W/gk" \
        || fail "gk.h with GPU entry points as C11"
    cp "$W/gk.c" "$W/gk.cpp"
    g++ -std=c++17 -Wall -Wextra -Werror -pedantic -I"$W" -c "$W/gk.cpp" -o "$W/gk_cpp.o" || fail "gk.h as C++17"
    if command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; then
        echo "a GPU is present: the GPU entry points are checked by bench/gpu/lib_gemm.sh"
    else
        "$W/gk" || fail "GPU entry points without a GPU"
    fi
else
    grep -qi nvrtc "$W/gk.log" && echo "NVRTC is missing: the GPU library check is skipped" || { cat "$W/gk.log"; fail "perfc lib with GPU targets"; }
fi

# Python on NumPy arrays
PY=""
for p in python3 /usr/bin/python3; do
    if command -v $p >/dev/null && $p -c 'import numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
    PYTHONPATH="$SRC/python" $PY "$SRC/tests/lib/test_python.py" "$W/libtk.so" || fail "python package"
else
    echo "NumPy is missing: the Python check is skipped"
fi
echo "lib_build: ok"
