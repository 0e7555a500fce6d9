/* Checks a library built by `perfc lib` against the reference interpreter.
 *
 *   lib_check LIB.so NAME FILE.pdl KERNEL 'M=33,N=17,K=5' [--aligned] [--seed N]
 *       loads LIB.so, fills the kernel's inputs with seeded values, calls it through
 *       NAME_call and compares every output with ir_interp on the same inputs.
 *       Tensors are 64-byte aligned with --aligned, else deliberately 4 bytes off;
 *       sizes equal to a specialised set run the scheduled CPU code either way (the
 *       GPU's needs --aligned).
 *   lib_check LIB.so NAME FILE.pdl KERNEL 'M=..' --errors
 *       bad calls get their error code and a message, never a crash: a NULL tensor,
 *       a negative size, a size whose byte count overflows, an unknown kernel.
 *   lib_check LIB.so NAME FILE.pdl KERNEL 'N=10,M=9,W=3' --expect CODE
 *       the call with these sizes (tensors of 1 MiB each) must fail with CODE:
 *       2 for a shape that is negative or undefined, 3 for reads that would leave
 *       a tensor.
 *   lib_check LIB.so NAME FILE.pdl KERNEL 'M=33,N=17,K=5' --cuda [--aligned]
 *       the same comparison through NAME_call_cuda on device memory (cuMemAlloc,
 *       256-byte aligned with --aligned, else 4 bytes off); exit status 77 when
 *       there is no CUDA driver or GPU.  With --expect, the bad call goes to
 *       NAME_call_cuda on host pointers: it must be refused before any launch.
 * Exit status 0 when everything agrees. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lang/ast.h"
#include "passes/passes.h"

typedef int (*CallFn)(const char *, void *const *, const int64_t *);
typedef int (*CallCudaFn)(const char *, void *const *, const int64_t *, void *);
typedef const char *(*ErrFn)(void);

/* The CUDA driver for --cuda, loaded with dlopen (no CUDA at build time). */
typedef unsigned long long Dptr;
static struct {
    int (*Init)(unsigned);
    int (*DeviceGet)(int *, int);
    int (*PrimaryCtxRetain)(void **, int);
    int (*CtxSetCurrent)(void *);
    int (*MemAlloc)(Dptr *, size_t);
    int (*MemFree)(Dptr);
    int (*HtoD)(Dptr, const void *, size_t);
    int (*DtoH)(void *, Dptr, size_t);
    int (*Sync)(void);
} cu;

/* 0 ready, 77 no driver or GPU. */
static int cuda_open(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "lib_check: no CUDA driver: skipped\n");
        return 77;
    }
    struct { void **fn; const char *a, *b; } s[] = {
        {(void **)&cu.Init, "cuInit", 0}, {(void **)&cu.DeviceGet, "cuDeviceGet", 0},
        {(void **)&cu.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 0}, {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent", 0},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2", 0}, {(void **)&cu.MemFree, "cuMemFree_v2", 0},
        {(void **)&cu.HtoD, "cuMemcpyHtoD_v2", 0}, {(void **)&cu.DtoH, "cuMemcpyDtoH_v2", 0},
        {(void **)&cu.Sync, "cuCtxSynchronize", 0},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (!(*s[i].fn = dlsym(h, s[i].a))) {
            fprintf(stderr, "lib_check: the CUDA driver lacks %s\n", s[i].a);
            return 1;
        }
    int dev;
    void *ctx;
    if (cu.Init(0) || cu.DeviceGet(&dev, 0) || cu.PrimaryCtxRetain(&ctx, dev) || cu.CtxSetCurrent(ctx)) {
        fprintf(stderr, "lib_check: no usable GPU: skipped\n");
        return 77;
    }
    return 0;
}

