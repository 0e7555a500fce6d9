/* The CUDA driver API, loaded with dlopen.  perfc must start, compile and emit on a
 * machine with no NVIDIA driver, so nothing links libcuda: the first run that needs
 * a GPU loads libcuda.so.1 here and reports plainly when it is absent.
 *
 * Versioned entry points (cuMemAlloc_v2, cuEventElapsedTime_v2, ...) are looked up
 * by the names cuda.h maps the plain names to, falling back to the plain ones that
 * older drivers export. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_driver.h"
#include "../codegen/cuda/cg_cuda.h"

static CudaDriver drv;
static bool tried, loaded;
static char why_not[512];

static void *sym(void *h, const char *a, const char *b)
{
    void *p = dlsym(h, a);
    if (!p && b)
        p = dlsym(h, b);
    return p;
}

const CudaDriver *cuda_driver(char *why, size_t n)
{
    if (!tried) {
        tried = true;
        cg_cuda_no_compile_cache();   /* before the driver reads it */
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(why_not, sizeof why_not, "no NVIDIA driver: libcuda.so.1 could not be loaded (%s)", dlerror());
        } else {
            bool ok = true;
#define S(f, a, b)                                                                   \
    do {                                                                             \
        *(void **)&drv.f = sym(h, a, b);                                             \
        if (!drv.f && ok) {                                                          \
            snprintf(why_not, sizeof why_not, "the NVIDIA driver lacks %s: too old", a); \
            ok = false;                                                              \
        }                                                                            \
    } while (0)
            S(Init, "cuInit", NULL);
            S(DriverGetVersion, "cuDriverGetVersion", NULL);
            S(DeviceGetCount, "cuDeviceGetCount", NULL);
            S(DeviceGet, "cuDeviceGet", NULL);
            S(DeviceGetName, "cuDeviceGetName", NULL);
            S(DeviceGetAttribute, "cuDeviceGetAttribute", NULL);
            S(DeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
            S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
            S(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
            S(CtxSetCurrent, "cuCtxSetCurrent", NULL);
            S(CtxSynchronize, "cuCtxSynchronize", NULL);
            S(GetErrorString, "cuGetErrorString", NULL);
            S(ModuleLoadData, "cuModuleLoadData", NULL);
            S(ModuleUnload, "cuModuleUnload", NULL);
            S(ModuleGetFunction, "cuModuleGetFunction", NULL);
            S(FuncGetAttribute, "cuFuncGetAttribute", NULL);
            S(FuncSetAttribute, "cuFuncSetAttribute", NULL);
            S(LaunchKernel, "cuLaunchKernel", NULL);
            S(MemAlloc, "cuMemAlloc_v2", "cuMemAlloc");
            S(MemFree, "cuMemFree_v2", "cuMemFree");
            S(MemcpyHtoD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD");
            S(MemcpyDtoH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
            S(MemsetD32, "cuMemsetD32_v2", "cuMemsetD32");
            S(MemsetD32Async, "cuMemsetD32Async", NULL);
            S(MemsetD16Async, "cuMemsetD16Async", NULL);
            S(MemsetD8Async, "cuMemsetD8Async", NULL);
            S(EventCreate, "cuEventCreate", NULL);
            S(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
            S(EventRecord, "cuEventRecord", NULL);
            S(EventSynchronize, "cuEventSynchronize", NULL);
            S(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
#undef S
            *(void **)&drv.TensorMapEncodeTiled = sym(h, "cuTensorMapEncodeTiled", NULL);
            if (ok) {
                CUresult r = drv.Init(0);
                if (r != 0) {
                    const char *s = NULL;
                    drv.GetErrorString(r, &s);
                    snprintf(why_not, sizeof why_not, "the NVIDIA driver is installed but cuInit failed: %s (%d); "
                             "is there a GPU?", s ? s : "unknown error", r);
                    ok = false;
                }
            }
            loaded = ok;
        }
    }
    if (!loaded && why && n)
        snprintf(why, n, "%s", why_not);
    return loaded ? &drv : NULL;
}

bool cuda_check(CUresult r, const char *what, Diags *d)
{
    if (r == 0)
        return true;
    const char *s = NULL;
    if (drv.GetErrorString)
        drv.GetErrorString(r, &s);
    diag_plain(d, DIAG_ERROR, "%s failed: %s (CUDA error %d)", what, s ? s : "unknown error", r);
    return false;
}
