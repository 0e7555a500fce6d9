#!/usr/bin/env bash
# The lib_gpu test (label gpu; exit status 77 without a GPU): a library built with GPU
# code, called through NAME_call_cuda on device memory and compared with the
# interpreter (tests/lib/lib_check.c --cuda):
#   - GEMM (f32 and f16), softmax and layernorm at three sizes each that were not
#     given at build time: the general GPU variant (PERFC_LIB_TRACE says so);
#   - GEMM at its build sizes with 256-byte aligned tensors: the specialised code,
#     and the same sizes with tensors 4 bytes off: the general variant;
#   - a size under which an index would leave a tensor: PERFC_LIB_ERANGE on the host,
#     before any launch;
#   - the Python package on PyTorch CUDA tensors (tests/lib/test_torch_cuda.py), when
#     PyTorch is there.
#   gpu.sh PERFC LIB_CHECK SOURCE_DIR
set -uo pipefail
PERFC=$1 CHECK=$2 SRC=$3
S=$SRC/stdlib
if ! { command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; }; then
    echo "no GPU: skipped"
    exit 77
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# perfc lib builds a kernel at its default dtypes: the f16 GEMM of stdlib's gemm
# (T = f16) becomes a kernel of its own, gemm_f16, for the library (scripts/pdl_instance.py)
python3 "$SRC/scripts/pdl_instance.py" "$S/gemm.pdl" gemm gemm_f16 T=f16 >"$W/gemm_f16.pdl"
ARCH=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
TARGETS=host,sm_80
case $ARCH in sm_80) ;; sm_86|sm_89|sm_90) TARGETS=$TARGETS,$ARCH ;; esac
echo "GPU $ARCH: perfc lib -target $TARGETS"
"$PERFC" lib "$S/gemm.pdl" "$W/gemm_f16.pdl" "$S/softmax.pdl" "$S/layernorm.pdl" "$SRC/tests/lib/window.pdl" \
    -k gemm -k gemm_f16 -k softmax -k layernorm -k window -target "$TARGETS" \
    -D M=64 -D N=48 -D K=32 --sizes softmax:R=16,C=100 --sizes layernorm:R=16,C=100 -o "$W/tg" >"$W/build.log" 2>&1 \
    || { cat "$W/build.log"; fail "perfc lib"; }
run() { # run WANT-IN-TRACE lib_check-args...
    local want=$1 out s; shift
    out=$(PERFC_LIB_TRACE=1 "$CHECK" "$W/libtg.so" tg "$@" --cuda 2>&1); s=$?
    echo "$out"
    [ $s = 77 ] && { echo "lib_check found no usable GPU: skipped"; exit 77; }
    [ $s = 0 ] || fail "lib_check $* (exit $s)"
    grep -q "$want" <<<"$out" || fail "$2 $3: the trace does not say '$want'"
}
for m in M=1,N=1,K=1 M=33,N=17,K=5 M=65,N=49,K=31; do
    run "GPU general variant" "$S/gemm.pdl" gemm $m
    run "GPU general variant" "$W/gemm_f16.pdl" gemm_f16 $m
done
for m in R=1,C=1 R=7,C=1001 R=17,C=99; do
    run "GPU general variant" "$S/softmax.pdl" softmax $m
    run "GPU general variant" "$S/layernorm.pdl" layernorm $m
done
if grep -q "GPU code for M=64,N=48,K=32" "$W/tg.h"; then
    run "GPU code for" "$S/gemm.pdl" gemm M=64,N=48,K=32 --aligned
else
    echo "(gemm has no specialised GPU code at its build sizes: only the general variant is checked)"
fi
run "GPU general variant" "$S/gemm.pdl" gemm M=64,N=48,K=32
# an index that would leave X: refused on the host, nothing launched
"$CHECK" "$W/libtg.so" tg "$SRC/tests/lib/window.pdl" window N=10,M=9,W=3 --cuda --expect 3 \
    || fail "window N=10,M=9,W=3 on the GPU"
# the Python package on PyTorch CUDA tensors (when PyTorch is installed)
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    PYTHONPATH="$SRC/python" python3 "$SRC/tests/lib/test_torch_cuda.py" "$W/libtg.so" || fail "python on CUDA tensors"
else
    echo "(no PyTorch with CUDA: the Python check on CUDA tensors is skipped)"
fi
echo "lib_gpu: ok"