/* Copies the nt host tensors to the GPU, runs the kernel there, copies them back. */
static int cuda_call(CallCudaFn fn, const char *kname, void **tens, const size_t *bytes, int nt, const int64_t *v,
                     bool aligned)
{
    Dptr *d = calloc((size_t)nt + 1, sizeof(Dptr));
    void **dt = calloc((size_t)nt + 1, sizeof(void *));
    int rc = 0;
    for (int i = 0; i < nt && !rc; i++) {
        if (cu.MemAlloc(&d[i], bytes[i] + 256) || cu.HtoD(d[i] + (aligned ? 0 : 4), tens[i], bytes[i])) {
            fprintf(stderr, "lib_check: cuMemAlloc/cuMemcpyHtoD failed\n");
            rc = -1;
        }
        dt[i] = (void *)(uintptr_t)(d[i] + (aligned ? 0 : 4));
    }
    if (!rc)
        rc = fn(kname, dt, v, NULL);
    if (!rc && cu.Sync()) {
        fprintf(stderr, "lib_check: the kernel failed on the GPU\n");
        rc = -1;
    }
    for (int i = 0; i < nt && !rc; i++)
        if (cu.DtoH(tens[i], d[i] + (aligned ? 0 : 4), bytes[i]))
            rc = -1;
    for (int i = 0; i < nt; i++)
        if (d[i])
            cu.MemFree(d[i]);
    free(d);
    free(dt);
    return rc;
}

