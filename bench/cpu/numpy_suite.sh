#!/usr/bin/env bash
# The NumPy suite (issue 15's held-out bar): every kernel of bench/cpu/numpy/ run by
# perfc untuned and tuned at one thread beside the NumPy code a user would write,
# NumPy and its BLAS pinned to one thread.  Prints a Markdown table and a summary
# (perfc faster on X of N, geomean and lowest NumPy/perfc ratio); see
# bench/cpu/numpy_suite.py for how each column is measured.
#
#   bench/cpu/numpy_suite.sh [--perfc build/perfc] [--before OLD/perfc] [--budget 12] [--time 15]
#                            [--no-tune] [--tiny] [--json-out rows.json] [KERNEL...]
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-/usr/bin/python3}
# NumPy's OpenBLAS is the same library perfc's baseline uses: where its detection
# falls back to its SSE3 kernel (a Xeon it does not know), give NumPy the kernel
# perfc chose for it (runtime/blas_core.c), or NumPy's BLAS rows run 3-4x slow.
perfc=build/perfc
for ((i = 1; i < $#; i++)); do [ "${!i}" = --perfc ] && { j=$((i + 1)); perfc=${!j}; }; done
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -x "$perfc" ]; then
  core=$("$perfc" stdlib/gemm.pdl -D M=8 -D N=8 -D K=8 --run --compare openblas --threads 1 2>/dev/null |
         sed -n 's/^libraries.*(core \([A-Za-z]*\), set by perfc: OpenBLAS detected \([A-Za-z0-9]*\).*/\1 \2/p')
  if [ -n "$core" ]; then
    export OPENBLAS_CORETYPE=${core%% *}
    echo "# OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE for NumPy (OpenBLAS detected ${core##* } on this CPU)"
  fi
fi
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(grep -c ^processor /proc/cpuinfo) cores;" \
     "load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ); perfc $(git rev-parse --short HEAD 2>/dev/null || echo '?');" \
     "numpy $("$PY" -c 'import numpy; print(numpy.__version__)')"
exec "$PY" bench/cpu/numpy_suite.py "$@"
