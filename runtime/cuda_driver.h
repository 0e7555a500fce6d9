/* The GPU side of the runtime: the CUDA driver API loaded with dlopen (libcuda.so.1),
 * a GPU device (buffers, launches of a compiled CgCudaModule, honest timing) and
 * cuBLAS loaded the same way for `--compare cublas` and as a GEMM reference.
 *
 * Nothing here needs the CUDA toolkit to build: the few driver types and entry
 * points are declared below with the driver API's documented signatures.  On a
 * machine without a driver or GPU, gpu_open fails with a diagnostic that says the
 * run needs one; compiling and emitting never come here. */
#ifndef PERFC_RUNTIME_CUDA_DRIVER_H
#define PERFC_RUNTIME_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../codegen/cuda/cg_cuda.h"
#include "../ir/ir.h"

/* ---- runtime/cuda_driver.c: the driver API ---- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

typedef struct CudaDriver {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncGetAttribute)(int *, int, CUfunction);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*MemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    /* Optional (CUDA 12): NULL on older drivers, which then refuse code with tensor
     * maps (codegen/cuda/cg_cuda.h CgTmap).  The map is 128 bytes, 64-aligned; the
     * enums are passed as the ints the driver API documents. */
    CUresult (*TensorMapEncodeTiled)(void *map, int dtype, unsigned rank, void *addr, const uint64_t *dims,
                                     const uint64_t *strides, const unsigned *box, const unsigned *estrides,
                                     int interleave, int swizzle, int l2promo, int oobfill);
} CudaDriver;

/* Loads libcuda.so.1 and calls cuInit once.  NULL when there is no usable driver;
 * why[] then says what was missing. */
const CudaDriver *cuda_driver(char *why, size_t n);
/* "cuXxx failed: CUDA_ERROR_... text" into d; returns false when r != 0. */
bool cuda_check(CUresult r, const char *what, Diags *d);

/* ---- runtime/cuda_device.c: one GPU ---- */
typedef struct GpuInfo {
    char name[256];
    char arch[16];          /* "sm_90" */
    int cc_major, cc_minor;
    int sms;
    int l2_bytes;
    int clock_khz, mem_clock_khz, bus_bits;
    int max_threads_block, smem_block_optin, regs_block;
    size_t mem_bytes;
    int driver_version;     /* 13000 for CUDA 13.0 */
    int nvrtc_major, nvrtc_minor;
} GpuInfo;

typedef struct GpuDevice GpuDevice;
/* Opens GPU `ordinal` with its primary context.  Without a driver or GPU: NULL and
 * an error saying that the run needs an NVIDIA GPU and why none was found. */
GpuDevice *gpu_open(int ordinal, Diags *d);
void gpu_close(GpuDevice *g);
const GpuInfo *gpu_info(const GpuDevice *g);
const CudaDriver *gpu_driver(const GpuDevice *g);
/* One line naming the GPU, its clocks, memory, driver and NVRTC versions. */
void gpu_describe(const GpuDevice *g, StrBuf *out);

bool gpu_alloc(GpuDevice *g, size_t bytes, CUdeviceptr *out, Diags *d);
void gpu_free(GpuDevice *g, CUdeviceptr p);
bool gpu_upload(GpuDevice *g, CUdeviceptr dst, const void *src, size_t bytes, Diags *d);
bool gpu_download(GpuDevice *g, void *dst, CUdeviceptr src, size_t bytes, Diags *d);
bool gpu_sync(GpuDevice *g, Diags *d);

/* A compiled module loaded on the GPU.  gpu_load refuses (with the numbers) any
 * launch that needs more threads, shared memory or registers than this device has,
 * raises the dynamic shared-memory limit where a launch needs more than 48 KiB, and
 * fills the launches' registers / stack from cuFuncGetAttribute. */
typedef struct GpuProgram GpuProgram;
GpuProgram *gpu_load(GpuDevice *g, CgCudaModule *m, Diags *d);
void gpu_program_free(GpuProgram *p);
/* Launches every function of the module in order; args[i] is the device pointer of
 * Kernel.bufs[m->arg_bufs[i]].  Checks each launch's return code. */
bool gpu_launch(GpuProgram *p, const CUdeviceptr *args, Diags *d);

/* A kernel's buffers on the GPU, filled from and read back into the f64 host arrays
 * the interpreter uses (ir_alloc_buffers' layout): inputs are converted to their
 * dtype, outputs and temporaries poisoned with NaN (0x7f.. for integers) first. */
