/* One GPU as a harness device: it opens the primary context, names the GPU (clocks,
 * memory, driver and NVRTC versions) for every report, moves a kernel's buffers in
 * and out as the f64 arrays the interpreter uses, launches a compiled CgCudaModule
 * after checking it fits this device, and times work honestly: warm-up, a full
 * synchronisation and an L2 flush before every repetition, CUDA events around the
 * work alone, repetitions adapted to the work's length, median/min/max. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/checked.h"
#include "cuda_driver.h"
#include "runtime.h"

/* CUdevice_attribute and CUfunction_attribute values from the driver API. */
enum {
    ATTR_MAX_THREADS_PER_BLOCK = 1,
    ATTR_MAX_SHARED_PER_BLOCK = 8,
    ATTR_MAX_REGISTERS_PER_BLOCK = 12,
    ATTR_CLOCK_RATE = 13,
    ATTR_SM_COUNT = 16,
    ATTR_MEMORY_CLOCK_RATE = 36,
    ATTR_BUS_WIDTH = 37,
    ATTR_L2_SIZE = 38,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
    ATTR_MAX_SHARED_OPTIN = 97,
    FATTR_MAX_THREADS = 0,
    FATTR_SHARED_STATIC = 1,
    FATTR_LOCAL_BYTES = 3,
    FATTR_NUM_REGS = 4,
    FATTR_MAX_DYN_SHARED = 8,
};

struct GpuDevice {
    const CudaDriver *cu;
    CUdevice dev;
    CUcontext ctx;
    GpuInfo info;
    CUdeviceptr flush;      /* written between timed repetitions to evict L2 */
    bool flush_queued;      /* a flush is queued ahead of the next timed run (crt_flush) */
    size_t flush_bytes;
    int wake_writes;        /* writes of the flush buffer that keep the GPU busy ~1.5 ms first */
    CUevent ev0, ev1;
};

struct GpuProgram {
    GpuDevice *g;
    CgCudaModule *m;
    CUmodule mod;
    CUfunction *fn;
    /* The module's tensor maps (128 bytes each, 64-aligned), encoded for the buffer
     * addresses in mapped[] (one per map): re-encoded only when those change. */
    unsigned char *maps;
    CUdeviceptr *mapped;
};

