// The tensor-core ceiling of mma.sync on this GPU: each warp issues independent
// m16n8k16 bf16 products (f32 accumulators) from registers, no memory traffic, so the
// figure is what the sm_80 code path (mma.sync) can reach at best.  perfc's sm_80
// GEMM and flash templates are judged against it, not against wgmma's peak.
//   nvcc -O3 -arch=sm_90 bench/gpu/proto/mma_peak.cu -o /tmp/mma_peak && /tmp/mma_peak
#include <cstdio>
#include <cuda_runtime.h>

template <int ACC>
__global__ void peak(float *out, int iters)
{
    unsigned a[4], b[2];
    for (int i = 0; i < 4; i++) a[i] = threadIdx.x * 7u + i;
    for (int i = 0; i < 2; i++) b[i] = threadIdx.x * 3u + i;
    float c[ACC][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int q = 0; q < ACC; q++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(c[q][0]), "+f"(c[q][1]), "+f"(c[q][2]), "+f"(c[q][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    float s = 0;
    for (int q = 0; q < ACC; q++) s += c[q][0] + c[q][1] + c[q][2] + c[q][3];
    if (s == 1234.5f) out[0] = s;   // keeps the products alive
}

// A warp's 64 x 64 tile fed from shared memory by ldmatrix, as the sm_80 GEMM's inner
// loop (no global memory): what ldmatrix + mma.sync reach at a given number of warps.
__global__ void smem_fed(float *out, int iters)
{
    __shared__ __align__(16) unsigned short sm[2 * 64 * 40 * 4];
    for (int i = threadIdx.x; i < 2 * 64 * 40 * 4; i += blockDim.x) sm[i] = (unsigned short)(i * 7);
    __syncthreads();
    unsigned base;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(base) : "l"(sm));
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
    const unsigned fa = base + 2u * (unsigned)(w * 64 * 40 * 0 + (lane & 15) * 40 + 8 * (lane >> 4));
    const unsigned fb = base + 2u * (unsigned)(64 * 40 * 2 + (lane & 15) * 72 + 8 * (lane >> 4));
    float c[4][8][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            unsigned a[4][4], b[8][2];
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(a[mi][0]), "=r"(a[mi][1]), "=r"(a[mi][2]), "=r"(a[mi][3]) : "r"(fa + 2u * (mi * 16 * 40 + ks * 16)));
#pragma unroll
            for (int p = 0; p < 4; p++)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[2 * p][0]), "=r"(b[2 * p][1]), "=r"(b[2 * p + 1][0]), "=r"(b[2 * p + 1][1]) : "r"(fb + 2u * (ks * 16 * 72 + p * 16)));
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
#pragma unroll
                for (int nj = 0; nj < 8; nj++)
                    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                        : "+f"(c[mi][nj][0]), "+f"(c[mi][nj][1]), "+f"(c[mi][nj][2]), "+f"(c[mi][nj][3])
                        : "r"(a[mi][0]), "r"(a[mi][1]), "r"(a[mi][2]), "r"(a[mi][3]), "r"(b[nj][0]), "r"(b[nj][1]));
        }
    }
    float s = 0;
    for (int i = 0; i < 4; i++) for (int j = 0; j < 8; j++) s += c[i][j][0] + c[i][j][3];
    if (s == 1234.5f) out[0] = s;
}

static double timed(void (*launch)(int, int, float *, int), int blocks, int warps, float *out, int iters, double flop)
{
    launch(blocks, warps, out, iters);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0);
    for (int r = 0; r < 5; r++) launch(blocks, warps, out, iters);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    return 5 * flop / (ms * 1e-3) / 1e12;
}

static void fed(int sms, int warps)
{
    float *out;
    cudaMalloc(&out, 4);
    const int iters = 2048;
    double flop = (double)sms * warps * iters * 2 * 32 * 4096.0;
    double t = timed([](int b, int w, float *o, int it) { smem_fed<<<b, 32 * w>>>(o, it); }, sms, warps, out, iters, flop);
    printf("ldmatrix + mma.sync, 64 x 64 a warp, one block of %2d warps an SM (%d a scheduler): %.0f TFLOP/s\n",
           warps, warps / 4, t);
    cudaFree(out);
}

template <int ACC>
static void one_block(int sms, int warps)
{
    float *out;
    cudaMalloc(&out, 4);
    const int iters = 8192;
    double flop = (double)sms * warps * iters * ACC * 4096.0;
    double t = timed([](int b, int w, float *o, int it) { peak<ACC><<<b, 32 * w>>>(o, it); }, sms, warps, out, iters, flop);
    printf("mma.sync from registers, one block of %2d warps an SM (%d a scheduler), %2d chains a warp: %.0f TFLOP/s\n",
           warps, warps / 4, ACC, t);
    cudaFree(out);
}

template <int ACC>
static void run(int sms, int warps)
{
    float *out;
    cudaMalloc(&out, 4);
    const int iters = 4096;
    peak<ACC><<<sms, 32 * warps>>>(out, iters);   // warm-up
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0);
    for (int r = 0; r < 5; r++) peak<ACC><<<sms * 4, 32 * warps>>>(out, iters);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    double flop = 5.0 * sms * 4 * warps * (double)iters * ACC * 2.0 * 16 * 8 * 16;
    printf("mma.sync m16n8k16 bf16->f32: %2d warps a block, %d chains a warp: %.0f TFLOP/s\n",
           warps, ACC, flop / (ms * 1e-3) / 1e12);
    cudaFree(out);
}

int main()
{
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    int sms = p.multiProcessorCount;
    run<4>(sms, 4);
    run<8>(sms, 4);
    run<8>(sms, 8);
    run<16>(sms, 8);
    run<8>(sms, 16);
    one_block<8>(sms, 4);
    one_block<32>(sms, 4);
    one_block<8>(sms, 8);
    one_block<32>(sms, 8);
    one_block<8>(sms, 16);
    fed(sms, 4);
    fed(sms, 8);
    fed(sms, 12);
    fed(sms, 16);
    return 0;
}