static void store_elem(void *p, DType t, int64_t i, double v)
{
    switch (t) {
    case DT_F64: ((double *)p)[i] = v; break;
    case DT_F32: ((float *)p)[i] = (float)v; break;
    case DT_F16: ((uint16_t *)p)[i] = f32_to_f16_bits((float)v); break;
    case DT_BF16: ((uint16_t *)p)[i] = f32_to_bf16_bits((float)v); break;
    /* the NaN poison of an integer output is its most negative value */
    case DT_I32: ((int32_t *)p)[i] = v != v ? INT32_MIN : (int32_t)v; break;
    case DT_I64: ((int64_t *)p)[i] = v != v ? INT64_MIN : (int64_t)v; break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}

static double load_elem(const void *p, DType t, int64_t i)
{
    switch (t) {
    case DT_F64: return ((const double *)p)[i];
    case DT_F32: return ((const float *)p)[i];
    case DT_F16: return f16_bits_to_f32(((const uint16_t *)p)[i]);
    case DT_BF16: return bf16_bits_to_f32(((const uint16_t *)p)[i]);
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Relative tolerance of an output of dtype t computed from `terms` products. */
static double tolerance(DType t)
{
    switch (t) {
    case DT_F64: return 1e-9;
    case DT_F32: return 2e-4;
    case DT_F16: return 4e-3;
    case DT_BF16: return 3e-2;
    default: return 0;
    }
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: lib_check LIB.so NAME FILE.pdl KERNEL SIZES [--aligned] [--errors] [--seed N]\n");
        return 2;
    }
    const char *lib = argv[1], *name = argv[2], *file = argv[3], *kname = argv[4], *sizes = argv[5];
    bool aligned = false, errors = false, cuda = false;
    int expect = -1;
    uint64_t seed = 1;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--aligned"))
            aligned = true;
        else if (!strcmp(argv[i], "--cuda"))
            cuda = true;
        else if (!strcmp(argv[i], "--errors"))
            errors = true;
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
            expect = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "lib_check: %s\n", dlerror());
        return 1;
    }
    char sym[256];
    snprintf(sym, sizeof sym, "%s_call", name);
    CallFn call = (CallFn)dlsym(h, sym);
    snprintf(sym, sizeof sym, "%s_last_error", name);
    ErrFn err = (ErrFn)dlsym(h, sym);
    if (!call || !err) {
        fprintf(stderr, "lib_check: %s lacks %s_call or %s_last_error\n", lib, name, name);
        return 1;
    }
    snprintf(sym, sizeof sym, "%s_call_cuda", name);
    CallCudaFn call_cuda = (CallCudaFn)dlsym(h, sym);
    if (cuda) {
        if (!call_cuda) {
            fprintf(stderr, "lib_check: %s has no GPU code (%s)\n", lib, sym);
            return 1;
        }
        int st = cuda_open();
        if (st)
            return st;
    }

    /* the kernel, lowered with these sizes, for the interpreter */
    size_t len;
    char *text = read_file(file, &len);
    if (!text) {
        fprintf(stderr, "lib_check: cannot read %s: %s\n", file, strerror(errno));
        return 1;
    }
    Diags d;
    diag_init(&d);
    Arena *a = arena_new();
    Source src = {.path = file, .text = text, .len = len};
    Program *p = parse_program(a, &src, &d);
    if (p && !d.nerrors)
        sema_program(p, &d);
    AstKernel *ak = p && !d.nerrors ? program_find_kernel(p, kname) : NULL;
    if (!ak) {
        diag_flush(&d, stderr);
        fprintf(stderr, "lib_check: no kernel %s in %s\n", kname, file);
        return 1;
    }
    int64_t *values = calloc((size_t)ak->nparams + 1, sizeof(int64_t));
    bool *bound = calloc((size_t)ak->nparams + 1, sizeof(bool));
    for (const char *s = sizes; *s;) {
        const char *eq = strchr(s, '=');
        if (!eq)
            break;
        for (int j = 0; j < ak->nparams; j++)
            if (strlen(ak->params[j].name) == (size_t)(eq - s) && !strncmp(ak->params[j].name, s, (size_t)(eq - s))) {
                values[j] = strtoll(eq + 1, NULL, 10);
                bound[j] = true;
            }
        const char *c = strchr(eq, ',');
        s = c ? c + 1 : eq + strlen(eq);
    }
    for (int j = 0; j < ak->nparams; j++)
        if (!bound[j]) {
            fprintf(stderr, "lib_check: no value for size %s\n", ak->params[j].name);
            return 1;
        }
    if (expect >= 0) {
        /* the sizes are bad on purpose: no reference, just the error code */
        Kernel *u = lower_kernel(p, ak, NULL, NULL, &d);
        if (!u) {
            diag_flush(&d, stderr);
            return 1;
        }
        void *t[64] = {0};
        int n = 0;
        for (int b = 0; b < u->nbufs && n < 64; b++)
            if (u->bufs[b]->kind != BUF_TEMP)
                t[n++] = calloc(1, 1 << 20);
        /* (with --cuda the pointers are host memory: the call must fail before any launch) */
        int rc = cuda ? call_cuda(kname, t, values, NULL) : call(kname, t, values);
        printf("%s %s: %d %s\n", kname, sizes, rc, err());
        for (int i = 0; i < n; i++)
            free(t[i]);
        ir_free(u);
        int ok = rc == expect && *err();
        free(values);
        free(bound);
        arena_free(a);
        free(text);
        diag_free(&d);
        dlclose(h);
        return ok ? 0 : 1;
    }
    Kernel *k = lower_kernel(p, ak, values, bound, &d);
    if (!k || d.nerrors) {
        diag_flush(&d, stderr);
        return 1;
    }

    int nt = 0;
    for (int b = 0; b < k->nbufs; b++)
        nt += k->bufs[b]->kind != BUF_TEMP;
    void **tens = calloc((size_t)nt + 1, sizeof(void *));
    void **blocks = calloc((size_t)nt + 1, sizeof(void *));
    size_t *tbytes = calloc((size_t)nt + 1, sizeof(size_t));
    double **ref = ir_alloc_buffers(k, seed);
    if (!ref) {
        fprintf(stderr, "lib_check: cannot allocate the reference buffers\n");
        return 1;
    }
    int ti = 0;
    for (int b = 0; b < k->nbufs; b++) {
        const Buffer *bf = k->bufs[b];
        if (bf->kind == BUF_TEMP)
            continue;
        int64_t n = ir_buffer_elems(k, bf);
        size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)dtype_bytes(bf->dtype);
        blocks[ti] = aligned_alloc(64, (bytes + 64 + 63) / 64 * 64);
        /* unaligned: off the 64-byte line, but on the element's own alignment
         * (8 bytes for f64), which C callers always give */
        tens[ti] = (char *)blocks[ti] + (aligned ? 0 : dtype_bytes(bf->dtype) > 4 ? dtype_bytes(bf->dtype) : 4);
        tbytes[ti] = bytes;
        for (int64_t i = 0; i < n; i++)
            store_elem(tens[ti], bf->dtype, i, bf->kind == BUF_IN ? ref[b][i] : NAN);
        ti++;
    }
    int fails = 0;
    if (errors) {
        /* NULL tensor, negative size, overflowing size, unknown kernel */
        void **t2 = calloc((size_t)nt + 1, sizeof(void *));
        memcpy(t2, tens, sizeof(void *) * (size_t)nt);
        t2[0] = NULL;
        int rc = call(kname, t2, values);
        printf("NULL tensor: %d %s\n", rc, err());
        fails += rc != 1 || !*err();
        free(t2);
        int64_t *v2 = calloc((size_t)k->nparams + 1, sizeof(int64_t));
        memcpy(v2, values, sizeof(int64_t) * (size_t)k->nparams);
        if (k->nparams) {
            v2[0] = -3;
            rc = call(kname, tens, v2);
            printf("negative size: %d %s\n", rc, err());
            fails += rc != 2 || !*err();
            v2[0] = INT64_MAX / 2;
            rc = call(kname, tens, v2);
            printf("huge size: %d %s\n", rc, err());
            fails += rc != 2 || !*err();
        }
        free(v2);
        rc = call("no_such_kernel", tens, values);
        printf("unknown kernel: %d %s\n", rc, err());
        fails += rc != 5 || !*err();
        rc = call(kname, NULL, values);
        printf("NULL tensor array: %d %s\n", rc, err());
        fails += nt && (rc != 1 || !*err());
    } else {
        if (!ir_interp(k, ref, &d)) {
            diag_flush(&d, stderr);
            return 1;
        }
        int rc = cuda ? cuda_call(call_cuda, kname, tens, tbytes, nt, values, aligned) : call(kname, tens, values);
        if (rc) {
            fprintf(stderr, "lib_check: %s(%s) failed: %d %s\n", kname, sizes, rc, err());
            return 1;
        }
        ti = 0;
        for (int b = 0; b < k->nbufs; b++) {
            const Buffer *bf = k->bufs[b];
            if (bf->kind == BUF_TEMP)
                continue;
            if (bf->kind == BUF_OUT) {
                int64_t n = ir_buffer_elems(k, bf), bad = 0;
                double worst = 0, tol = tolerance(bf->dtype);
                for (int64_t i = 0; i < n; i++) {
                    double got = load_elem(tens[ti], bf->dtype, i), want = ref[b][i];
                    double e = fabs(got - want) / (1.0 + fabs(want));
                    if (!(e <= tol)) {
                        if (bad++ < 3)
                            fprintf(stderr, "  %s[%lld]: got %g, want %g\n", bf->name, (long long)i, got, want);
                    }
                    if (e > worst || e != e)
                        worst = e;
                }
                printf("%s %s %s (%s%s): %lld elements, worst relative error %.3g%s\n", kname, sizes, bf->name,
                       cuda ? "GPU, " : "", aligned ? "aligned" : "unaligned", (long long)n, worst, bad ? "  MISMATCH" : "");
                fails += bad != 0;
            }
            ti++;
        }
    }
    for (int i = 0; i < nt; i++)
        free(blocks[i]);
    free(blocks);
    free(tbytes);
    free(tens);
    ir_free_buffers(k, ref);
    ir_free(k);
    free(values);
    free(bound);
    arena_free(a);
    free(text);
    diag_free(&d);
    dlclose(h);
    return fails ? 1 : 0;
}