GpuDevice *gpu_open(int ordinal, Diags *d)
{
    char why[512];
    const CudaDriver *cu = cuda_driver(why, sizeof why);
    if (!cu) {
        diag_plain(d, DIAG_ERROR, "this run needs an NVIDIA GPU and its driver: %s", why);
        return NULL;
    }
    int count = 0;
    if (!cuda_check(cu->DeviceGetCount(&count), "cuDeviceGetCount", d))
        return NULL;
    if (ordinal >= count) {
        diag_plain(d, DIAG_ERROR, "this run needs an NVIDIA GPU: the driver sees %d (asked for GPU %d)", count, ordinal);
        return NULL;
    }
    GpuDevice *g = xcalloc(1, sizeof *g);
    g->cu = cu;
    GpuInfo *in = &g->info;
    if (!cuda_check(cu->DeviceGet(&g->dev, ordinal), "cuDeviceGet", d) ||
        !cuda_check(cu->DevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain", d) ||
        !cuda_check(cu->CtxSetCurrent(g->ctx), "cuCtxSetCurrent", d)) {
        free(g);
        return NULL;
    }
    cu->DeviceGetName(in->name, sizeof in->name, g->dev);
    struct { int *dst, attr; } at[] = {
        {&in->cc_major, ATTR_CC_MAJOR}, {&in->cc_minor, ATTR_CC_MINOR}, {&in->sms, ATTR_SM_COUNT},
        {&in->l2_bytes, ATTR_L2_SIZE}, {&in->clock_khz, ATTR_CLOCK_RATE},
        {&in->mem_clock_khz, ATTR_MEMORY_CLOCK_RATE}, {&in->bus_bits, ATTR_BUS_WIDTH},
        {&in->max_threads_block, ATTR_MAX_THREADS_PER_BLOCK}, {&in->smem_block_optin, ATTR_MAX_SHARED_OPTIN},
        {&in->regs_block, ATTR_MAX_REGISTERS_PER_BLOCK},
    };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        if (cu->DeviceGetAttribute(at[i].dst, at[i].attr, g->dev) != 0)
            *at[i].dst = 0;
    if (!in->smem_block_optin)
        cu->DeviceGetAttribute(&in->smem_block_optin, ATTR_MAX_SHARED_PER_BLOCK, g->dev);
    cu->DeviceTotalMem(&in->mem_bytes, g->dev);
    cu->DriverGetVersion(&in->driver_version);
    cg_nvrtc_version(&in->nvrtc_major, &in->nvrtc_minor);
    snprintf(in->arch, sizeof in->arch, "sm_%d%d", in->cc_major, in->cc_minor);
    if (!cuda_check(cu->EventCreate(&g->ev0, 0), "cuEventCreate", d) ||
        !cuda_check(cu->EventCreate(&g->ev1, 0), "cuEventCreate", d)) {
        gpu_close(g);
        return NULL;
    }
    /* twice the L2, so that a write of it leaves nothing of the last run cached */
    g->flush_bytes = (size_t)(in->l2_bytes > 0 ? in->l2_bytes : 64 << 20) * 2;
    if (cu->MemAlloc(&g->flush, g->flush_bytes) != 0)
        g->flush = 0;
    /* About 1.5 ms of writes at the memory's peak rate (clock x 2 for DDR x bus width),
     * 64 writes when the attributes are missing.  See queue_flush for why. */
    double bw = 2.0 * in->mem_clock_khz * 1e3 * (in->bus_bits / 8.0);
    double w = bw > 0 ? ceil(1.5e-3 * bw / (double)g->flush_bytes) : 64;
    g->wake_writes = w < 1 ? 1 : w > 512 ? 512 : (int)w;
    return g;
}

void gpu_close(GpuDevice *g)
{
    if (!g) return;
    if (g->flush) g->cu->MemFree(g->flush);
    if (g->ev0) g->cu->EventDestroy(g->ev0);
    if (g->ev1) g->cu->EventDestroy(g->ev1);
    g->cu->DevicePrimaryCtxRelease(g->dev);
    free(g);
}

const GpuInfo *gpu_info(const GpuDevice *g) { return &g->info; }
const CudaDriver *gpu_driver(const GpuDevice *g) { return g->cu; }

void gpu_describe(const GpuDevice *g, StrBuf *out)
{
    const GpuInfo *in = &g->info;
    sb_printf(out, "%s (%s, %d SMs, SM clock up to %d MHz, memory clock %d MHz, %d-bit bus, %.0f MiB L2, "
              "%.1f GiB), driver CUDA %d.%d, NVRTC %d.%d", in->name, in->arch, in->sms, in->clock_khz / 1000,
              in->mem_clock_khz / 1000, in->bus_bits, in->l2_bytes / 1048576.0,
              (double)in->mem_bytes / 1073741824.0, in->driver_version / 1000, in->driver_version % 1000 / 10,
              in->nvrtc_major, in->nvrtc_minor);
}

bool gpu_alloc(GpuDevice *g, size_t bytes, CUdeviceptr *out, Diags *d)
{
    *out = 0;
    /* asked for more than the GPU has: say so with both numbers (cuMemAlloc would only
     * say "out of memory") */
    if (g->info.mem_bytes && bytes > g->info.mem_bytes) {
        diag_plain(d, DIAG_ERROR, "a buffer needs %zu bytes, this GPU (%s) has %zu: bind smaller sizes with -D", bytes,
                   g->info.name, g->info.mem_bytes);
        return false;
    }
    return cuda_check(g->cu->MemAlloc(out, bytes ? bytes : 16), "cuMemAlloc", d);
}

void gpu_free(GpuDevice *g, CUdeviceptr p)
{
    if (p) g->cu->MemFree(p);
}

bool gpu_upload(GpuDevice *g, CUdeviceptr dst, const void *src, size_t bytes, Diags *d)
{
    return cuda_check(g->cu->MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD", d);
}

bool gpu_download(GpuDevice *g, void *dst, CUdeviceptr src, size_t bytes, Diags *d)
{
    return cuda_check(g->cu->MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH", d);
}

bool gpu_sync(GpuDevice *g, Diags *d)
{
    return cuda_check(g->cu->CtxSynchronize(), "cuCtxSynchronize (a kernel failed)", d);
}

/* ---- programs ---- */

/* How code for target `arch` runs on this GPU: CODE_CUBIN when it is this GPU's own
 * architecture (sm_90a on a 9.0 GPU too), CODE_PTX when it is an older one without
 * the `a` suffix (the driver compiles its PTX for this GPU at load, as it does for
 * nvcc's compute_80 code), CODE_NONE otherwise (newer than the GPU, or `a` code for
 * another architecture: its instructions exist on that one only). */
enum { CODE_NONE, CODE_CUBIN, CODE_PTX };
static int code_fits(const char *arch, const GpuInfo *in)
{
    const Target *a = arch ? cg_cuda_arch(arch) : NULL;
    if (!a)
        return CODE_NONE;
    int major = a->sm / 10, minor = a->sm % 10;
    if (major == in->cc_major && minor == in->cc_minor)
        return CODE_CUBIN;
    if (!a->arch_specific && (major < in->cc_major || (major == in->cc_major && minor < in->cc_minor)))
        return CODE_PTX;
    return CODE_NONE;
}

static void refuse_code(const char *arch, const GpuInfo *in, Diags *d)
{
    diag_plain(d, DIAG_ERROR, "-target %s cannot run on this GPU, %s (%s): code for %s runs on that architecture "
               "%s; use -target %s (or an older sm_XY without the `a`, run through its PTX)", arch, in->name,
               in->arch, arch, arch[strlen(arch) - 1] == 'a' ? "only" : "and newer ones", in->arch);
}

GpuProgram *gpu_load(GpuDevice *g, CgCudaModule *m, Diags *d)
{
    const GpuInfo *in = &g->info;
    if (!m->cubin || !m->ptx) {
        diag_plain(d, DIAG_ERROR, "internal error: module not compiled before loading");
        return NULL;
    }
    /* a cubin for another architecture fails to load with an unhelpful code: say it */
    int how = code_fits(m->arch, in);
    if (how == CODE_NONE) {
        refuse_code(m->arch, in, d);
        return NULL;
    }
    for (int i = 0; i < m->nlaunches; i++) {
        CgLaunch *L = &m->launches[i];
        long long thr = (long long)L->block[0] * L->block[1] * L->block[2];
        if (thr > in->max_threads_block) {
            diag_plain(d, DIAG_ERROR, "launch %s has %lld threads per block; %s allows %d", L->name, thr,
                       in->name, in->max_threads_block);
            return NULL;
        }
        if (L->shared_bytes > in->smem_block_optin) {
            diag_plain(d, DIAG_ERROR, "launch %s needs %d bytes of shared memory per block; %s allows %d",
                       L->name, L->shared_bytes, in->name, in->smem_block_optin);
            return NULL;
        }
    }
    GpuProgram *p = xcalloc(1, sizeof *p);
    p->g = g;
    p->m = m;
    p->fn = xcalloc((size_t)m->nlaunches + 1, sizeof *p->fn);
    const void *image = how == CODE_CUBIN ? (const void *)m->cubin : (const void *)m->ptx;
    if (!cuda_check(g->cu->ModuleLoadData(&p->mod, image),
                    how == CODE_CUBIN ? "cuModuleLoadData" : "cuModuleLoadData (PTX, compiled by the driver)", d)) {
        free(p->fn);
        free(p);
        return NULL;
    }
    for (int i = 0; i < m->nlaunches; i++) {
        CgLaunch *L = &m->launches[i];
        if (!cuda_check(g->cu->ModuleGetFunction(&p->fn[i], p->mod, L->name), "cuModuleGetFunction", d))
            goto fail;
        int regs = 0, local = 0, maxthr = 0;
        g->cu->FuncGetAttribute(&regs, FATTR_NUM_REGS, p->fn[i]);
        g->cu->FuncGetAttribute(&local, FATTR_LOCAL_BYTES, p->fn[i]);
        g->cu->FuncGetAttribute(&maxthr, FATTR_MAX_THREADS, p->fn[i]);
        L->regs = regs;
        if (L->stack_bytes < 0) L->stack_bytes = local;
        long long thr = (long long)L->block[0] * L->block[1] * L->block[2];
        if (maxthr > 0 && thr > maxthr) {
            diag_plain(d, DIAG_ERROR, "launch %s has %lld threads per block but with %d registers per thread "
                       "%s can run at most %d", L->name, thr, regs, in->name, maxthr);
            goto fail;
        }
        if (L->shared_bytes > 48 * 1024 &&
            !cuda_check(g->cu->FuncSetAttribute(p->fn[i], FATTR_MAX_DYN_SHARED, L->shared_bytes),
                        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", d))
            goto fail;
    }
    return p;
fail:
    gpu_program_free(p);
    return NULL;
}

void gpu_program_free(GpuProgram *p)
{
    if (!p) return;
    free(p->maps);
    free(p->mapped);
    if (p->mod) p->g->cu->ModuleUnload(p->mod);
    free(p->fn);
    free(p);
}

/* Tensor map t of p's module for the buffer addresses in args. */
static bool encode_map(GpuProgram *p, int t, const CUdeviceptr *args, Diags *d)
{
    const CgTmap *c = &p->m->tmaps[t];
    CUdeviceptr a = 0;
    for (int i = 0; i < p->m->nargs; i++)
        if (p->m->arg_bufs[i] == c->buf) a = args[i];
    if (a == p->mapped[t]) return true;
    if (!p->g->cu->TensorMapEncodeTiled) {
        diag_plain(d, DIAG_ERROR, "this code copies with tensor maps (TMA) and the NVIDIA driver lacks "
                   "cuTensorMapEncodeTiled (CUDA 12 and later have it): update the driver or use -target sm_80");
        return false;
    }
    static const unsigned ones[5] = {1, 1, 1, 1, 1};
    /* 1 UINT16, 0 no interleave, 3 128-byte swizzle, 3 L2 promotion of 256 bytes, 0 zeros outside */
    CUresult r = p->g->cu->TensorMapEncodeTiled(p->maps + 128 * (size_t)t, 1, (unsigned)c->rank, (void *)(uintptr_t)a,
                                                c->dims, c->strides, c->box, ones, 0, 3, 3, 0);
    if (!cuda_check(r, "cuTensorMapEncodeTiled", d)) return false;
    p->mapped[t] = a;
    return true;
}

bool gpu_launch(GpuProgram *p, const CUdeviceptr *args, Diags *d)
{
    CgCudaModule *m = p->m;
    void **params = xcalloc((size_t)m->nargs + (size_t)m->ntmaps + 1, sizeof *params);
    for (int i = 0; i < m->nargs; i++)
        params[i] = (void *)&args[i];
    if (m->ntmaps && !p->maps) {
        p->maps = aligned_alloc(64, 128 * (size_t)m->ntmaps);
        p->mapped = xcalloc((size_t)m->ntmaps, sizeof *p->mapped);
        if (!p->maps) {
            free(params);
            diag_plain(d, DIAG_ERROR, "out of memory for tensor maps");
            return false;
        }
    }
    for (int t = 0; t < m->ntmaps; t++) {
        if (!encode_map(p, t, args, d)) {
            free(params);
            return false;
        }
        params[m->nargs + t] = p->maps + 128 * (size_t)t;
    }
    bool ok = true;
    for (int i = 0; i < m->nlaunches && ok; i++) {
        CgLaunch *L = &m->launches[i];
        char what[128];
        snprintf(what, sizeof what, "cuLaunchKernel(%s)", L->name);
        ok = cuda_check(p->g->cu->LaunchKernel(p->fn[i], (unsigned)L->grid[0], (unsigned)L->grid[1],
                                               (unsigned)L->grid[2], (unsigned)L->block[0], (unsigned)L->block[1],
                                               (unsigned)L->block[2], (unsigned)L->shared_bytes, NULL, params, NULL),
                        what, d);
    }
    free(params);
    return ok;
}

/* ---- a kernel's buffers ---- */

bool gpu_bufs_alloc(GpuDevice *g, const Kernel *k, GpuKernelBufs *b, Diags *d)
{
    b->n = k->nbufs;
    b->ptr = xcalloc((size_t)k->nbufs + 1, sizeof *b->ptr);
    b->bytes = xcalloc((size_t)k->nbufs + 1, sizeof *b->bytes);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *bf = k->bufs[i];
        if (bf->mem != MEM_GLOBAL) continue;
        int64_t n = ir_buffer_elems(k, bf);
        if (n < 0 || !ck_bytes(n, (size_t)dtype_bytes(bf->dtype), &b->bytes[i])) {
            diag_plain(d, DIAG_ERROR, "buffer %s has an unbound size or one too large to count", bf->name);
            return false;
        }
        if (!gpu_alloc(g, b->bytes[i], &b->ptr[i], d))
            return false;
    }
    return true;
}

/* A NaN of each float width, written as 32-bit words (two f16/bf16 per word). */
static unsigned poison_word(DType t)
{
    switch (t) {
    case DT_F64: return 0x7ff80000u; /* both halves: the high word makes it a NaN */
    case DT_F32: return 0x7fc00000u;
    case DT_F16: return 0x7e007e00u;
    case DT_BF16: return 0x7fc07fc0u;
    default: return 0x7f7f7f7fu;
    }
}

bool gpu_bufs_upload(GpuDevice *g, const Kernel *k, GpuKernelBufs *b, double *const *host, Diags *d)
{
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *bf = k->bufs[i];
        if (!b->ptr[i]) continue;
        size_t n = b->bytes[i] / (size_t)dtype_bytes(bf->dtype);
        if (bf->kind == BUF_IN) {
            void *tmp = xmalloc(b->bytes[i] + 1);
            rt_to_native(bf->dtype, host[i], tmp, (int64_t)n);
            bool ok = gpu_upload(g, b->ptr[i], tmp, b->bytes[i], d);
            free(tmp);
            if (!ok) return false;
        } else {
            /* every element must be written by the kernel: start from NaN */
            if (b->bytes[i] % 4 == 0) {
                if (!cuda_check(g->cu->MemsetD32(b->ptr[i], poison_word(bf->dtype), b->bytes[i] / 4), "cuMemsetD32", d))
                    return false;
            } else {
                /* cuMemsetD32 cannot end mid-word: poison on the host and copy */
                void *tmp = xmalloc(b->bytes[i] + 1);
                rt_poison(bf->dtype, tmp, (int64_t)n);
                bool ok = gpu_upload(g, b->ptr[i], tmp, b->bytes[i], d);
                free(tmp);
                if (!ok) return false;
            }
        }
    }
    return gpu_sync(g, d);
}

bool gpu_bufs_download(GpuDevice *g, const Kernel *k, GpuKernelBufs *b, double **host, Diags *d)
{
    if (!gpu_sync(g, d))
        return false;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *bf = k->bufs[i];
        if (!b->ptr[i] || bf->kind != BUF_OUT || !host[i]) continue;
        void *tmp = xmalloc(b->bytes[i] + 1);
        bool ok = gpu_download(g, tmp, b->ptr[i], b->bytes[i], d);
        size_t n = b->bytes[i] / (size_t)dtype_bytes(bf->dtype);
        if (ok)
            rt_from_native(bf->dtype, tmp, host[i], (int64_t)n);
        free(tmp);
        if (!ok) return false;
    }
    return true;
}

void gpu_bufs_free(GpuDevice *g, GpuKernelBufs *b)
{
    for (int i = 0; i < b->n; i++)
        gpu_free(g, b->ptr[i]);
    free(b->ptr);
    free(b->bytes);
    memset(b, 0, sizeof *b);
}

CUdeviceptr *gpu_bufs_args(const GpuKernelBufs *b, const CgCudaModule *m)
{
    CUdeviceptr *a = xcalloc((size_t)m->nargs + 1, sizeof *a);
    for (int i = 0; i < m->nargs; i++)
        a[i] = b->ptr[m->arg_bufs[i]];
    return a;
}

/* ---- timing ---- */

/* Queues, without waiting, what goes ahead of every timed run: about 1.5 ms of
 * writes to the flush buffer, then the L2 flush itself (the last write).  The first
 * part is there because the GPU is idle before each repetition (the harness poisons
 * the outputs and checks the last run from the host, tens of milliseconds), and a
 * GPU that has been idle for a millisecond or more runs the next kernel slowly while
 * its clocks come back: on an H100, a 4096^3 bf16 product measured 0.18 ms right
 * behind other work and 0.26-0.37 ms after an idle gap of 1-20 ms (torch and
 * cuBLASLt alike), and 200 us of work ahead of it were not enough, 1 ms was
 * (docs/cuda.md, "Running and timing").  Without it every GPU time perfc reports
 * would be a cold start, and ratios would depend on how long each kernel is. */
static bool queue_flush(GpuDevice *g)
{
    if (!g->flush)
        return true;
    for (int i = 0; i < g->wake_writes; i++)
        if (g->cu->MemsetD32Async(g->flush, 0x3f800000u + (unsigned)i, g->flush_bytes / 4, NULL) != 0)
            return false;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One timed repetition.  The L2 flush is queued on the stream, not waited for: while
 * the GPU writes it (tens of microseconds), the host records the start event and
 * enqueues the work, so the work starts the moment the flush ends and the events
 * time the GPU alone.  Waiting for the flush first would leave the GPU idle between
 * the start event and the work for as long as the host takes to enqueue it, which
 * charges a library's host-side set-up (cuBLAS: several microseconds) to its time. */
static bool time_once(GpuDevice *g, GpuWorkFn work, void *ctx, double *ms, Diags *d)
{
    const CudaDriver *cu = g->cu;
    if (!gpu_sync(g, d))
        return false;
    if (!queue_flush(g)) {
        diag_plain(d, DIAG_ERROR, "the L2 flush ahead of a timed run could not be queued");
        return false;
    }
    if (!cuda_check(cu->EventRecord(g->ev0, NULL), "cuEventRecord", d) || !work(ctx, d) ||
        !cuda_check(cu->EventRecord(g->ev1, NULL), "cuEventRecord", d) ||
        !cuda_check(cu->EventSynchronize(g->ev1), "cuEventSynchronize (a kernel failed)", d))
        return false;
    float f = 0;
    if (!cuda_check(cu->EventElapsedTime(&f, g->ev0, g->ev1), "cuEventElapsedTime", d))
        return false;
    *ms = f;
    return true;
}

bool gpu_time(GpuDevice *g, GpuWorkFn work, void *ctx, double target_s, int max_reps, GpuTiming *t, Diags *d)
{
    double est = 0;
    /* warm-up: module load, first-touch and clocks ramping stay out of the numbers */
    for (int i = 0; i < 3; i++)
        if (!time_once(g, work, ctx, &est, d))
            return false;
    int reps = est > 0 ? (int)(target_s * 1e3 / est) : max_reps;
    if (reps < 5) reps = 5;
    if (max_reps > 0 && reps > max_reps) reps = max_reps;
    double *v = xcalloc((size_t)reps, sizeof *v);
    for (int i = 0; i < reps; i++)
        if (!time_once(g, work, ctx, &v[i], d)) {
            free(v);
            return false;
        }
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    t->reps = reps;
    t->min_ms = v[0];
    t->max_ms = v[reps - 1];
    t->median_ms = reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);
    free(v);
    return true;
}

/* ---- the harness' device ---- */

typedef struct CudaRt {
    GpuDevice *g;
    Cublas *blas;           /* opened on the first library() call */
    CublasLt *lt;           /* likewise; NULL when libcublasLt cannot be loaded */
    bool lt_tried;
    char code[96];          /* which architecture's code runs, for the report */
} CudaRt;

typedef struct CudaExec {
    RtExec x;
    bool is_lib;
    CgCudaModule m;
    GpuProgram *prog;
    RtGemm gemm;
    LtPlan *lt;             /* the baseline through cuBLASLt; NULL: cublasGemmEx */
    bool tf32;
} CudaExec;

static void crt_describe(RtDevice *dev, RtMachine *m)
{
    CudaRt *c = dev->impl;
    const GpuInfo *in = gpu_info(c->g);
    StrBuf b = {0};
    gpu_describe(c->g, &b);
    snprintf(m->device, sizeof m->device, "%s", b.s);
    sb_free(&b);
    rt_machine_fact(m, "gpu", "%s", in->name);
    rt_machine_fact(m, "arch", "%s", in->arch);
    rt_machine_fact(m, "code", "%s", c->code);
    rt_machine_fact(m, "sms", "%d", in->sms);
    rt_machine_fact(m, "sm_clock_max_mhz", "%d", in->clock_khz / 1000);
    rt_machine_fact(m, "mem_clock_mhz", "%d", in->mem_clock_khz / 1000);
    rt_machine_fact(m, "l2_bytes", "%d", in->l2_bytes);
    rt_machine_fact(m, "driver_cuda", "%d.%d", in->driver_version / 1000, in->driver_version % 1000 / 10);
    rt_machine_fact(m, "nvrtc", "%d.%d", in->nvrtc_major, in->nvrtc_minor);
    if (c->blas)
        rt_machine_fact(m, "cublas", "%d", cublas_version(c->blas));
}

static void *crt_alloc(RtDevice *dev, size_t bytes, Diags *d)
{
    CUdeviceptr p = 0;
    if (!gpu_alloc(((CudaRt *)dev->impl)->g, bytes, &p, d))
        return NULL;
    return (void *)(uintptr_t)p;
}

static void crt_free(RtDevice *dev, void *p)
{
    gpu_free(((CudaRt *)dev->impl)->g, (CUdeviceptr)(uintptr_t)p);
}

static bool crt_upload(RtDevice *dev, void *dst, const void *src, size_t bytes, Diags *d)
{
    return gpu_upload(((CudaRt *)dev->impl)->g, (CUdeviceptr)(uintptr_t)dst, src, bytes, d);
}

static bool crt_download(RtDevice *dev, void *dst, const void *src, size_t bytes, Diags *d)
{
    GpuDevice *g = ((CudaRt *)dev->impl)->g;
    return gpu_sync(g, d) && gpu_download(g, dst, (CUdeviceptr)(uintptr_t)src, bytes, d);
}

/* Poison filled by the GPU, queued on the stream the runs use (so it lands before
 * the next run and outside its events).  The patterns are NaNs for floats (f64: the
 * 32-bit word 0x7ff80000 twice, a quiet NaN), INT32_MIN for i32, 0x80000000 twice
 * for i64 (a large negative no kernel of ours writes by accident) and 0xa5 for
 * bool, as rt_poison does on the host but for i64. */
static bool crt_poison(RtDevice *dev, void *dst, DType t, int64_t n, Diags *d)
{
    GpuDevice *g = ((CudaRt *)dev->impl)->g;
    const CudaDriver *cu = g->cu;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)dst;
    size_t bytes = (size_t)n * (size_t)dtype_bytes(t);
    CUresult r;
    switch (t) {
    case DT_F64: r = cu->MemsetD32Async(p, 0x7ff80000u, bytes / 4, NULL); break;
    case DT_F32: r = cu->MemsetD32Async(p, 0x7fc00000u, bytes / 4, NULL); break;
    case DT_F16: r = cu->MemsetD16Async(p, 0x7e00, bytes / 2, NULL); break;
    case DT_BF16: r = cu->MemsetD16Async(p, 0x7fc0, bytes / 2, NULL); break;
    case DT_I32:
    case DT_I64: r = cu->MemsetD32Async(p, 0x80000000u, bytes / 4, NULL); break;
    case DT_BOOL: r = cu->MemsetD8Async(p, 0xa5, bytes, NULL); break;
    default:
        diag_plain(d, DIAG_ERROR, "internal error: no poison for dtype %s", dtype_name(t));
        return false;
    }
    return cuda_check(r, "cuMemsetAsync (poison)", d);
}

static RtExec *crt_compile(RtDevice *dev, const Kernel *k, const char *target, Diags *d)
{
    CudaRt *c = dev->impl;
    CudaExec *x = xcalloc(1, sizeof *x);
    x->x.what = "perfc kernel";
    x->x.impl = x;
    if (!cg_cuda_generate(k, target, &x->m, d) || !cg_cuda_compile(&x->m, target, d) ||
        !(x->prog = gpu_load(c->g, &x->m, d))) {
        cg_cuda_module_free(&x->m);
        free(x);
        return NULL;
    }
    return &x->x;
}

static void *crt_build(RtDevice *dev, const Kernel *k, const char *target, Diags *d)
{
    (void)dev;
    CgCudaModule *m = xcalloc(1, sizeof *m);
    if (!cg_cuda_generate(k, target, m, d) || !cg_cuda_compile(m, target, d)) {
        cg_cuda_module_free(m);
        free(m);
        return NULL;
    }
    return m;
}

static RtExec *crt_adopt(RtDevice *dev, void *module, Diags *d)
{
    CudaRt *c = dev->impl;
    CgCudaModule *m = module;
    CudaExec *x = xcalloc(1, sizeof *x);
    x->x.what = "perfc kernel";
    x->x.impl = x;
    x->m = *m; /* the module's fields move into the exec; the shell is freed */
    free(m);
    if (!(x->prog = gpu_load(c->g, &x->m, d))) {
        cg_cuda_module_free(&x->m);
        free(x);
        return NULL;
    }
    return &x->x;
}

static RtExec *crt_library(RtDevice *dev, const char *lib, const RtGemm *g, char *why, size_t whylen, Diags *d)
{
    CudaRt *c = dev->impl;
    if (strcmp(lib, "cublas") != 0) {
        snprintf(why, whylen, "%s does not run on a GPU (use --compare cublas)", lib);
        return NULL;
    }
    if (g->ta != g->tb || (g->ta == DT_F64) != (g->tc == DT_F64) ||
        !(g->ta == DT_F64 || g->ta == DT_F32 || g->ta == DT_F16 || g->ta == DT_BF16)) {
        snprintf(why, whylen, "cuBLAS has no GEMM for %s x %s -> %s", dtype_name(g->ta), dtype_name(g->tb),
                 dtype_name(g->tc));
        return NULL;
    }
    if (!c->blas && !(c->blas = cublas_open(c->g, d)))
        return NULL;
    CudaExec *x = xcalloc(1, sizeof *x);
    x->x.what = g->batch > 1 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
    x->x.impl = x;
    x->is_lib = true;
    x->gemm = *g;
    /* cuBLASLt with its heuristic and a workspace is the library at its best, the way
     * frameworks call it (runtime/cublaslt.c); cublasGemmEx stays as the fallback */
    if (!c->lt_tried) {
        c->lt_tried = true;
        c->lt = cublaslt_open(c->g);
    }
    x->lt = cublaslt_plan(c->lt, g->ta, g->tc, g->trans_a, g->trans_b, g->batch, g->m, g->n, g->k, g->stride_a,
                          g->stride_b, g->stride_c, x->tf32);
    if (x->lt)
        x->x.what = cublaslt_plan_what(x->lt);
    return &x->x;
}

/* The golden reference of a large GEMM-family kernel, computed by cuBLAS in f64
 * (runtime/golden.c): the operands go up, DGEMM (strided-batched for a batch, a
 * zero stride broadcasting), the product comes down.  g == NULL asks only whether
 * cuBLAS can be loaded (without a diagnostic), so the golden can fall back to the
 * host when it cannot. */
static bool crt_gemm_f64(RtDevice *dev, const RtGemm *g, const double *a, const double *b, double *c, Diags *d)
{
    CudaRt *cr = dev->impl;
    if (!g) {
        if (!cr->blas) {
            Diags q;
            diag_init(&q);
            cr->blas = cublas_open(cr->g, &q);
            diag_free(&q);
        }
        return cr->blas != NULL;
    }
    if (!cr->blas && !(cr->blas = cublas_open(cr->g, d)))
        return false;
    int64_t na = (g->batch - 1) * g->stride_a + g->m * g->k, nb = (g->batch - 1) * g->stride_b + g->k * g->n,
            nc = (g->batch - 1) * g->stride_c + g->m * g->n;
    if (g->m == 0 || g->n == 0)
        return true;
    if (g->k == 0) {
        memset(c, 0, sizeof(double) * (size_t)nc);
        return true;
    }
    void *da = crt_alloc(dev, sizeof(double) * (size_t)na, d), *db = da ? crt_alloc(dev, sizeof(double) * (size_t)nb, d) : NULL,
         *dc = db ? crt_alloc(dev, sizeof(double) * (size_t)nc, d) : NULL;
    bool ok = dc && crt_upload(dev, da, a, sizeof(double) * (size_t)na, d) &&
              crt_upload(dev, db, b, sizeof(double) * (size_t)nb, d) &&
              cublas_gemm(cr->blas, DT_F64, DT_F64, g->trans_a, g->trans_b, g->batch, g->m, g->n, g->k, g->stride_a,
                          g->stride_b, g->stride_c, (CUdeviceptr)(uintptr_t)da, (CUdeviceptr)(uintptr_t)db,
                          (CUdeviceptr)(uintptr_t)dc, false, d) &&
              crt_download(dev, c, dc, sizeof(double) * (size_t)nc, d);
    if (dc)
        crt_free(dev, dc);
    if (db)
        crt_free(dev, db);
    if (da)
        crt_free(dev, da);
    return ok;
}

static bool crt_launch(CudaRt *c, CudaExec *x, void **bufs, Diags *d)
{
    if (x->is_lib && x->lt)
        return cublaslt_run(x->lt, (CUdeviceptr)(uintptr_t)bufs[0], (CUdeviceptr)(uintptr_t)bufs[1],
                            (CUdeviceptr)(uintptr_t)bufs[2], d);
    if (x->is_lib) {
        const RtGemm *g = &x->gemm;
        return cublas_gemm(c->blas, g->ta, g->tc, g->trans_a, g->trans_b, g->batch, g->m, g->n, g->k, g->stride_a,
                           g->stride_b, g->stride_c, (CUdeviceptr)(uintptr_t)bufs[0], (CUdeviceptr)(uintptr_t)bufs[1],
                           (CUdeviceptr)(uintptr_t)bufs[2], x->tf32, d);
    }
    CUdeviceptr *args = xcalloc((size_t)x->m.nargs + 1, sizeof *args);
    for (int i = 0; i < x->m.nargs; i++)
        args[i] = (CUdeviceptr)(uintptr_t)bufs[x->m.arg_bufs[i]];
    bool ok = gpu_launch(x->prog, args, d);
    free(args);
    return ok;
}

static bool crt_run(RtDevice *dev, RtExec *ex, void **bufs, double *ms, Diags *d)
{
    CudaRt *c = dev->impl;
    CudaExec *x = ex->impl;
    GpuDevice *g = c->g;
    /* every timed run starts from an idle device, or right behind the L2 flush
     * crt_flush queued, which keeps the GPU busy while the host enqueues the run
     * (see time_once) */
    bool queued = ms && g->flush_queued;
    g->flush_queued = false;
    if (!queued && !gpu_sync(g, d))
        return false;
    if (ms && !cuda_check(g->cu->EventRecord(g->ev0, NULL), "cuEventRecord", d))
        return false;
    if (!crt_launch(c, x, bufs, d))
        return false;
    if (ms) {
        float f = 0;
        if (!cuda_check(g->cu->EventRecord(g->ev1, NULL), "cuEventRecord", d) ||
            !cuda_check(g->cu->EventSynchronize(g->ev1), "cuEventSynchronize (a kernel failed)", d) ||
            !cuda_check(g->cu->EventElapsedTime(&f, g->ev0, g->ev1), "cuEventElapsedTime", d))
            return false;
        *ms = f;
    }
    return gpu_sync(g, d);
}

static void crt_flush(RtDevice *dev)
{
    GpuDevice *g = ((CudaRt *)dev->impl)->g;
    g->cu->CtxSynchronize();
    g->flush_queued = false;
    g->flush_queued = g->flush && queue_flush(g);
}

static void crt_release(RtDevice *dev, RtExec *ex)
{
    (void)dev;
    if (!ex) return;
    CudaExec *x = ex->impl;
    cublaslt_plan_free(x->lt);
    gpu_program_free(x->prog);
    cg_cuda_module_free(&x->m);
    free(x);
}

static void crt_close(RtDevice *dev)
{
    CudaRt *c = dev->impl;
    cublaslt_close(c->lt);
    cublas_close(c->blas);
    gpu_close(c->g);
    free(c);
    free(dev);
}

RtDevice *rt_cuda_open(const char *target, Diags *d)
{
    GpuDevice *g = gpu_open(0, d);
    if (!g)
        return NULL;
    const GpuInfo *in = gpu_info(g);
    /* sm_90a code runs on a 9.0 GPU only; plain sm_XY code on that architecture or a
     * newer one (through its PTX) */
    int how = target ? code_fits(target, in) : CODE_CUBIN;
    if (how == CODE_NONE) {
        refuse_code(target, in, d);
        gpu_close(g);
        return NULL;
    }
    CudaRt *c = xcalloc(1, sizeof *c);
    c->g = g;
    if (how == CODE_PTX)
        snprintf(c->code, sizeof c->code, "%s PTX, compiled by the driver for %s", target, in->arch);
    else
        snprintf(c->code, sizeof c->code, "%s cubin", target ? target : in->arch);
    RtDevice *dev = xcalloc(1, sizeof *dev);
    dev->name = "cuda";
    dev->impl = c;
    dev->describe = crt_describe;
    dev->alloc = crt_alloc;
    dev->free = crt_free;
    dev->upload = crt_upload;
    dev->download = crt_download;
    dev->poison = crt_poison;
    dev->compile = crt_compile;
    dev->library = crt_library;
    dev->run = crt_run;
    dev->flush = crt_flush;
    dev->adopt = crt_adopt;
    dev->build = crt_build;
    dev->release = crt_release;
    dev->close = crt_close;
    dev->gemm_f64 = crt_gemm_f64;
    dev->gemm_f64_name = "cublas-dgemm";
    return dev;
}
