/* Compiles the CUDA C of a general GPU variant (codegen/c/emit_cuda.c) as host C++,
 * for the lib_gpu_emul test (tests/lib/gpu_emul.sh): the CUDA keywords become
 * nothing or `inline`, the built-in thread coordinates are globals that the stand-in
 * driver (fake_cuda.c) sets to one block of one thread, so a launch's grid-stride
 * loop runs every iteration in order.  No C header is included: the generated code
 * defines its own fixed-width types, as it must under NVRTC. */
#ifndef PERFC_TESTS_LIB_CUDA_SHIM_H
#define PERFC_TESTS_LIB_CUDA_SHIM_H

struct pf_dim3 {
    unsigned x, y, z;
};
extern "C" {
pf_dim3 blockIdx, blockDim = {1, 1, 1}, gridDim = {1, 1, 1}, threadIdx;
float expf(float), logf(float), sqrtf(float), tanhf(float), erff(float), floorf(float), fabsf(float);
double exp(double), log(double), sqrt(double), tanh(double), erf(double), floor(double), fabs(double);
void *memcpy(void *, const void *, decltype(sizeof 0));
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }

#endif
