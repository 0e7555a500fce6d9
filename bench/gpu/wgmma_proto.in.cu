/* A hand-written wgmma GEMM (cp.async into 128-byte-swizzled shared memory, wgmma.mma_async from
 * descriptors), written to pin down the descriptor fields and the speed before codegen/cuda emitted the
 * same structure: it runs variants (N 128/256, stages, one group in flight or not, the two LBO/SBO
 * assignments for the N-major B operand) against cuBLAS on the same inputs.  Not part of the build;
 * see wgmma_proto_gen.py for how to run it and docs/benchmarks.md for what it measured. */
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cmath>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

static __device__ __forceinline__ unsigned saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void cp16(unsigned s, const void *g) { asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(g) : "memory"); }
static __device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
static __device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
static __device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
static __device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
static __device__ __forceinline__ unsigned long long mkdesc(unsigned sa, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((sa & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
//@WGMMA_HELPERS@

template <int BN, int NWG, int S, int D, int BSW>
__global__ void __launch_bounds__(NWG * 128) gemm_wg(const __half *A, const __half *B, float *C, int M, int N, int K)
{
  constexpr int BM = 64 * NWG, BK = 64, T = NWG * 128;
  constexpr int ABYTES = BM * 128, BBYTES = BN * 128, SBYTES = ABYTES + BBYTES;
  extern __shared__ char smem_raw[];
  unsigned base = saddr(smem_raw);
  base = (base + 1023) & ~1023u;
  const int tid = threadIdx.x, wgi = tid / 128, t = tid % 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; i++) acc[i] = 0.f;
  const int KT = K / BK;
  auto load = [&](int kt) {
    if (kt < KT) {
      unsigned sa = base + (kt % S) * SBYTES, sb = sa + ABYTES;
      const int k0 = kt * BK;
#pragma unroll
      for (int it = 0; it < BM * 8 / T; it++) {
        int q = it * T + tid, r = q >> 3, c = q & 7;
        cp16(sa + r * 128 + ((c ^ (r & 7)) << 4), A + (size_t)(m0 + r) * K + k0 + c * 8);
      }
#pragma unroll
      for (int it = 0; it < BK * BN / 8 / T; it++) {
        int q = it * T + tid, r = q / (BN / 8), cn = q % (BN / 8), n = cn * 8;
        cp16(sb + (n >> 6) * (BK * 128) + r * 128 + ((((n & 63) >> 3) ^ (r & 7)) << 4), B + (size_t)(k0 + r) * N + n0 + n);
      }
    }
    cp_commit();
  };
#pragma unroll
  for (int s = 0; s < S - 1 - D; s++) load(s);
  for (int kt = 0; kt < KT; kt++) {
    cp_wait<S - 2 - D>();
    proxy_fence();
    __syncthreads();
    load(kt + S - 1 - D);
    unsigned sa = base + (kt % S) * SBYTES, sb = sa + ABYTES;
    wg_fence();
#pragma unroll
    for (int ks = 0; ks < BK / 16; ks++) {
      unsigned long long da = mkdesc(sa + wgi * 64 * 128 + ks * 32, 16, 1024);
      unsigned long long db = BSW ? mkdesc(sb + ks * 2048, 1024, BK * 128) : mkdesc(sb + ks * 2048, BK * 128, 1024);
      if (BN == 256) wgmma_f16_n256(acc, da, db); else wgmma_f16_n128(acc, da, db);
    }
    wg_commit();
    wg_wait<D>();
  }
  wg_wait<0>();
#pragma unroll
  for (int i = 0; i < BN / 2; i++) asm volatile("" : "+f"(acc[i]) :: "memory");
  const int w = t / 32, l = t % 32;
  const int r = m0 + wgi * 64 + w * 16 + l / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; j++) {
    int c = n0 + j * 8 + (l % 4) * 2;
    *(float2 *)&C[(size_t)r * N + c] = make_float2(acc[j * 4 + 0], acc[j * 4 + 1]);
    *(float2 *)&C[(size_t)(r + 8) * N + c] = make_float2(acc[j * 4 + 2], acc[j * 4 + 3]);
  }
}

template <int BN, int NWG, int S, int D, int BSW>
static void run(const char *name, const __half *dA, const __half *dB, float *dC, const float *ref, int M, int N, int K, float tcub)
{
  constexpr int BM = 64 * NWG;
  size_t smem = (size_t)S * (BM + BN) * 128 + 1024;
  auto kf = gemm_wg<BN, NWG, S, D, BSW>;
  if (cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) { printf("%s: smem %zu refused\n", name, smem); cudaGetLastError(); return; }
  dim3 grid(N / BN, M / BM), block(NWG * 128);
  CK(cudaMemset(dC, 0xff, (size_t)M * N * 4));
  kf<<<grid, block, smem>>>(dA, dB, dC, M, N, K);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("%s: launch failed: %s\n", name, cudaGetErrorString(e)); exit(1); }
  std::vector<float> h((size_t)M * N), r((size_t)M * N);
  CK(cudaMemcpy(h.data(), dC, h.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r.data(), ref, r.size() * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0; size_t bad = 0, firstbad = (size_t)-1;
  for (size_t i = 0; i < h.size(); i++) { double d = (double)h[i] - r[i]; if (!(fabs(d) <= 1e-2 * (1 + fabs(r[i])))) { bad++; if (firstbad == (size_t)-1) firstbad = i; } num += d * d; den += (double)r[i] * r[i]; }
  double rel = sqrt(num / den);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) kf<<<grid, block, smem>>>(dA, dB, dC, M, N, K);
  int reps = 50;
  cudaEventRecord(a);
  for (int i = 0; i < reps; i++) kf<<<grid, block, smem>>>(dA, dB, dC, M, N, K);
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b); ms /= reps;
  printf("%-28s rel %.2e bad %zu (first %zd: got %g want %g)  %.4f ms  %.0f TFLOP/s  ratio %.3f\n", name, rel, bad,
         (ssize_t)firstbad, firstbad == (size_t)-1 ? 0.0 : h[firstbad], firstbad == (size_t)-1 ? 0.0 : r[firstbad], ms,
         2.0 * M * N * K / ms / 1e9, tcub / ms);
}

