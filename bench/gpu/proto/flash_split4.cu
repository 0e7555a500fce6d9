/* perfc 0.1.0: CUDA C for kernel attention (B=4, H=16, S=2048, D=128), target sm_90a.
 * Arguments of every launch: Q K V O tensor-map(V) tensor-map(K). */
typedef int idx_t;
/* f16 and bf16 live in memory as their 16-bit patterns and are computed in f32. */
typedef unsigned short pf_half;
typedef unsigned short pf_bf16;
static __device__ __forceinline__ float pf_h2f(pf_half h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ pf_half pf_f2h(float f) { pf_half h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float pf_b2f(pf_bf16 b) { return __uint_as_float((unsigned)b << 16); }
static __device__ __forceinline__ pf_bf16 pf_f2b(float f) { pf_bf16 b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b; }
/* The IR's integer division and modulo round toward minus infinity. */
static __device__ __forceinline__ idx_t pf_fdiv(idx_t a, idx_t b) { idx_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static __device__ __forceinline__ idx_t pf_fmod(idx_t a, idx_t b) { idx_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static __device__ __forceinline__ float pf_fmodf(float a, float b) { return a - b * floorf(a / b); }
static __device__ __forceinline__ double pf_fmodd(double a, double b) { return a - b * floor(a / b); }
static __device__ __forceinline__ bool pf_in(idx_t i, idx_t n) { return i >= 0 && i < n; }
static __device__ __forceinline__ idx_t pf_clamp(idx_t i, idx_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }
static __device__ __forceinline__ float pf_pickf(bool c, float v, float d) { return c ? v : d; }
static __device__ __forceinline__ double pf_pickd(bool c, double v, double d) { return c ? v : d; }
/* exp where the results are 16-bit (Kernel.fast_exp): one ex2.approx, results below 2^-126 flushed to 0 */
static __device__ __forceinline__ float pf_fexp(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f)); return y; }
static __device__ __forceinline__ float pf_fexpd(float a, float b) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(fmaf(a, 1.4426950408889634f, -b * 1.4426950408889634f))); return y; }
/* Tensor cores (sm_80+): ldmatrix reads 8 x 8 b16 matrices whose rows the lanes name (16 bytes each),
 * mma.sync multiplies one warp's fragments.  The loads clobber memory so no shared store moves past them. */
static __device__ __forceinline__ unsigned pf_saddr(const void *p) { unsigned a; asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p)); return a; }
static __device__ __forceinline__ void pf_ldsm_x4(unsigned *r, unsigned a) { asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory"); }
static __device__ __forceinline__ void pf_ldsm_x4_t(unsigned *r, unsigned a) { asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory"); }
static __device__ __forceinline__ void pf_ldsm_x2(unsigned *r, unsigned a) { asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(a) : "memory"); }
static __device__ __forceinline__ void pf_ldsm_x2_t(unsigned *r, unsigned a) { asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(a) : "memory"); }
/* Asynchronous copies (sm_80+) for software pipelines: global -> shared without registers, in commit
 * groups; wait_group N returns when at most N of this thread's groups are pending. */
static __device__ __forceinline__ void pf_cp_async16(void *s, const void *g) { asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(pf_saddr(s)), "l"(g) : "memory"); }
static __device__ __forceinline__ void pf_cp_async8(void *s, const void *g) { asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(pf_saddr(s)), "l"(g) : "memory"); }
static __device__ __forceinline__ void pf_cp_async16z(void *s, const void *g, bool ok) { asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(pf_saddr(s)), "l"(g), "r"(ok ? 16 : 0) : "memory"); }
static __device__ __forceinline__ void pf_cp_async8z(void *s, const void *g, bool ok) { asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(pf_saddr(s)), "l"(g), "r"(ok ? 8 : 0) : "memory"); }
static __device__ __forceinline__ void pf_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void pf_cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
static __device__ __forceinline__ unsigned pf_pk16(unsigned short lo, unsigned short hi) { return (unsigned)lo | ((unsigned)hi << 16); }
static __device__ __forceinline__ void pf_mma_f16(float *c, const unsigned *a, const unsigned *b) { asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])); }
static __device__ __forceinline__ void pf_mma_bf16(float *c, const unsigned *a, const unsigned *b) { asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])); }
/* Bulk tensor copies (TMA, sm_90+): one thread copies a box of a global tensor into shared memory with
 * the 128-byte swizzle, zeros outside the tensor; an mbarrier counts the bytes in.  A stage's barrier
 * completes one phase per fill: waiting on the parity of the fill number returns once it has landed. */
