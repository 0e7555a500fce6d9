#!/usr/bin/env bash
# The lib_install test (tests/lib/CMakeLists.txt): perfc as another project sees it.
#   install.sh BUILD_DIR SOURCE_DIR LIB_CHECK
# Installs the build into a temporary prefix, configures and builds examples/
# against it (find_package(perfc), perfc_add_library), runs the C example, the
# embedding-API example and the Python example, then checks the examples' library
# against the interpreter at three sizes it was not built for.
set -euo pipefail
BUILD=$1 SRC=$2 CHECK=$3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$W/prefix" >/dev/null || fail "cmake --install"
for f in bin/perfc include/perfc.h lib/cmake/perfc/perfc-config.cmake share/perfc/python/perfc/__init__.py; do
    [ -e "$W/prefix/$f" ] || fail "the install lacks $f"
done
cmake -S "$SRC/examples" -B "$W/ex" -DCMAKE_PREFIX_PATH="$W/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null \
    || fail "configuring examples/ against the installed perfc"
cmake --build "$W/ex" >/dev/null || fail "building examples/"
"$W/ex/gemm_main" || fail "examples/gemm_main.c"
if [ -x "$W/ex/embed" ]; then
    "$W/ex/embed" >"$W/embed.out" || { cat "$W/embed.out"; fail "examples/embed.c"; }
    grep -q '"valid":true' "$W/embed.out" || { cat "$W/embed.out"; fail "embed: the report does not say valid"; }
    echo "embed: perfc_run validated the kernel"
fi
LIB="$W/ex/perfc_kernels/libkernels.so"
for m in M=100,N=37,K=64 M=1,N=300,K=5 M=129,N=257,K=33; do
    "$CHECK" "$LIB" kernels "$W/prefix/share/perfc/stdlib/gemm.pdl" gemm $m || fail "lib_check gemm $m"
done
for m in R=3,C=77 R=1,C=1 R=65,C=999; do
    "$CHECK" "$LIB" kernels "$W/prefix/share/perfc/stdlib/softmax.pdl" softmax $m || fail "lib_check softmax $m"
done
PY=""
for p in python3 /usr/bin/python3; do
    if command -v $p >/dev/null && $p -c 'import numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
    PYTHONPATH="$W/prefix/share/perfc/python" $PY "$SRC/examples/numpy_gemm.py" "$LIB" || fail "examples/numpy_gemm.py"
else
    echo "NumPy is missing: examples/numpy_gemm.py is skipped"
fi
echo "lib_install: ok"
