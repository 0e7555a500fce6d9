/* Times a kernel of a perfc-generated library on device pointers (bench/gpu/lib_gemm.sh).
 *
 *   lib_gemm LIB.so NAME KERNEL DTYPE M N K REPS
 *
 * Calls NAME_call_cuda(KERNEL, {A, B, C}, {M, N, K}, NULL) on buffers from cuMemAlloc and
 * times each call exactly as `perfc --run` times a kernel (runtime/cuda_device.c,
 * time_once): wait for the GPU, queue about 1.5 ms of writes of twice the L2
 * (cuMemsetD32Async on the same stream, not waited for: the L2 is flushed and the
 * GPU at full clocks when the call's work starts, and the host-side cost of the call
 * overlaps them), record the start event, call, record the end event, wait; three
 * such runs first as warm-up.  Prints the median in ms and checks 256 sampled
 * entries of C against a double-precision dot product on the host.  The CUDA driver is loaded
 * with dlopen, so no CUDA header or library is needed to build this. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*CallCuda)(const char *, void *const *, const int64_t *, void *);
typedef const char *(*LastError)(void);
typedef unsigned long long Dptr;

static void *cu;
#define F(name, ...) int (*name)(__VA_ARGS__)
static F(Init, unsigned);
static F(DeviceGet, int *, int);
static F(PrimaryCtxRetain, void **, int);
static F(CtxSetCurrent, void *);
static F(MemAlloc, Dptr *, size_t);
static F(MemcpyHtoD, Dptr, const void *, size_t);
static F(MemcpyDtoH, void *, Dptr, size_t);
static F(MemsetD32Async, Dptr, unsigned, size_t, void *);
static F(DeviceGetAttribute, int *, int, int);
static F(EventCreate, void **, unsigned);
static F(EventRecord, void *, void *);
static F(EventSynchronize, void *);
static F(EventElapsedTime, float *, void *, void *);
static F(CtxSynchronize, void);

static void *sym(const char *a, const char *b)
{
    void *p = dlsym(cu, a);
    if (!p && b)
        p = dlsym(cu, b);
    if (!p) {
        fprintf(stderr, "lib_gemm: the CUDA driver lacks %s\n", a);
        exit(3);
    }
    return p;
}

static uint16_t to_f16(float f) /* round to nearest even; inputs are small and normal */
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a < 0x38800000u)
        return (uint16_t)s;
    uint32_t h = (a >> 13) - (112u << 10), r = a & 0x1fffu;
    if (r > 0x1000u || (r == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(s | h);
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 9) {
        fprintf(stderr, "usage: lib_gemm LIB.so NAME KERNEL f32|f16 M N K REPS\n");
        return 1;
    }
    int f16 = !strcmp(argv[4], "f16");
    int64_t M = atoll(argv[5]), N = atoll(argv[6]), K = atoll(argv[7]);
    int reps = atoi(argv[8]);
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "lib_gemm: %s\n", dlerror());
        return 1;
    }
    char s[256];
    snprintf(s, sizeof s, "%s_call_cuda", argv[2]);
    CallCuda call = (CallCuda)dlsym(lib, s);
    snprintf(s, sizeof s, "%s_last_error", argv[2]);
    LastError err = (LastError)dlsym(lib, s);
    if (!call || !err) {
        fprintf(stderr, "lib_gemm: %s has no GPU entry point\n", argv[1]);
        return 1;
    }
    cu = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cu) {
        fprintf(stderr, "lib_gemm: no CUDA driver\n");
        return 77;
    }
    *(void **)&Init = sym("cuInit", NULL);
    *(void **)&DeviceGet = sym("cuDeviceGet", NULL);
    *(void **)&PrimaryCtxRetain = sym("cuDevicePrimaryCtxRetain", NULL);
    *(void **)&CtxSetCurrent = sym("cuCtxSetCurrent", NULL);
    *(void **)&MemAlloc = sym("cuMemAlloc_v2", "cuMemAlloc");
    *(void **)&MemcpyHtoD = sym("cuMemcpyHtoD_v2", "cuMemcpyHtoD");
    *(void **)&MemcpyDtoH = sym("cuMemcpyDtoH_v2", "cuMemcpyDtoH");
    *(void **)&MemsetD32Async = sym("cuMemsetD32Async", NULL);
    *(void **)&DeviceGetAttribute = sym("cuDeviceGetAttribute", NULL);
    *(void **)&EventCreate = sym("cuEventCreate", NULL);
    *(void **)&EventRecord = sym("cuEventRecord", NULL);
    *(void **)&EventSynchronize = sym("cuEventSynchronize", NULL);
    *(void **)&EventElapsedTime = sym("cuEventElapsedTime_v2", "cuEventElapsedTime");
    *(void **)&CtxSynchronize = sym("cuCtxSynchronize", NULL);
    int dev;
    void *ctx;
    if (Init(0) || DeviceGet(&dev, 0) || PrimaryCtxRetain(&ctx, dev) || CtxSetCurrent(ctx)) {
        fprintf(stderr, "lib_gemm: no usable GPU\n");
        return 77;
    }
    size_t eb = f16 ? 2 : 4;
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    void *ha = malloc(eb * (size_t)(M * K)), *hb = malloc(eb * (size_t)(K * N));
    float *hc = malloc(sizeof(float) * (size_t)(M * N));
    unsigned seed = 12345;
    for (int64_t i = 0; i < M * K + K * N; i++) {
        seed = seed * 1103515245u + 12345u;
        float v = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
        if (f16) {
            uint16_t h = to_f16(v);
            uint32_t x = ((uint32_t)(h & 0x8000u) << 16) | (((uint32_t)((h >> 10) & 0x1f) + 112u) << 23) |
                         ((uint32_t)(h & 0x3ffu) << 13);
            if (!(h & 0x7fff))
                x = (uint32_t)(h & 0x8000u) << 16;
            memcpy(&v, &x, 4);
            if (i < M * K)
                ((uint16_t *)ha)[i] = h;
            else
                ((uint16_t *)hb)[i - M * K] = h;
        } else if (i < M * K) {
            ((float *)ha)[i] = v;
        } else {
            ((float *)hb)[i - M * K] = v;
        }
        if (i < M * K)
            a[i] = v;
        else
            b[i - M * K] = v;
    }
    /* perfc's flush: twice the L2, written ceil(1.5 ms x peak bandwidth / size) times */
    int l2 = 0, mem_khz = 0, bus_bits = 0;
    DeviceGetAttribute(&l2, 38, dev);       /* L2_CACHE_SIZE */
    DeviceGetAttribute(&mem_khz, 36, dev);  /* MEMORY_CLOCK_RATE */
    DeviceGetAttribute(&bus_bits, 37, dev); /* GLOBAL_MEMORY_BUS_WIDTH */
    size_t flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
    double bw = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0);
    double wd = bw > 0 ? ceil(1.5e-3 * bw / (double)flush_bytes) : 64;
    int wake = wd < 1 ? 1 : wd > 512 ? 512 : (int)wd;
    Dptr A, B, C, flush;
    if (MemAlloc(&A, eb * (size_t)(M * K)) || MemAlloc(&B, eb * (size_t)(K * N)) ||
        MemAlloc(&C, 4 * (size_t)(M * N)) || MemAlloc(&flush, flush_bytes)) {
        fprintf(stderr, "lib_gemm: cuMemAlloc failed\n");
        return 3;
    }
    MemcpyHtoD(A, ha, eb * (size_t)(M * K));
    MemcpyHtoD(B, hb, eb * (size_t)(K * N));
    void *t[3] = {(void *)(uintptr_t)A, (void *)(uintptr_t)B, (void *)(uintptr_t)C};
    int64_t sz[3] = {M, N, K};
    for (int w = 0; w < 3; w++)
        if (call(argv[3], t, sz, NULL)) {
            fprintf(stderr, "lib_gemm: %s\n", err());
            return 3;
        }
    CtxSynchronize();
    void *e0, *e1;
    EventCreate(&e0, 0);
    EventCreate(&e1, 0);
    float *ms = malloc(sizeof(float) * (size_t)(reps + 3));
    for (int r = 0; r < reps + 3; r++) { /* the first three: warm-up */
        CtxSynchronize();
        for (int i = 0; i < wake; i++)
            MemsetD32Async(flush, 0x3f800000u + (unsigned)i, flush_bytes / 4, NULL);
        EventRecord(e0, NULL);
        if (call(argv[3], t, sz, NULL)) {
            fprintf(stderr, "lib_gemm: %s\n", err());
            return 3;
        }
        EventRecord(e1, NULL);
        EventSynchronize(e1);
        EventElapsedTime(&ms[r < 3 ? 0 : r - 3], e0, e1);
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp);
    MemcpyDtoH(hc, C, 4 * (size_t)(M * N));
    double worst = 0;
    for (int i = 0; i < 256; i++) {
        seed = seed * 1103515245u + 12345u;
        int64_t r = (int64_t)(seed % (unsigned)M), c = (int64_t)((seed >> 7) % (unsigned)N);
        double want = 0;
        for (int64_t k = 0; k < K; k++)
            want += (double)a[r * K + k] * b[k * N + c];
        double e = fabs(hc[r * N + c] - want) / (1 + fabs(want));
        worst = e > worst ? e : worst;
    }
    double med = ms[reps / 2];
    printf("{\"kernel\":\"%s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,\"median_ms\":%.4f,\"min_ms\":%.4f,"
           "\"tflops\":%.2f,\"worst_rel_error\":%.2e}\n",
           argv[3], (long long)M, (long long)N, (long long)K, med, ms[0], 2.0 * M * N * K / med * 1e-9, worst);
    return worst < (f16 ? 1e-2 : 1e-3) ? 0 : 2;
}
