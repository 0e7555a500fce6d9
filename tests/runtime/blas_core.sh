#!/bin/sh
# OpenBLAS as the baseline runs its kernel for this CPU (runtime/blas_core.c): on an
# x86-64 CPU with AVX2 and FMA the report's core is one with AVX2 kernels, either
# OpenBLAS's own choice or set by perfc with the detected core named; a core the
# user forced with OPENBLAS_CORETYPE is kept as it is.   blas_core.sh PERFC GEMM.pdl
set -u
perfc=$1 pdl=$2
core() { "$perfc" "$pdl" -D M=8 -D N=8 -D K=8 --run --compare openblas --threads 1 2>/dev/null |
         sed -n 's/^libraries.*(core \([^)]*\)).*/\1/p'; }
forced=$(OPENBLAS_CORETYPE=Prescott core)
case $forced in
  Prescott) ;;
  *) echo "FAIL: OPENBLAS_CORETYPE=Prescott gave core '$forced'"; exit 1 ;;
esac
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && [ "$(uname -m)" = x86_64 ]; then
  got=$(core)
  case $got in
    Haswell*|Zen*|SkylakeX*|Cooperlake*|SapphireRapids*) ;;
    *) echo "FAIL: AVX2 CPU, OpenBLAS core '$got'"; exit 1 ;;
  esac
  case $got in
    *"set by perfc: OpenBLAS detected "?*" on this CPU") echo "restarted: $got" ;;
    *"set by perfc"*) echo "FAIL: note without the detected core: '$got'"; exit 1 ;;
    *) echo "OpenBLAS's own choice: $got" ;;
  esac
fi
echo ok
