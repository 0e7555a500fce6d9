#!/usr/bin/env bash
# The lib_gpu_emul test (tests/lib/CMakeLists.txt): the GPU path of a generated
# library on a machine without a GPU.  A stand-in libcuda.so.1 (fake_cuda.c) keeps
# "device" memory on the host and runs each general variant's CUDA C compiled as host
# C++ (cuda_shim.h), so NAME_call_cuda is checked end to end -- the driver loaded
# with dlopen, the PTX chosen for a newer GPU, the host's size and index checks,
# stream-ordered temporaries, every launch's arguments and the device code's
# thread mapping -- against the interpreter, at three sizes per kernel that were not
# given at build time (tests/lib/gpu.sh does the same on a real GPU).
# Exit status 77 when NVRTC or a C++ compiler is missing.
#   gpu_emul.sh PERFC LIB_CHECK SOURCE_DIR
set -uo pipefail
PERFC=$1 CHECK=$2 SRC=$3
S=$SRC/stdlib
command -v g++ >/dev/null || { echo "no g++: skipped"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# perfc lib builds a kernel at its default dtypes: the f16 GEMM of stdlib's gemm
# (T = f16) becomes a kernel of its own, gemm_f16, for the library (scripts/pdl_instance.py)
python3 "$SRC/scripts/pdl_instance.py" "$S/gemm.pdl" gemm gemm_f16 T=f16 >"$W/gemm_f16.pdl"

out=$("$PERFC" lib "$S/gemm.pdl" "$W/gemm_f16.pdl" "$S/softmax.pdl" "$S/layernorm.pdl" "$S/attention_causal.pdl" \
    "$S/depthwise_conv2d.pdl" "$SRC/tests/lib/window.pdl" -k gemm -k gemm_f16 -k softmax -k layernorm \
    -k attention_causal -k depthwise_conv2d -k window -target sm_80 --keep -o "$W/te" 2>&1)
s=$?
if [ $s != 0 ]; then
    grep -qi nvrtc <<<"$out" && { echo "NVRTC is missing: skipped"; exit 77; }
    echo "$out"; fail "perfc lib"
fi
B=$(sed -n 's/^perfc lib: build folder kept: //p' <<<"$out")
[ -d "$B" ] || { echo "$out"; fail "no build folder"; }
trap 'rm -rf "$W" "$B"' EXIT
mkdir -p "$W/driver"
cc -std=c11 -O1 -shared -fPIC "$SRC/tests/lib/fake_cuda.c" -o "$W/driver/libcuda.so.1" -ldl || fail "fake_cuda.c"
for k in gemm gemm_f16 softmax layernorm attention_causal depthwise_conv2d window; do
    [ -s "$B/${k}_general.cu" ] || fail "no general CUDA C for $k"
    g++ -std=c++17 -O1 -shared -fPIC -include "$SRC/tests/lib/cuda_shim.h" -x c++ "$B/${k}_general.cu" \
        -o "$W/$k.so" || fail "the general CUDA C of $k as host C++"
done
emul() { # emul KERNEL FILE SIZES [lib_check options]
    local k=$1 f=$2 out s; shift 2
    out=$(LD_LIBRARY_PATH="$W/driver" PERFC_FAKE_CUDA_MODULE="$W/$k.so" PERFC_LIB_TRACE=1 \
        "$CHECK" "$W/libte.so" te "$f" "$k" "$@" --cuda 2>&1); s=$?
    echo "$out"
    [ $s = 0 ] || fail "lib_check $k $* --cuda (exit $s)"
    grep -q "GPU general variant (sm_80, PTX compiled by the driver)" <<<"$out" || fail "$k $1: not the general variant's PTX"
}
for m in M=1,N=1,K=1 M=33,N=17,K=5 M=65,N=49,K=31; do
    emul gemm "$S/gemm.pdl" $m
    emul gemm_f16 "$W/gemm_f16.pdl" $m
done
for m in R=1,C=1 R=7,C=1001 R=17,C=99; do
    emul softmax "$S/softmax.pdl" $m
    emul layernorm "$S/layernorm.pdl" $m
done
for m in B=1,H=1,S=1,D=1 B=2,H=3,S=17,D=8 B=1,H=2,S=33,D=5; do
    emul attention_causal "$S/attention_causal.pdl" $m
done
for m in N=1,C=2,H=7,W=9,R=3,S=3,U=2,P=1 N=2,C=1,H=5,W=4,R=2,S=3,U=1,P=0 N=1,C=3,H=9,W=9,R=5,S=5,U=3,P=2; do
    emul depthwise_conv2d "$S/depthwise_conv2d.pdl" $m
done
for m in N=10,M=8,W=3 N=5,M=5,W=1 N=100,M=1,W=100; do
    emul window "$SRC/tests/lib/window.pdl" $m
done
# an index that would leave X: refused on the host before any launch
LD_LIBRARY_PATH="$W/driver" PERFC_FAKE_CUDA_MODULE="$W/window.so" "$CHECK" "$W/libte.so" te \
    "$SRC/tests/lib/window.pdl" window N=10,M=9,W=3 --cuda --expect 3 || fail "window N=10,M=9,W=3 on the GPU path"
echo "lib_gpu_emul: ok"