typedef struct GpuKernelBufs {
    int n;                  /* Kernel.nbufs */
    CUdeviceptr *ptr;       /* per buffer; 0 for staged (non-global) ones */
    size_t *bytes;
} GpuKernelBufs;
bool gpu_bufs_alloc(GpuDevice *g, const Kernel *k, GpuKernelBufs *b, Diags *d);
/* Uploads inputs (converted) and poisons every output and temporary. */
bool gpu_bufs_upload(GpuDevice *g, const Kernel *k, GpuKernelBufs *b, double *const *host, Diags *d);
/* Reads outputs back into host[i] (as doubles). */
bool gpu_bufs_download(GpuDevice *g, const Kernel *k, GpuKernelBufs *b, double **host, Diags *d);
void gpu_bufs_free(GpuDevice *g, GpuKernelBufs *b);
/* Argument vector of a module over these buffers (m->nargs entries, caller frees). */
CUdeviceptr *gpu_bufs_args(const GpuKernelBufs *b, const CgCudaModule *m);

/* Timing: warm-up, then repetitions until about target_s seconds (at least 5, at
 * most max_reps), each after a full device synchronisation and an L2 flush (a
 * write of twice the L2 size), timed with CUDA events around the work alone. */
typedef struct GpuTiming {
    double median_ms, min_ms, max_ms;
    int reps;
} GpuTiming;
typedef bool (*GpuWorkFn)(void *ctx, Diags *d);
bool gpu_time(GpuDevice *g, GpuWorkFn work, void *ctx, double target_s, int max_reps, GpuTiming *t, Diags *d);

/* ---- runtime/cublas.c: cuBLAS, loaded at run time ---- */
typedef struct Cublas Cublas;
/* NULL with a diagnostic when libcublas cannot be loaded. */
Cublas *cublas_open(GpuDevice *g, Diags *d);
void cublas_close(Cublas *c);
int cublas_version(const Cublas *c);
/* Row-major C[b] = op(A[b]) · op(B[b]) for b < batch, A: M x K (K x M when ta),
 * B: K x N (N x K when tb), C: M x N; sa, sb, sc: elements between batch entries (0
 * broadcasts).  ab is the dtype of A and B, cd of C.  Compute type: f64 for f64, f32
 * otherwise (CUBLAS_COMPUTE_32F: no TF32 unless allow_tf32).  batch > 1 goes through
 * cublasGemmStridedBatchedEx. */
bool cublas_gemm(Cublas *c, DType ab, DType cd, bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                 int64_t sa, int64_t sb, int64_t sc, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, bool allow_tf32,
                 Diags *d);

/* ---- runtime/cublaslt.c: cuBLASLt, the baseline at its best ---- */
typedef struct CublasLt CublasLt;
typedef struct LtPlan LtPlan;
/* NULL (silently) when libcublasLt cannot be loaded or its workspace allocated. */
CublasLt *cublaslt_open(GpuDevice *g);
void cublaslt_close(CublasLt *c);
/* The same product as cublas_gemm, planned: descriptors and up to 8 algorithms from
 * the heuristic.  NULL when c is NULL or the heuristic offers nothing. */
LtPlan *cublaslt_plan(CublasLt *c, DType ab, DType cd, bool ta, bool tb, int64_t batch, int64_t M, int64_t N,
                      int64_t K, int64_t sa, int64_t sb, int64_t sc, bool allow_tf32);
/* Runs the product; the first call times every candidate on these buffers and
 * keeps the fastest (so the first call must not be a timed one). */
bool cublaslt_run(LtPlan *p, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, Diags *d);
/* "cublasLtMatmul (fastest of N heuristic algorithms, 32 MiB workspace)" once chosen. */
const char *cublaslt_plan_what(const LtPlan *p);
void cublaslt_plan_free(LtPlan *p);

/* ---- runtime/cuda_device.c: the harness' RtDevice (runtime/runtime.h) ---- */
/* The GPU as an RtDevice for targets sm_*: compile() generates CUDA C, compiles it
 * with NVRTC for `target` and loads it (refusing a target that is not this GPU's);
 * library("cublas") runs cuBLAS on the same buffers; run() times with events after
 * a full synchronisation; flush() evicts L2.  NULL with a diagnostic saying that
 * the run needs an NVIDIA GPU when there is no driver or GPU. */
struct RtDevice;
struct RtDevice *rt_cuda_open(const char *target, Diags *d);

#endif