int main(int argc, char **argv)
{
  int M = 4096, N = 4096, K = 4096;
  if (argc > 1) M = N = K = atoi(argv[1]);
  std::vector<__half> hA((size_t)M * K), hB((size_t)K * N);
  srand(1);
  for (auto &x : hA) x = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  for (auto &x : hB) x = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  __half *dA, *dB; float *dC, *dR;
  CK(cudaMalloc(&dA, hA.size() * 2)); CK(cudaMalloc(&dB, hB.size() * 2));
  CK(cudaMalloc(&dC, (size_t)M * N * 4)); CK(cudaMalloc(&dR, (size_t)M * N * 4));
  CK(cudaMemcpy(dA, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
  cublasHandle_t h; cublasCreate(&h);
  float one = 1, zero = 0;
  auto cub = [&]() { return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, dB, CUDA_R_16F, N, dA, CUDA_R_16F, K, &zero, dR, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
  if (cub() != CUBLAS_STATUS_SUCCESS) { printf("cublas failed\n"); return 1; }
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) cub();
  cudaEventRecord(a); for (int i = 0; i < 50; i++) cub(); cudaEventRecord(b); cudaEventSynchronize(b);
  float tc; cudaEventElapsedTime(&tc, a, b); tc /= 50;
  printf("cuBLAS f16->f32 %d^3: %.4f ms  %.0f TFLOP/s\n", M, tc, 2.0 * M * N * K / tc / 1e9);
  run<128, 2, 4, 0, 0>("BN128 WG2 S4 D0 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  run<128, 2, 4, 0, 1>("BN128 WG2 S4 D0 lbo=1024", dA, dB, dC, dR, M, N, K, tc);
  run<256, 2, 4, 0, 0>("BN256 WG2 S4 D0 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  run<256, 2, 4, 0, 1>("BN256 WG2 S4 D0 lbo=1024", dA, dB, dC, dR, M, N, K, tc);
  run<256, 2, 4, 1, 0>("BN256 WG2 S4 D1 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  run<256, 2, 3, 0, 0>("BN256 WG2 S3 D0 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  run<128, 2, 3, 0, 0>("BN128 WG2 S3 D0 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  run<128, 2, 4, 1, 0>("BN128 WG2 S4 D1 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  run<128, 2, 6, 1, 0>("BN128 WG2 S6 D1 lbo=panel", dA, dB, dC, dR, M, N, K, tc);
  return 0;
}
