/* A CPU stand-in for the CUDA driver (libcuda.so.1), for the lib_gpu_emul test
 * (tests/lib/gpu_emul.sh): it lets the whole GPU path of a generated library run on
 * a machine without a GPU -- the driver loaded with dlopen, the code chosen for the
 * GPU, the host checks, temporaries, every launch's arguments -- with the general
 * variant's CUDA C compiled as host C++ (cuda_shim.h) standing in for its PTX.
 *
 * Device memory is host memory.  The "GPU" reports compute capability 12.0, so the
 * library loads the PTX of its newest architecture (the JIT path); cuModuleLoadData
 * reads from that PTX how many parameters each entry point takes, and loads the
 * host build of the same code named by PERFC_FAKE_CUDA_MODULE.  cuLaunchKernel calls
 * the host function once with one block of one thread, whose grid-stride loop then
 * covers every iteration.  Every parameter of a general variant is 8 bytes (a
 * pointer or an int64), so the call passes them as that many 64-bit integers. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUptr;
enum { MAX_FN = 64, MAX_ARGS = 32 };

static int ctx_current;
static char ctx_token;
static void *module;
static struct {
    char name[64];
    int nparams;
} entry[MAX_FN];
static int nentry;

int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &ctx_token; return 0; }
int cuCtxSetCurrent(void *c) { ctx_current = c != NULL; return 0; }
int cuCtxGetCurrent(void **c) { *c = ctx_current ? &ctx_token : NULL; return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuStreamSynchronize(void *s) { (void)s; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { (void)f; (void)a; (void)v; return 0; }
int cuGetErrorString(int r, const char **s) { (void)r; *s = "an error of the stand-in driver"; return 0; }

int cuDeviceGetAttribute(int *v, int attr, int d)
{
    (void)d;
    *v = attr == 75 ? 12 : 0; /* COMPUTE_CAPABILITY_MAJOR 12, MINOR 0, the rest 0 */
    return 0;
}

int cuMemAlloc_v2(CUptr *p, size_t n)
{
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    *p = (CUptr)(uintptr_t)m;
    return m ? 0 : 2;
}
int cuMemFree_v2(CUptr p) { free((void *)(uintptr_t)p); return 0; }
int cuMemAllocAsync(CUptr *p, size_t n, void *s) { (void)s; return cuMemAlloc_v2(p, n); }
int cuMemFreeAsync(CUptr p, void *s) { (void)s; return cuMemFree_v2(p); }
int cuMemcpyHtoD_v2(CUptr d, const void *h, size_t n) { memcpy((void *)(uintptr_t)d, h, n); return 0; }
int cuMemcpyDtoH_v2(void *h, CUptr d, size_t n) { memcpy(h, (const void *)(uintptr_t)d, n); return 0; }

/* PTX: ".entry NAME(" then ".param" lines up to ")" */
int cuModuleLoadData(void **m, const void *image)
{
    const char *ptx = image;
    if (!ptx || strncmp(ptx, "//", 2) != 0) {
        fprintf(stderr, "fake_cuda: the image is not PTX (the library should JIT its PTX for sm_120)\n");
        return 200;
    }
    nentry = 0;
    for (const char *e = strstr(ptx, ".entry "); e && nentry < MAX_FN; e = strstr(e + 1, ".entry ")) {
        const char *n = e + 7, *open = strchr(n, '(');
        if (!open || open - n >= 64)
            return 218;
        memcpy(entry[nentry].name, n, (size_t)(open - n));
        entry[nentry].name[open - n] = 0;
        const char *close = strchr(open, ')');
        int np = 0;
        for (const char *q = strstr(open, ".param"); q && q < close; q = strstr(q + 1, ".param"))
            np++;
        entry[nentry++].nparams = np;
    }
    const char *path = getenv("PERFC_FAKE_CUDA_MODULE");
    if (!module && (!path || !(module = dlopen(path, RTLD_NOW | RTLD_LOCAL)))) {
        fprintf(stderr, "fake_cuda: PERFC_FAKE_CUDA_MODULE: %s\n", path ? dlerror() : "not set");
        return 200;
    }
    *m = module;
    return 0;
}

int cuModuleGetFunction(void **f, void *m, const char *name)
{
    for (int i = 0; i < nentry; i++)
        if (!strcmp(entry[i].name, name)) {
            *f = dlsym(m, name);
            return *f ? 0 : 500;
        }
    return 500; /* not in the PTX */
}

typedef void (*Fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                   uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                   uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                   uint64_t, uint64_t);

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra)
{
    (void)stream;
    (void)extra;
    int np = -1;
    for (int i = 0; i < nentry; i++) {
        void *g = dlsym(module, entry[i].name);
        if (g == f)
            np = entry[i].nparams;
    }
    if (np < 0 || np > MAX_ARGS || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || shared) {
        fprintf(stderr, "fake_cuda: bad launch (%d parameters, grid %u %u %u, block %u %u %u, shared %u)\n", np, gx,
                gy, gz, bx, by, bz, shared);
        return 1;
    }
    uint64_t a[MAX_ARGS] = {0};
    for (int i = 0; i < np; i++)
        memcpy(&a[i], params[i], 8);
    /* extra arguments past a function's own are ignored by it (all in 64-bit
     * integer registers or stack slots under the x86-64 and AArch64 C ABIs) */
    ((Fn)f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16],
            a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30], a[31]);
    return 0;
}
