# (bench/gpu) Writes wgmma_proto.cu from wgmma_proto.in.cu: python3 wgmma_proto_gen.py wgmma_proto.in.cu wgmma_proto.cu
# then on a Hopper GPU: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a wgmma_proto.cu -o proto -lcublas && ./proto
# Generates proto.cu: a hand-written wgmma GEMM prototype (cp.async into 128B-swizzled
# shared memory, wgmma from descriptors) to pin down layouts and speed before the
# compiler emits the same thing.
import sys
def wg(n, ty):
    nr = n // 2
    regs = ",".join(f"%{i}" for i in range(nr))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nr))
    return f'''static __device__ __forceinline__ void wgmma_{ty}_n{n}(float *d, unsigned long long da, unsigned long long db) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n"
    "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, %{nr}, %{nr+1}, p, 1, 1, 0, 1;\\n}}\\n"
    : {outs} : "l"(da), "l"(db) : "memory");
}}
'''
src = open(sys.argv[1]).read()
helpers = "".join(wg(n, t) for n in (128, 256) for t in ("f16",))
open(sys.argv[2], "w").write(src.replace("//@WGMMA_HELPERS@", helpers))