struct __align__(64) pf_tmap { unsigned long long w[16]; };
static __device__ __forceinline__ void pf_mbar_init(unsigned long long *b, unsigned n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(pf_saddr(b)), "r"(n) : "memory"); }
static __device__ __forceinline__ void pf_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
static __device__ __forceinline__ void pf_mbar_expect(unsigned long long *b, unsigned bytes) { asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(pf_saddr(b)), "r"(bytes) : "memory"); }
static __device__ __forceinline__ void pf_mbar_wait(unsigned long long *b, unsigned parity) {
    unsigned done;
    do asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(pf_saddr(b)), "r"(parity) : "memory");
    while (!done);
}
static __device__ __forceinline__ void pf_tma2(void *d, const pf_tmap *m, int c0, int c1, unsigned long long *b) { asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" :: "r"(pf_saddr(d)), "l"(m), "r"(c0), "r"(c1), "r"(pf_saddr(b)) : "memory"); }
static __device__ __forceinline__ void pf_tma3(void *d, const pf_tmap *m, int c0, int c1, int c2, unsigned long long *b) { asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" :: "r"(pf_saddr(d)), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(pf_saddr(b)) : "memory"); }
static __device__ __forceinline__ void pf_tma4(void *d, const pf_tmap *m, int c0, int c1, int c2, int c3, unsigned long long *b) { asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];" :: "r"(pf_saddr(d)), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(pf_saddr(b)) : "memory"); }
static __device__ __forceinline__ void pf_tma5(void *d, const pf_tmap *m, int c0, int c1, int c2, int c3, int c4, unsigned long long *b) { asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" :: "r"(pf_saddr(d)), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(pf_saddr(b)) : "memory"); }
/* Block-wide reductions (a thread.x loop whose statement reduces into one element): each thread's partial
 * through a warp shuffle tree, the warps' results through shared memory, every thread gets the total.
 * OP: 0 sum, 1 product, 2 max, 3 min.  The block is 1-D with a multiple of 32 threads. */
template <int OP> static __device__ __forceinline__ float pf_rop(float a, float b) { return OP == 0 ? a + b : OP == 1 ? a * b : OP == 2 ? fmaxf(a, b) : fminf(a, b); }
template <int OP> static __device__ __forceinline__ float pf_block_reduce(float v, float id) {
    __shared__ float pf_red_sm[32];
    for (int o = 16; o > 0; o >>= 1) v = pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int w = (int)threadIdx.x >> 5, l = (int)threadIdx.x & 31, nw = ((int)blockDim.x + 31) >> 5;
    __syncthreads();   /* every reader of the previous reduction's partials is done */
    if (l == 0) pf_red_sm[w] = v;
    __syncthreads();
    v = l < nw ? pf_red_sm[l] : id;
    for (int o = 16; o > 0; o >>= 1) v = pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* Quad reductions: the four lanes holding one row of an mma accumulator (lane / 4 alike) combine. */
template <int OP> static __device__ __forceinline__ float pf_quad(float v) {
    v = pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, 2));
}


/* Hopper warpgroup products (sm_90a): wgmma.mma_async reads both operands from shared memory through
 * 64-bit matrix descriptors (start >> 4, leading and stride byte offsets >> 4, 128-byte swizzle in
 * bits 62-63) and accumulates into registers asynchronously: fence before, commit, wait after.  Shared
 * memory written by ordinary stores or cp.async reaches it only after a proxy fence. */
static __device__ __forceinline__ unsigned long long pf_wg_desc(unsigned a, unsigned lbo, unsigned sbo) { return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) | ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62); }
static __device__ __forceinline__ void pf_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
static __device__ __forceinline__ void pf_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void pf_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
static __device__ __forceinline__ void pf_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* An empty asm that reads and writes every accumulator register: keeps the compiler from moving their
 * other uses across the fence or the wait. */
template <int N> static __device__ __forceinline__ void pf_wg_keep(float *d) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}
/* Byte offset -> its place in the 128-byte swizzle (bits 4-6 xor bits 7-9). */
static __device__ __forceinline__ unsigned pf_swz(unsigned o) { return o ^ ((o >> 3) & 0x70u); }
static __device__ __forceinline__ void pf_wgmma_bf16_n64_00(float *d, unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b) : "memory");
}
static __device__ __forceinline__ void pf_wgmma_bf16_n128_r1(float *d, const unsigned *a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b) : "memory");
}

