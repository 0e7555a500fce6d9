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
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(grep -c ^processor /proc/cpuinfo) cores;" \
     "load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ); perfc $(git rev-parse --short HEAD 2>/dev/null || echo '?');" \
     "numpy $("$PY" -c 'import numpy; print(numpy.__version__)')"
exec "$PY" bench/cpu/numpy_suite.py "$@"