extern "C" __global__ void __launch_bounds__(256) attention_0(const pf_bf16 *__restrict__ Q, const pf_bf16 *__restrict__ K, const pf_bf16 *__restrict__ V, pf_bf16 *__restrict__ O, const __grid_constant__ pf_tmap pf_tm0, const __grid_constant__ pf_tmap pf_tm1)
{
    constexpr idx_t B = 4;
    constexpr idx_t H = 16;
    constexpr idx_t S = 2048;
    constexpr idx_t D = 128;
    extern __shared__ __align__(1024) unsigned char pf_smem_raw[];
    unsigned char *pf_smem = pf_smem_raw + ((1024u - (pf_saddr(pf_smem_raw) & 1023u)) & 1023u);
    /* f_Qs: bf16[128][128] staged in shared memory, bytes 0..32768, in 64-element panels with the 128-byte swizzle wgmma reads (swz_elem) */
    unsigned char *f_Qs = pf_smem + 0;
    /* f_Ks: bf16[2][64][128] staged in shared memory, bytes 32768..65536, in 64-element panels with the 128-byte swizzle wgmma reads (swz_elem) */
    unsigned char *f_Ks = pf_smem + 32768;
    /* f_Vs: bf16[2][64][128] staged in shared memory, bytes 65536..98304, in 64-element panels with the 128-byte swizzle wgmma reads (swz_elem) */
    unsigned char *f_Vs = pf_smem + 65536;
    /* f_sacc: f32[64][64] per warpgroup, as wgmma accumulator fragments: [row / 64][column / 8][4] per thread */
    float f_sacc[1][8][4];
    /* f_pr: bf16[64][64] per warpgroup, as wgmma accumulator fragments: [row / 64][column / 8][4] per thread */
    pf_bf16 f_pr[1][8][4];
    /* f_mw: f32[64] per warpgroup, one value per accumulator row: row r of each 64 in warp (r % 64) / 16, in register r / 8 of the lanes with lane / 4 == r % 8 */
    float f_mw[8];
    /* f_lw: f32[64] per warpgroup, one value per accumulator row: row r of each 64 in warp (r % 64) / 16, in register r / 8 of the lanes with lane / 4 == r % 8 */
    float f_lw[8];
    /* f_mc: f32[64] per warpgroup, one value per accumulator row: row r of each 64 in warp (r % 64) / 16, in register r / 8 of the lanes with lane / 4 == r % 8 */
    float f_mc[8];
    /* f_oacc: f32[64][128] per warpgroup, as wgmma accumulator fragments: [row / 64][column / 8][4] per thread */
    float f_oacc[1][16][4];
    const int pf_lane = (int)threadIdx.x & 31;   /* block.x is one warpgroup: wgmma triples run on it */
    const int pf_wrow = ((int)threadIdx.x >> 5) * 16;   /* this warp's 16 rows of every 64 */
    const idx_t f_io = (idx_t)blockIdx.x;   /* block.x */
    const idx_t pfVO_dh = (idx_t)blockIdx.y;   /* block.y */
    const idx_t pfVO_db = (idx_t)blockIdx.z;   /* block.z */
    #pragma unroll
    for (idx_t f_Qs_c2f_Qs_c3oo = 0; f_Qs_c2f_Qs_c3oo < 8; ++f_Qs_c2f_Qs_c3oo) {
        {   /* f_Qs_c2f_Qs_c3oio: thread.y */
            const idx_t f_Qs_c2f_Qs_c3oio = (idx_t)threadIdx.y;
            {   /* f_Qs_c2f_Qs_c3oii: thread.x */
                const idx_t f_Qs_c2f_Qs_c3oii = (idx_t)threadIdx.x;
                /* f_Qs_c3i: 8 bf16 elements copied as one 128-bit access */
                *reinterpret_cast<uint4 *>(&(*reinterpret_cast<pf_bf16 *>(f_Qs + pf_swz((((((0) * 2 + ((((((f_Qs_c2f_Qs_c3oo * 256) + ((f_Qs_c2f_Qs_c3oio * 128) + f_Qs_c2f_Qs_c3oii)) & 15)) * 8) >> 6)) * 128 + ((((f_Qs_c2f_Qs_c3oo * 256) + ((f_Qs_c2f_Qs_c3oio * 128) + f_Qs_c2f_Qs_c3oii)) >> 4))) << 6) + ((((((f_Qs_c2f_Qs_c3oo * 256) + ((f_Qs_c2f_Qs_c3oio * 128) + f_Qs_c2f_Qs_c3oii)) & 15)) * 8) & 63)) * 2)))) = *reinterpret_cast<const uint4 *>(&Q[((pfVO_db * H + pfVO_dh) * S + ((f_io * 128) + ((((f_Qs_c2f_Qs_c3oo * 256) + ((f_Qs_c2f_Qs_c3oio * 128) + f_Qs_c2f_Qs_c3oii)) >> 4)))) * D + (((((f_Qs_c2f_Qs_c3oo * 256) + ((f_Qs_c2f_Qs_c3oio * 128) + f_Qs_c2f_Qs_c3oii)) & 15)) * 8)]);
            }
        }
    }
    {   /* f_iw: thread.y */
        const idx_t f_iw = (idx_t)threadIdx.y;
        #pragma unroll
        for (idx_t pf_rf_f_ir = 0; pf_rf_f_ir < 64; pf_rf_f_ir += 64) {   /* f_ir: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
            #pragma unroll
            for (idx_t pf_rh_f_ir = 0; pf_rh_f_ir < 16; pf_rh_f_ir += 8) {
                const idx_t f_ir = pf_rf_f_ir + pf_rh_f_ir + pf_wrow + (pf_lane >> 2);
                f_mw[(pf_rf_f_ir + pf_rh_f_ir) >> 3] = (-__int_as_float(0x7f800000));
            }
        }
        #pragma unroll
        for (idx_t pf_rf_f_ir1 = 0; pf_rf_f_ir1 < 64; pf_rf_f_ir1 += 64) {   /* f_ir1: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
            #pragma unroll
            for (idx_t pf_rh_f_ir1 = 0; pf_rh_f_ir1 < 16; pf_rh_f_ir1 += 8) {
                const idx_t f_ir1 = pf_rf_f_ir1 + pf_rh_f_ir1 + pf_wrow + (pf_lane >> 2);
                f_lw[(pf_rf_f_ir1 + pf_rh_f_ir1) >> 3] = 0.0f;
            }
        }
        #pragma unroll
        for (idx_t pf_rf_f_ir2 = 0; pf_rf_f_ir2 < 64; pf_rf_f_ir2 += 64) {   /* f_ir2: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
            #pragma unroll
            for (idx_t pf_rh_f_ir2 = 0; pf_rh_f_ir2 < 16; pf_rh_f_ir2 += 8) {
                const idx_t f_ir2 = pf_rf_f_ir2 + pf_rh_f_ir2 + pf_wrow + (pf_lane >> 2);
                #pragma unroll
                for (idx_t pf_cf_pfVO_dd_uinit = 0; pf_cf_pfVO_dd_uinit < 128; pf_cf_pfVO_dd_uinit += 8) {   /* pfVO_dd_uinit: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                    #pragma unroll
                    for (idx_t pf_ch_pfVO_dd_uinit = 0; pf_ch_pfVO_dd_uinit < 2; ++pf_ch_pfVO_dd_uinit) {
                        const idx_t pfVO_dd_uinit = pf_cf_pfVO_dd_uinit + ((pf_lane & 3) << 1) + pf_ch_pfVO_dd_uinit;
                        f_oacc[(pf_rf_f_ir2 + pf_rh_f_ir2) >> 6][(pf_cf_pfVO_dd_uinit + pf_ch_pfVO_dd_uinit) >> 3][(((pf_rf_f_ir2 + pf_rh_f_ir2) >> 3) & 1) * 2 + ((pf_cf_pfVO_dd_uinit + pf_ch_pfVO_dd_uinit) & 1)] = 0.0f;
                    }
                }
            }
        }
    }
    pf_proxy_fence();   /* shared stores reach wgmma's proxy */
    __syncthreads();
    {   /* pfVO_djo: 2-stage pipeline of bulk tensor copies; those of iteration pfVO_djo + 1 are in flight while pfVO_djo computes */
        __shared__ __align__(8) unsigned long long pf_full_pfVO_djo[2];   /* stage s has landed */
        const bool pf_issuer = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
        if (pf_issuer) {
            for (int s = 0; s < 2; ++s) pf_mbar_init(&pf_full_pfVO_djo[s], 1);
            pf_mbar_init_fence();
        }
        __syncthreads();   /* the barriers are ready */
        if (pf_issuer) {
            #pragma unroll
            for (idx_t pf_pre = 0; pf_pre < 1; ++pf_pre) {
                const idx_t pfVO_djo = 0 + pf_pre;
                if (pfVO_djo < 32) {
                    pf_mbar_expect(&pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u], 32768u);
                    /* f_Vs[(idx_t)((unsigned)pfVO_djo % 2u)] <- V: 2 boxes of 64 x 64 */
                    pf_tma4(f_Vs + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 0) * 8192, &pf_tm0, (int)(0), (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                    pf_tma4(f_Vs + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 1) * 8192, &pf_tm0, (int)(0) + 64, (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                    /* f_Ks[(idx_t)((unsigned)pfVO_djo % 2u)] <- K: 2 boxes of 64 x 64 */
                    pf_tma4(f_Ks + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 0) * 8192, &pf_tm1, (int)(0), (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                    pf_tma4(f_Ks + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 1) * 8192, &pf_tm1, (int)(0) + 64, (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                }
            }
        }
        for (idx_t pfVO_djo = 0; pfVO_djo < 32; ++pfVO_djo) {
            pf_mbar_wait(&pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u], (unsigned)((pfVO_djo - 0) / 2) & 1u);   /* stage pfVO_djo % 2 has landed */
            __syncthreads();   /* and everyone is done with stage (pfVO_djo - 1) % 2 */
            if (pf_issuer && pfVO_djo + 1 < 32) {
                const idx_t pf_next = pfVO_djo + 1;
                {
                    const idx_t pfVO_djo = pf_next;
                    pf_mbar_expect(&pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u], 32768u);
                    /* f_Vs[(idx_t)((unsigned)pfVO_djo % 2u)] <- V: 2 boxes of 64 x 64 */
                    pf_tma4(f_Vs + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 0) * 8192, &pf_tm0, (int)(0), (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                    pf_tma4(f_Vs + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 1) * 8192, &pf_tm0, (int)(0) + 64, (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                    /* f_Ks[(idx_t)((unsigned)pfVO_djo % 2u)] <- K: 2 boxes of 64 x 64 */
                    pf_tma4(f_Ks + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 0) * 8192, &pf_tm1, (int)(0), (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                    pf_tma4(f_Ks + (((idx_t)((unsigned)pfVO_djo % 2u)) * 2 + 1) * 8192, &pf_tm1, (int)(0) + 64, (int)(pfVO_djo * 64), (int)(pfVO_dh), (int)(pfVO_db), &pf_full_pfVO_djo[(unsigned)pfVO_djo % 2u]);
                }
            }
            {   /* f_w: thread.y */
                const idx_t f_w = (idx_t)threadIdx.y;
                #pragma unroll
                for (idx_t pf_rf_f_r = 0; pf_rf_f_r < 64; pf_rf_f_r += 64) {   /* f_r: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r = 0; pf_rh_f_r < 16; pf_rh_f_r += 8) {
                        const idx_t f_r = pf_rf_f_r + pf_rh_f_r + pf_wrow + (pf_lane >> 2);
                        #pragma unroll
                        for (idx_t pf_cf_pfVs_dji = 0; pf_cf_pfVs_dji < 64; pf_cf_pfVs_dji += 8) {   /* pfVs_dji: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                            #pragma unroll
                            for (idx_t pf_ch_pfVs_dji = 0; pf_ch_pfVs_dji < 2; ++pf_ch_pfVs_dji) {
                                const idx_t pfVs_dji = pf_cf_pfVs_dji + ((pf_lane & 3) << 1) + pf_ch_pfVs_dji;
                                f_sacc[(pf_rf_f_r + pf_rh_f_r) >> 6][(pf_cf_pfVs_dji + pf_ch_pfVs_dji) >> 3][(((pf_rf_f_r + pf_rh_f_r) >> 3) & 1) * 2 + ((pf_cf_pfVs_dji + pf_ch_pfVs_dji) & 1)] = 0.0f;
                            }
                        }
                    }
                }
                {   /* wgmma pfVs_ddo x f_r1: 8 warpgroup products m64n64k16 (bf16 in, f32 accumulate), operands from shared memory */
                    pf_wg_keep<32>(&f_sacc[0][0][0]);
                    pf_wg_fence();
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (0 >> 6)) * 128 + (f_w * 64)) << 6) + (0 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (0 >> 6)) * 64 + 0) << 6) + (0 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (16 >> 6)) * 128 + (f_w * 64)) << 6) + (16 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (16 >> 6)) * 64 + 0) << 6) + (16 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (32 >> 6)) * 128 + (f_w * 64)) << 6) + (32 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (32 >> 6)) * 64 + 0) << 6) + (32 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (48 >> 6)) * 128 + (f_w * 64)) << 6) + (48 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (48 >> 6)) * 64 + 0) << 6) + (48 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (64 >> 6)) * 128 + (f_w * 64)) << 6) + (64 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (64 >> 6)) * 64 + 0) << 6) + (64 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (80 >> 6)) * 128 + (f_w * 64)) << 6) + (80 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (80 >> 6)) * 64 + 0) << 6) + (80 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (96 >> 6)) * 128 + (f_w * 64)) << 6) + (96 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (96 >> 6)) * 64 + 0) << 6) + (96 & 63)) * 2), 16, 1024));
                    pf_wgmma_bf16_n64_00(&f_sacc[0][0][0], pf_wg_desc(pf_saddr(f_Qs) + (unsigned)((((((0) * 2 + (112 >> 6)) * 128 + (f_w * 64)) << 6) + (112 & 63)) * 2), 16, 1024), pf_wg_desc(pf_saddr(f_Ks) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (112 >> 6)) * 64 + 0) << 6) + (112 & 63)) * 2), 16, 1024));
                    pf_wg_commit();
                    pf_wg_wait<0>();
                    pf_wg_keep<32>(&f_sacc[0][0][0]);
                }
                #pragma unroll
                for (idx_t pf_rf_f_r2 = 0; pf_rf_f_r2 < 64; pf_rf_f_r2 += 64) {   /* f_r2: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r2 = 0; pf_rh_f_r2 < 16; pf_rh_f_r2 += 8) {
                        const idx_t f_r2 = pf_rf_f_r2 + pf_rh_f_r2 + pf_wrow + (pf_lane >> 2);
                        #pragma unroll
                        for (idx_t pf_cf_pfVs_dji2 = 0; pf_cf_pfVs_dji2 < 64; pf_cf_pfVs_dji2 += 8) {   /* pfVs_dji2: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                            #pragma unroll
                            for (idx_t pf_ch_pfVs_dji2 = 0; pf_ch_pfVs_dji2 < 2; ++pf_ch_pfVs_dji2) {
                                const idx_t pfVs_dji2 = pf_cf_pfVs_dji2 + ((pf_lane & 3) << 1) + pf_ch_pfVs_dji2;
                                f_sacc[(pf_rf_f_r2 + pf_rh_f_r2) >> 6][(pf_cf_pfVs_dji2 + pf_ch_pfVs_dji2) >> 3][(((pf_rf_f_r2 + pf_rh_f_r2) >> 3) & 1) * 2 + ((pf_cf_pfVs_dji2 + pf_ch_pfVs_dji2) & 1)] *= rsqrtf((float)D);
                            }
                        }
                    }
                }
                #pragma unroll
                for (idx_t pf_rf_f_r3 = 0; pf_rf_f_r3 < 64; pf_rf_f_r3 += 64) {   /* f_r3: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r3 = 0; pf_rh_f_r3 < 16; pf_rh_f_r3 += 8) {
                        const idx_t f_r3 = pf_rf_f_r3 + pf_rh_f_r3 + pf_wrow + (pf_lane >> 2);
                        f_mc[(pf_rf_f_r3 + pf_rh_f_r3) >> 3] = f_mw[(pf_rf_f_r3 + pf_rh_f_r3) >> 3];
                    }
                }
                #pragma unroll
                for (idx_t pf_rf_f_r4 = 0; pf_rf_f_r4 < 64; pf_rf_f_r4 += 64) {   /* f_r4: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r4 = 0; pf_rh_f_r4 < 16; pf_rh_f_r4 += 8) {
                        const idx_t f_r4 = pf_rf_f_r4 + pf_rh_f_r4 + pf_wrow + (pf_lane >> 2);
                        float pf_lq0 = (-__int_as_float(0x7f800000)), pf_lq0_1 = (-__int_as_float(0x7f800000)), pf_lq0_2 = (-__int_as_float(0x7f800000)), pf_lq0_3 = (-__int_as_float(0x7f800000));
                        #pragma unroll
                        for (idx_t pf_cf_pfVm_dji = 0; pf_cf_pfVm_dji < 64; pf_cf_pfVm_dji += 8) {   /* pfVm_dji: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                            #pragma unroll
                            for (idx_t pf_ch_pfVm_dji = 0; pf_ch_pfVm_dji < 2; ++pf_ch_pfVm_dji) {
                                const idx_t pfVm_dji = pf_cf_pfVm_dji + ((pf_lane & 3) << 1) + pf_ch_pfVm_dji;
                                switch ((pf_cf_pfVm_dji >> 3) % 4) { case 0: pf_lq0 = pf_rop<2>(pf_lq0, f_sacc[(pf_rf_f_r4 + pf_rh_f_r4) >> 6][(pf_cf_pfVm_dji + pf_ch_pfVm_dji) >> 3][(((pf_rf_f_r4 + pf_rh_f_r4) >> 3) & 1) * 2 + ((pf_cf_pfVm_dji + pf_ch_pfVm_dji) & 1)]); break; case 1: pf_lq0_1 = pf_rop<2>(pf_lq0_1, f_sacc[(pf_rf_f_r4 + pf_rh_f_r4) >> 6][(pf_cf_pfVm_dji + pf_ch_pfVm_dji) >> 3][(((pf_rf_f_r4 + pf_rh_f_r4) >> 3) & 1) * 2 + ((pf_cf_pfVm_dji + pf_ch_pfVm_dji) & 1)]); break; case 2: pf_lq0_2 = pf_rop<2>(pf_lq0_2, f_sacc[(pf_rf_f_r4 + pf_rh_f_r4) >> 6][(pf_cf_pfVm_dji + pf_ch_pfVm_dji) >> 3][(((pf_rf_f_r4 + pf_rh_f_r4) >> 3) & 1) * 2 + ((pf_cf_pfVm_dji + pf_ch_pfVm_dji) & 1)]); break; case 3: pf_lq0_3 = pf_rop<2>(pf_lq0_3, f_sacc[(pf_rf_f_r4 + pf_rh_f_r4) >> 6][(pf_cf_pfVm_dji + pf_ch_pfVm_dji) >> 3][(((pf_rf_f_r4 + pf_rh_f_r4) >> 3) & 1) * 2 + ((pf_cf_pfVm_dji + pf_ch_pfVm_dji) & 1)]); break; }
                            }
                        }
                        pf_lq0 = pf_rop<2>(pf_lq0, pf_lq0_1);
                        pf_lq0 = pf_rop<2>(pf_lq0, pf_lq0_2);
                        pf_lq0 = pf_rop<2>(pf_lq0, pf_lq0_3);
                        f_mw[(pf_rf_f_r4 + pf_rh_f_r4) >> 3] = pf_rop<2>(f_mw[(pf_rf_f_r4 + pf_rh_f_r4) >> 3], pf_quad<2>(pf_lq0));
                    }
                }
                #pragma unroll
                for (idx_t pf_rf_f_r5 = 0; pf_rf_f_r5 < 64; pf_rf_f_r5 += 64) {   /* f_r5: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r5 = 0; pf_rh_f_r5 < 16; pf_rh_f_r5 += 8) {
                        const idx_t f_r5 = pf_rf_f_r5 + pf_rh_f_r5 + pf_wrow + (pf_lane >> 2);
                        f_mc[(pf_rf_f_r5 + pf_rh_f_r5) >> 3] = pf_fexpd(f_mc[(pf_rf_f_r5 + pf_rh_f_r5) >> 3], ((f_mw[(pf_rf_f_r5 + pf_rh_f_r5) >> 3] == (-__int_as_float(0x7f800000))) ? 0.0f : f_mw[(pf_rf_f_r5 + pf_rh_f_r5) >> 3]));
                    }
                }
                #pragma unroll
                for (idx_t pf_rf_f_r6 = 0; pf_rf_f_r6 < 64; pf_rf_f_r6 += 64) {   /* f_r6: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r6 = 0; pf_rh_f_r6 < 16; pf_rh_f_r6 += 8) {
                        const idx_t f_r6 = pf_rf_f_r6 + pf_rh_f_r6 + pf_wrow + (pf_lane >> 2);
                        f_lw[(pf_rf_f_r6 + pf_rh_f_r6) >> 3] *= f_mc[(pf_rf_f_r6 + pf_rh_f_r6) >> 3];
                    }
                }
                #pragma unroll
                for (idx_t pf_rf_f_r7 = 0; pf_rf_f_r7 < 64; pf_rf_f_r7 += 64) {   /* f_r7: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r7 = 0; pf_rh_f_r7 < 16; pf_rh_f_r7 += 8) {
                        const idx_t f_r7 = pf_rf_f_r7 + pf_rh_f_r7 + pf_wrow + (pf_lane >> 2);
                        float pf_lq0 = 0.0f, pf_lq0_1 = 0.0f, pf_lq0_2 = 0.0f, pf_lq0_3 = 0.0f;
                        #pragma unroll
                        for (idx_t pf_cf_pfVp_dji = 0; pf_cf_pfVp_dji < 64; pf_cf_pfVp_dji += 8) {   /* pfVp_dji: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                            #pragma unroll
                            for (idx_t pf_ch_pfVp_dji = 0; pf_ch_pfVp_dji < 2; ++pf_ch_pfVp_dji) {
                                const idx_t pfVp_dji = pf_cf_pfVp_dji + ((pf_lane & 3) << 1) + pf_ch_pfVp_dji;
                                const float pf_fw1 = pf_fexpd(f_sacc[(pf_rf_f_r7 + pf_rh_f_r7) >> 6][(pf_cf_pfVp_dji + pf_ch_pfVp_dji) >> 3][(((pf_rf_f_r7 + pf_rh_f_r7) >> 3) & 1) * 2 + ((pf_cf_pfVp_dji + pf_ch_pfVp_dji) & 1)], ((f_mw[(pf_rf_f_r7 + pf_rh_f_r7) >> 3] == (-__int_as_float(0x7f800000))) ? 0.0f : f_mw[(pf_rf_f_r7 + pf_rh_f_r7) >> 3]));
                                f_pr[(pf_rf_f_r7 + pf_rh_f_r7) >> 6][(pf_cf_pfVp_dji + pf_ch_pfVp_dji) >> 3][(((pf_rf_f_r7 + pf_rh_f_r7) >> 3) & 1) * 2 + ((pf_cf_pfVp_dji + pf_ch_pfVp_dji) & 1)] = pf_f2b(pf_fw1);
                                switch ((pf_cf_pfVp_dji >> 3) % 4) { case 0: pf_lq0 = pf_rop<0>(pf_lq0, pf_fw1); break; case 1: pf_lq0_1 = pf_rop<0>(pf_lq0_1, pf_fw1); break; case 2: pf_lq0_2 = pf_rop<0>(pf_lq0_2, pf_fw1); break; case 3: pf_lq0_3 = pf_rop<0>(pf_lq0_3, pf_fw1); break; }
                            }
                        }
                        pf_lq0 = pf_rop<0>(pf_lq0, pf_lq0_1);
                        pf_lq0 = pf_rop<0>(pf_lq0, pf_lq0_2);
                        pf_lq0 = pf_rop<0>(pf_lq0, pf_lq0_3);
                        f_lw[(pf_rf_f_r7 + pf_rh_f_r7) >> 3] = pf_rop<0>(f_lw[(pf_rf_f_r7 + pf_rh_f_r7) >> 3], pf_quad<0>(pf_lq0));
                    }
                }
                #pragma unroll
                for (idx_t pf_rf_f_r8 = 0; pf_rf_f_r8 < 64; pf_rf_f_r8 += 64) {   /* f_r8: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
                    #pragma unroll
                    for (idx_t pf_rh_f_r8 = 0; pf_rh_f_r8 < 16; pf_rh_f_r8 += 8) {
                        const idx_t f_r8 = pf_rf_f_r8 + pf_rh_f_r8 + pf_wrow + (pf_lane >> 2);
                        #pragma unroll
                        for (idx_t pf_cf_pfVO_dd = 0; pf_cf_pfVO_dd < 128; pf_cf_pfVO_dd += 8) {   /* pfVO_dd: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                            #pragma unroll
                            for (idx_t pf_ch_pfVO_dd = 0; pf_ch_pfVO_dd < 2; ++pf_ch_pfVO_dd) {
                                const idx_t pfVO_dd = pf_cf_pfVO_dd + ((pf_lane & 3) << 1) + pf_ch_pfVO_dd;
                                f_oacc[(pf_rf_f_r8 + pf_rh_f_r8) >> 6][(pf_cf_pfVO_dd + pf_ch_pfVO_dd) >> 3][(((pf_rf_f_r8 + pf_rh_f_r8) >> 3) & 1) * 2 + ((pf_cf_pfVO_dd + pf_ch_pfVO_dd) & 1)] *= f_mc[(pf_rf_f_r8 + pf_rh_f_r8) >> 3];
                            }
                        }
                    }
                }
                {   /* wgmma pfVO_djio x f_r9: 4 warpgroup products m64n128k16 (bf16 in, f32 accumulate), A from registers, B from shared memory */
                    const unsigned pf_a0[4] = {pf_pk16(f_pr[(0) >> 6][((0) >> 3) + 0][0], f_pr[(0) >> 6][((0) >> 3) + 0][1]), pf_pk16(f_pr[(0) >> 6][((0) >> 3) + 0][2], f_pr[(0) >> 6][((0) >> 3) + 0][3]), pf_pk16(f_pr[(0) >> 6][((0) >> 3) + 1][0], f_pr[(0) >> 6][((0) >> 3) + 1][1]), pf_pk16(f_pr[(0) >> 6][((0) >> 3) + 1][2], f_pr[(0) >> 6][((0) >> 3) + 1][3])};
                    const unsigned pf_a1[4] = {pf_pk16(f_pr[(0) >> 6][((16) >> 3) + 0][0], f_pr[(0) >> 6][((16) >> 3) + 0][1]), pf_pk16(f_pr[(0) >> 6][((16) >> 3) + 0][2], f_pr[(0) >> 6][((16) >> 3) + 0][3]), pf_pk16(f_pr[(0) >> 6][((16) >> 3) + 1][0], f_pr[(0) >> 6][((16) >> 3) + 1][1]), pf_pk16(f_pr[(0) >> 6][((16) >> 3) + 1][2], f_pr[(0) >> 6][((16) >> 3) + 1][3])};
                    const unsigned pf_a2[4] = {pf_pk16(f_pr[(0) >> 6][((32) >> 3) + 0][0], f_pr[(0) >> 6][((32) >> 3) + 0][1]), pf_pk16(f_pr[(0) >> 6][((32) >> 3) + 0][2], f_pr[(0) >> 6][((32) >> 3) + 0][3]), pf_pk16(f_pr[(0) >> 6][((32) >> 3) + 1][0], f_pr[(0) >> 6][((32) >> 3) + 1][1]), pf_pk16(f_pr[(0) >> 6][((32) >> 3) + 1][2], f_pr[(0) >> 6][((32) >> 3) + 1][3])};
                    const unsigned pf_a3[4] = {pf_pk16(f_pr[(0) >> 6][((48) >> 3) + 0][0], f_pr[(0) >> 6][((48) >> 3) + 0][1]), pf_pk16(f_pr[(0) >> 6][((48) >> 3) + 0][2], f_pr[(0) >> 6][((48) >> 3) + 0][3]), pf_pk16(f_pr[(0) >> 6][((48) >> 3) + 1][0], f_pr[(0) >> 6][((48) >> 3) + 1][1]), pf_pk16(f_pr[(0) >> 6][((48) >> 3) + 1][2], f_pr[(0) >> 6][((48) >> 3) + 1][3])};
                    pf_wg_keep<64>(&f_oacc[0][0][0]);
                    pf_wg_fence();
                    pf_wgmma_bf16_n128_r1(&f_oacc[0][0][0], pf_a0, pf_wg_desc(pf_saddr(f_Vs) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (0 >> 6)) * 64 + 0) << 6) + (0 & 63)) * 2), 8192, 1024));
                    pf_wgmma_bf16_n128_r1(&f_oacc[0][0][0], pf_a1, pf_wg_desc(pf_saddr(f_Vs) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (0 >> 6)) * 64 + 16) << 6) + (0 & 63)) * 2), 8192, 1024));
                    pf_wgmma_bf16_n128_r1(&f_oacc[0][0][0], pf_a2, pf_wg_desc(pf_saddr(f_Vs) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (0 >> 6)) * 64 + 32) << 6) + (0 & 63)) * 2), 8192, 1024));
                    pf_wgmma_bf16_n128_r1(&f_oacc[0][0][0], pf_a3, pf_wg_desc(pf_saddr(f_Vs) + (unsigned)(((((((0) * 2 + ((idx_t)((unsigned)pfVO_djo % 2u))) * 2 + (0 >> 6)) * 64 + 48) << 6) + (0 & 63)) * 2), 8192, 1024));
                    pf_wg_commit();
                    pf_wg_wait<0>();
                    pf_wg_keep<64>(&f_oacc[0][0][0]);
                }
            }
        }
    }
    {   /* f_nw: thread.y */
        const idx_t f_nw = (idx_t)threadIdx.y;
        #pragma unroll
        for (idx_t pf_rf_f_nr = 0; pf_rf_f_nr < 64; pf_rf_f_nr += 64) {   /* f_nr: accumulator rows, 16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */
            #pragma unroll
            for (idx_t pf_rh_f_nr = 0; pf_rh_f_nr < 16; pf_rh_f_nr += 8) {
                const idx_t f_nr = pf_rf_f_nr + pf_rh_f_nr + pf_wrow + (pf_lane >> 2);
                #pragma unroll
                for (idx_t pf_cf_pfVO_dd_unorm = 0; pf_cf_pfVO_dd_unorm < 128; pf_cf_pfVO_dd_unorm += 8) {   /* pfVO_dd_unorm: accumulator columns, 2 * (lane % 4) + 0..1 each (fragment layout) */
                    #pragma unroll
                    for (idx_t pf_ch_pfVO_dd_unorm = 0; pf_ch_pfVO_dd_unorm < 2; ++pf_ch_pfVO_dd_unorm) {
                        const idx_t pfVO_dd_unorm = pf_cf_pfVO_dd_unorm + ((pf_lane & 3) << 1) + pf_ch_pfVO_dd_unorm;
                        f_oacc[(pf_rf_f_nr + pf_rh_f_nr) >> 6][(pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) >> 3][(((pf_rf_f_nr + pf_rh_f_nr) >> 3) & 1) * 2 + ((pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) & 1)] = ((f_lw[(pf_rf_f_nr + pf_rh_f_nr) >> 3] == 0.0f) ? f_oacc[(pf_rf_f_nr + pf_rh_f_nr) >> 6][(pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) >> 3][(((pf_rf_f_nr + pf_rh_f_nr) >> 3) & 1) * 2 + ((pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) & 1)] : (f_oacc[(pf_rf_f_nr + pf_rh_f_nr) >> 6][(pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) >> 3][(((pf_rf_f_nr + pf_rh_f_nr) >> 3) & 1) * 2 + ((pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) & 1)] / f_lw[(pf_rf_f_nr + pf_rh_f_nr) >> 3]));
                        O[((pfVO_db * H + pfVO_dh) * S + (((f_io * 128) + (f_nw * 64)) + f_nr)) * D + pfVO_dd_unorm] = pf_f2b(f_oacc[(pf_rf_f_nr + pf_rh_f_nr) >> 6][(pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) >> 3][(((pf_rf_f_nr + pf_rh_f_nr) >> 3) & 1) * 2 + ((pf_cf_pfVO_dd_unorm + pf_ch_pfVO_dd_unorm) & 1)]);
                    }
                }
            }
        }
    }
}

/* Launches, in order (grid; block; dynamic shared bytes):
 *   attention_0  (16, 16, 4)  (128, 2, 1)  99392
 */
