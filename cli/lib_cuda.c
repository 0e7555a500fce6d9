/* The GPU part of a `perfc lib` library (-target host,sm_80,sm_90a).
 *
 * For each exported kernel and each size set, the kernel is scheduled for the GPU
 * (the file's `for gpu` schedule, else the back end's default mapping) and compiled
 * by NVRTC for every architecture named: a cubin per architecture plus its PTX.
 * Both are embedded in the library.  NAME_KERNEL_cuda(tensors..., sizes..., stream)
 * takes device pointers; on its first call on a CUDA context it loads the code
 * through the driver API (libcuda.so.1 with dlopen: nothing of CUDA is linked, so
 * the CPU part links and runs without it): the cubin built for the GPU's own
 * architecture, else the PTX of the newest older architecture without the `a`
 * suffix (the driver compiles it for the GPU, so new GPUs run old libraries).
 *
 * With --autotune each GPU variant gets the tuner's winner (which needs that GPU at
 * build time; without one the file's schedule stays, with a note).
 *
 * This specialised code serves the sizes it was built for (the CUDA back end compiles
 * sizes in) and runs only when every tensor is 256-byte aligned, as cuMemAlloc
 * aligns (its vector and TMA accesses assume alignment); every other call runs the
 * kernel's general GPU variant (cli/lib_cuda_general.c), correct for any size.  Global
 * temporaries of specialised code are allocated on the first call per context and
 * kept. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c/cg_c.h"
#include "lib.h"

static bool set_applies(const SizeSet *set, const AstKernel *ak, const char *kname, Options *o)
{
    if (set->kernel && strcmp(set->kernel, kname))
        return false;
    for (int i = 0; i < set->n; i++) {
        bool found = false;
        for (int j = 0; j < ak->nparams; j++)
            if (!strcmp(ak->params[j].name, set->d[i].name)) {
                o->defines[o->ndefines++] = set->d[i];
                found = true;
            }
        if (!found)
            return false;
    }
    return set->n > 0;
}

void lib_cuda_variants(Lib *L, LibKernel *lk, const SizeSet *set, bool defaults_only)
{
    GpuVariant v;
    memset(&v, 0, sizeof v);
    bool any = false;
    for (int g = 0; g < L->ngpu; g++) {
        char *sched = NULL; /* a tuned schedule, freed after the compilation */
        Options o;
        memset(&o, 0, sizeof o);
        o.file = lk->file;
        o.target = L->gpus[g];
        o.kernel = lk->name;
        Compilation c;
        compilation_init(&c, &o);
        bool ok = compile_front(&c) == 0;
        AstKernel *ak = ok ? program_find_kernel(c.prog, lk->name) : NULL;
        if (ak) {
            bool applies = defaults_only || set_applies(set, ak, lk->name, &o);
            int bound = 0;
            for (int j = 0; j < ak->nparams; j++) {
                bool b = ak->params[j].has_default;
                for (int i = 0; i < o.ndefines; i++)
                    b |= !strcmp(o.defines[i].name, ak->params[j].name);
                bound += b;
            }
            if (!applies || bound < ak->nparams) {
                compilation_free(&c);
                return; /* the set is not for this kernel: no variant on any GPU */
            }
            ok = compile_kernel(&c) == 0;
            if (ok && L->o->autotune)
                ok = lib_autotune(L, lk->name, L->gpus[g], &c, &o, &sched) == 0;
        }
        if (ok && ak) {
            Kernel *k = c.kernel;
            if (!v.values) {
                v.values = xcalloc((size_t)k->nparams + 1, sizeof(int64_t));
                for (int j = 0; j < k->nparams; j++)
                    v.values[j] = k->params[j].value;
            }
            if (k->nbufs > v.nbufs) { /* each architecture's schedule may add buffers */
                v.temp_bytes = xrealloc(v.temp_bytes, sizeof(int64_t) * (size_t)(k->nbufs + 1));
                memset(v.temp_bytes + v.nbufs, 0, sizeof(int64_t) * (size_t)(k->nbufs + 1 - v.nbufs));
                v.nbufs = k->nbufs;
            }
            for (int b = 0; b < k->nbufs; b++)
                if (k->bufs[b]->kind == BUF_TEMP && k->bufs[b]->mem == MEM_GLOBAL) {
                    int64_t el = ir_buffer_elems(k, k->bufs[b]);
                    int64_t by = el < 0 ? 0 : el * dtype_bytes(k->bufs[b]->dtype);
                    if (by > v.temp_bytes[b])
                        v.temp_bytes[b] = by;
                }
            ok = cg_cuda_generate(k, L->gpus[g], &v.mod[g], &c.diags) && cg_cuda_compile(&v.mod[g], L->gpus[g], &c.diags);
            v.built[g] = ok;
            any |= ok;
        }
        if (!ok) {
            fprintf(stderr, "perfc lib: note: no %s code for %s", L->gpus[g], lk->name);
            if (v.values)
                for (int j = 0; j < lk->gen->nparams; j++)
                    fprintf(stderr, "%s%s=%" PRId64, j ? "," : " at ", lk->gen->params[j].name, v.values[j]);
            fprintf(stderr, ":\n");
            diag_flush(&c.diags, stderr);
            cg_cuda_module_free(&v.mod[g]);
            memset(&v.mod[g], 0, sizeof v.mod[g]);
        } else {
            diag_flush(&c.diags, stderr);
        }
        compilation_free(&c);
        free(sched);
    }
    bool dup = false;
    for (int i = 0; any && i < lk->ngvar; i++)
        dup |= !memcmp(lk->gvar[i].values, v.values, sizeof(int64_t) * (size_t)lk->gen->nparams);
    if (!any || dup) {
        for (int g = 0; g < L->ngpu; g++)
            if (v.built[g])
                cg_cuda_module_free(&v.mod[g]);
        free(v.values);
        free(v.temp_bytes);
        return;
    }
    lk->gvar = xrealloc(lk->gvar, sizeof(GpuVariant) * (size_t)(lk->ngvar + 1));
    lk->gvar[lk->ngvar++] = v;
}

void lib_cuda_free(LibKernel *lk)
{
    lib_cuda_general_free(&lk->ggen);
    for (int i = 0; i < lk->ngvar; i++) {
        for (int g = 0; g < LIB_MAX_GPUS; g++)
            if (lk->gvar[i].built[g])
                cg_cuda_module_free(&lk->gvar[i].mod[g]);
        free(lk->gvar[i].values);
        free(lk->gvar[i].temp_bytes);
    }
    free(lk->gvar);
}

void lib_cuda_header(const Lib *L, StrBuf *h)
{
    if (!L->ngpu)
        return;
    const char *N = L->o->name;
    sb_puts(h, "/* GPU entry points: tensors are device pointers, stream a CUstream (NULL: the\n"
               " * default stream); the call only enqueues work.  The size sets listed with each\n"
               " * kernel above run tuned GPU code (tensors 256-byte aligned); any other call runs\n"
               " * its general GPU variant. */\n");
    for (int i = 0; i < L->nk; i++) {
        lib_signature(L, &L->k[i], "_cuda", true, h);
        sb_puts(h, ";\n");
    }
    sb_printf(h, "int %s_call_cuda(const char *kernel, void *const *tensors, const int64_t *sizes, void *stream);\n\n",
              N);
}

/* The driver API loader and launcher: one copy per library, all static. */
static const char LOADER[] =
    "\n/* ---- GPU code: the CUDA driver, loaded with dlopen on the first GPU call ---- */\n"
    "#include <dlfcn.h>\n"
    "#include <pthread.h>\n"
    "typedef int pf_CUresult;\n"
    "typedef void *pf_CUctx, *pf_CUmod, *pf_CUfn;\n"
    "typedef unsigned long long pf_CUptr;\n"
    "typedef struct pf_cu_launch { const char *name; unsigned grid[3], block[3], shared; } pf_cu_launch;\n"
    "/* a tensor map passed after the buffers (bulk tensor copies): buffer, rank, sizes innermost first */\n"
    "typedef struct pf_cu_tmap { int buf; unsigned rank; unsigned long long dims[5], strides[4]; unsigned box[5]; } pf_cu_tmap;\n"
    "typedef struct pf_cu_code {\n"
    "    const char *arch; int major, minor, suffixed;\n"
    "    const unsigned char *cubin; const char *ptx;\n"
    "    const pf_cu_launch *launch; int nlaunch;\n"
    "    const pf_cu_tmap *tmap; int ntmap;\n"
    "} pf_cu_code;\n"
    "typedef struct pf_cu_variant {\n"
    "    const pf_cu_code *code; int ncode;\n"
    "    const int *arg; int nargs;            /* buffers passed to every launch */\n"
    "    const int64_t *temp_bytes; int nbufs; /* global temporaries */\n"
    "    pf_CUctx ctx; pf_CUmod mod; pf_CUfn *fn; pf_CUptr *temp; const pf_cu_code *used; int ptx;\n"
    "} pf_cu_variant;\n"
    "static struct {\n"
    "    int state; /* 0 untried, 1 ready, -1 unavailable */\n"
    "    char why[256];\n"
    "    pf_CUresult (*Init)(unsigned);\n"
    "    pf_CUresult (*CtxGetCurrent)(pf_CUctx *);\n"
    "    pf_CUresult (*CtxSetCurrent)(pf_CUctx);\n"
    "    pf_CUresult (*CtxGetDevice)(int *);\n"
    "    pf_CUresult (*DeviceGet)(int *, int);\n"
    "    pf_CUresult (*PrimaryCtxRetain)(pf_CUctx *, int);\n"
    "    pf_CUresult (*DeviceGetAttribute)(int *, int, int);\n"
    "    pf_CUresult (*ModuleLoadData)(pf_CUmod *, const void *);\n"
    "    pf_CUresult (*ModuleGetFunction)(pf_CUfn *, pf_CUmod, const char *);\n"
    "    pf_CUresult (*FuncSetAttribute)(pf_CUfn, int, int);\n"
    "    pf_CUresult (*LaunchKernel)(pf_CUfn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,\n"
    "                                void *, void **, void **);\n"
    "    pf_CUresult (*MemAlloc)(pf_CUptr *, size_t);\n"
    "    pf_CUresult (*GetErrorString)(pf_CUresult, const char **);\n"
    "    pf_CUresult (*MemFree)(pf_CUptr);\n"
    "    pf_CUresult (*StreamSynchronize)(void *);\n"
    "    /* optional (CUDA 11.2): stream-ordered temporaries of general variants */\n"
    "    pf_CUresult (*MemAllocAsync)(pf_CUptr *, size_t, void *);\n"
    "    pf_CUresult (*MemFreeAsync)(pf_CUptr, void *);\n"
    "    /* optional (CUDA 12): code with tensor maps needs it */\n"
    "    pf_CUresult (*TensorMapEncodeTiled)(void *, int, unsigned, void *, const unsigned long long *,\n"
    "                                        const unsigned long long *, const unsigned *, const unsigned *, int, int,\n"
    "                                        int, int);\n"
    "} pf_cu;\n"
    "static pthread_mutex_t pf_cu_lock = PTHREAD_MUTEX_INITIALIZER;\n"
    "static int pf_cu_open(void) /* under pf_cu_lock */\n"
    "{\n"
    "    if (pf_cu.state)\n"
    "        return pf_cu.state > 0;\n"
    "    pf_cu.state = -1;\n"
    "    void *h = dlopen(\"libcuda.so.1\", RTLD_NOW | RTLD_LOCAL);\n"
    "    if (!h) {\n"
    "        snprintf(pf_cu.why, sizeof pf_cu.why, \"no CUDA driver (libcuda.so.1: %s)\", dlerror());\n"
    "        return 0;\n"
    "    }\n"
    "#define PF_SYM(f, a, b) if (!(*(void **)&pf_cu.f = dlsym(h, a)) && (!b || !(*(void **)&pf_cu.f = dlsym(h, b ? b : a)))) { \\\n"
    "        snprintf(pf_cu.why, sizeof pf_cu.why, \"the CUDA driver lacks %s\", a); return 0; }\n"
    "    PF_SYM(Init, \"cuInit\", 0) PF_SYM(CtxGetCurrent, \"cuCtxGetCurrent\", 0)\n"
    "    PF_SYM(CtxSetCurrent, \"cuCtxSetCurrent\", 0) PF_SYM(CtxGetDevice, \"cuCtxGetDevice\", 0)\n"
    "    PF_SYM(DeviceGet, \"cuDeviceGet\", 0) PF_SYM(PrimaryCtxRetain, \"cuDevicePrimaryCtxRetain\", 0)\n"
    "    PF_SYM(DeviceGetAttribute, \"cuDeviceGetAttribute\", 0) PF_SYM(ModuleLoadData, \"cuModuleLoadData\", 0)\n"
    "    PF_SYM(ModuleGetFunction, \"cuModuleGetFunction\", 0) PF_SYM(FuncSetAttribute, \"cuFuncSetAttribute\", 0)\n"
    "    PF_SYM(LaunchKernel, \"cuLaunchKernel\", 0) PF_SYM(MemAlloc, \"cuMemAlloc_v2\", \"cuMemAlloc\")\n"
    "    PF_SYM(GetErrorString, \"cuGetErrorString\", 0) PF_SYM(MemFree, \"cuMemFree_v2\", \"cuMemFree\")\n"
    "    PF_SYM(StreamSynchronize, \"cuStreamSynchronize\", 0)\n"
    "#undef PF_SYM\n"
    "    *(void **)&pf_cu.MemAllocAsync = dlsym(h, \"cuMemAllocAsync\");\n"
    "    *(void **)&pf_cu.MemFreeAsync = dlsym(h, \"cuMemFreeAsync\");\n"
    "    *(void **)&pf_cu.TensorMapEncodeTiled = dlsym(h, \"cuTensorMapEncodeTiled\");\n"
    "    if (!pf_cu.MemAllocAsync || !pf_cu.MemFreeAsync)\n"
    "        pf_cu.MemAllocAsync = 0;\n"
    "    if (pf_cu.Init(0)) {\n"
    "        snprintf(pf_cu.why, sizeof pf_cu.why, \"cuInit failed: no usable GPU\");\n"
    "        return 0;\n"
    "    }\n"
    "    pf_cu.state = 1;\n"
    "    return 1;\n"
    "}\n"
    "static int pf_cu_fail(const char *k, const char *what, pf_CUresult r)\n"
    "{\n"
    "    const char *s = 0;\n"
    "    if (pf_cu.GetErrorString)\n"
    "        pf_cu.GetErrorString(r, &s);\n"
    "    return pf_fail(PERFC_LIB_EDEVICE, \"%s: %s failed: %s (CUDA error %d)\", k, what, s ? s : \"?\", r);\n"
    "}\n"
    "/* Loads v's code for the current context (under pf_cu_lock). */\n"
    "static int pf_cu_prepare(pf_cu_variant *v, const char *k)\n"
    "{\n"
    "    pf_CUctx ctx = 0;\n"
    "    pf_CUresult r;\n"
    "    if ((r = pf_cu.CtxGetCurrent(&ctx)))\n"
    "        return pf_cu_fail(k, \"cuCtxGetCurrent\", r);\n"
    "    if (!ctx) { /* no context yet: the primary one of device 0, as the runtime API does */\n"
    "        int dev0;\n"
    "        if ((r = pf_cu.DeviceGet(&dev0, 0)) || (r = pf_cu.PrimaryCtxRetain(&ctx, dev0)) ||\n"
    "            (r = pf_cu.CtxSetCurrent(ctx)))\n"
    "            return pf_cu_fail(k, \"making the primary context of device 0 current\", r);\n"
    "    }\n"
    "    if (v->ctx == ctx)\n"
    "        return PERFC_LIB_OK;\n"
    "    int dev, major = 0, minor = 0;\n"
    "    if ((r = pf_cu.CtxGetDevice(&dev)) || (r = pf_cu.DeviceGetAttribute(&major, 75, dev)) ||\n"
    "        (r = pf_cu.DeviceGetAttribute(&minor, 76, dev)))\n"
    "        return pf_cu_fail(k, \"reading the GPU's compute capability\", r);\n"
    "    /* the GPU's own cubin, else the newest older PTX without the `a` suffix */\n"
    "    const pf_cu_code *c = 0;\n"
    "    const void *image = 0;\n"
    "    for (int i = 0; i < v->ncode; i++)\n"
    "        if (v->code[i].major == major && v->code[i].minor == minor) {\n"
    "            c = &v->code[i];\n"
    "            image = c->cubin;\n"
    "        }\n"
    "    const pf_cu_code *best = 0;\n"
    "    for (int i = 0; !c && i < v->ncode; i++) {\n"
    "        const pf_cu_code *x = &v->code[i];\n"
    "        if (!x->suffixed && (x->major < major || (x->major == major && x->minor < minor)) &&\n"
    "            (!best || x->major > best->major || (x->major == best->major && x->minor > best->minor)))\n"
    "            best = x;\n"
    "    }\n"
    "    if (!c && best) {\n"
    "        c = best;\n"
    "        image = best->ptx;\n"
    "    }\n"
    "    if (!c) {\n"
    "        char built[128] = \"\";\n"
    "        for (int i = 0; i < v->ncode; i++)\n"
    "            snprintf(built + strlen(built), sizeof built - strlen(built), \"%s%s\", i ? \", \" : \"\", v->code[i].arch);\n"
    "        return pf_fail(PERFC_LIB_EDEVICE, \"%s: no code for this GPU (sm_%d%d); the library has %s\", k, major,\n"
    "                       minor, built);\n"
    "    }\n"
    "    pf_CUmod mod;\n"
    "    if ((r = pf_cu.ModuleLoadData(&mod, image)))\n"
    "        return pf_cu_fail(k, c->cubin == image ? \"cuModuleLoadData\" : \"cuModuleLoadData (PTX)\", r);\n"
    "    pf_CUfn *fn = calloc((size_t)c->nlaunch + 1, sizeof *fn);\n"
    "    pf_CUptr *temp = calloc((size_t)v->nbufs + 1, sizeof *temp);\n"
    "    if (!fn || !temp) {\n"
    "        free(fn);\n"
    "        free(temp);\n"
    "        return pf_fail(PERFC_LIB_ENOMEM, \"%s: out of memory\", k);\n"
    "    }\n"
    "    for (int i = 0; i < c->nlaunch; i++) {\n"
    "        if ((r = pf_cu.ModuleGetFunction(&fn[i], mod, c->launch[i].name)))\n"
    "            return pf_cu_fail(k, \"cuModuleGetFunction\", r);\n"
    "        if (c->launch[i].shared > 48 * 1024 && (r = pf_cu.FuncSetAttribute(fn[i], 8, (int)c->launch[i].shared)))\n"
    "            return pf_cu_fail(k, \"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)\", r);\n"
    "    }\n"
    "    for (int b = 0; b < v->nbufs; b++)\n"
    "        if (v->temp_bytes[b] > 0 && (r = pf_cu.MemAlloc(&temp[b], (size_t)v->temp_bytes[b])))\n"
    "            return pf_cu_fail(k, \"cuMemAlloc (a temporary)\", r);\n"
    "    v->mod = mod;\n"
    "    v->fn = fn;\n"
    "    v->temp = temp;\n"
    "    v->used = c;\n"
    "    v->ptx = image != (const void *)c->cubin;\n"
    "    v->ctx = ctx;\n"
    "    return PERFC_LIB_OK;\n"
    "}\n"
    "static int pf_cu_run(pf_cu_variant *v, void **bufs, void *stream, const char *k)\n"
    "{\n"
    "    pthread_mutex_lock(&pf_cu_lock);\n"
    "    int rc = pf_cu_open() ? pf_cu_prepare(v, k) : pf_fail(PERFC_LIB_EDEVICE, \"%s: %s\", k, pf_cu.why);\n"
    "    const pf_cu_code *c = v->used;\n"
    "    pthread_mutex_unlock(&pf_cu_lock);\n"
    "    if (rc)\n"
    "        return rc;\n"
    "    if (v->nargs > 64)\n"
    "        return pf_fail(PERFC_LIB_EDEVICE, \"%s: more than 64 buffers\", k);\n"
    "    if (c->ntmap > 8)\n"
    "        return pf_fail(PERFC_LIB_EDEVICE, \"%s: more than 8 tensor maps\", k);\n"
    "    pf_CUptr args[64];\n"
    "    void *params[72];\n"
    "    unsigned long long maps[8][16] __attribute__((aligned(64)));\n"
    "    for (int i = 0; i < v->nargs; i++) {\n"
    "        int b = v->arg[i];\n"
    "        args[i] = v->temp_bytes[b] > 0 ? v->temp[b] : (pf_CUptr)(uintptr_t)bufs[b];\n"
    "        params[i] = &args[i];\n"
    "    }\n"
    "    for (int t = 0; t < c->ntmap; t++) { /* 16-bit elements, 128-byte swizzle, 256-byte L2 promotion, zeros outside */\n"
    "        static const unsigned ones[5] = {1, 1, 1, 1, 1};\n"
    "        const pf_cu_tmap *m = &c->tmap[t];\n"
    "        pf_CUptr a = 0;\n"
    "        for (int i = 0; i < v->nargs; i++)\n"
    "            if (v->arg[i] == m->buf)\n"
    "                a = args[i];\n"
    "        if (!pf_cu.TensorMapEncodeTiled)\n"
    "            return pf_fail(PERFC_LIB_EDEVICE, \"%s: the CUDA driver lacks cuTensorMapEncodeTiled (CUDA 12)\", k);\n"
    "        pf_CUresult r = pf_cu.TensorMapEncodeTiled(maps[t], 1, m->rank, (void *)(uintptr_t)a, m->dims, m->strides,\n"
    "                                                   m->box, ones, 0, 3, 3, 0);\n"
    "        if (r)\n"
    "            return pf_cu_fail(k, \"cuTensorMapEncodeTiled\", r);\n"
    "        params[v->nargs + t] = maps[t];\n"
    "    }\n"
    "    for (int i = 0; i < c->nlaunch; i++) {\n"
    "        const pf_cu_launch *L = &c->launch[i];\n"
    "        pf_CUresult r = pf_cu.LaunchKernel(v->fn[i], L->grid[0], L->grid[1], L->grid[2], L->block[0], L->block[1],\n"
    "                                           L->block[2], L->shared, stream, params, 0);\n"
    "        if (r)\n"
    "            return pf_cu_fail(k, \"cuLaunchKernel\", r);\n"
    "    }\n"
    "    if (pf_trace())\n"
    "        fprintf(stderr, \"%s: GPU code for %s (%s)\\n\", k, c->arch, v->ptx ? \"PTX compiled by the driver\" : \"cubin\");\n"
    "    return PERFC_LIB_OK;\n"
    "}\n"
    "/* General variants: the code for the current context, loaded once (as above). */\n"
    "static int pf_cu_load(pf_cu_variant *v, const char *k)\n"
    "{\n"
    "    pthread_mutex_lock(&pf_cu_lock);\n"
    "    int rc = pf_cu_open() ? pf_cu_prepare(v, k) : pf_fail(PERFC_LIB_EDEVICE, \"%s: %s\", k, pf_cu.why);\n"
    "    pthread_mutex_unlock(&pf_cu_lock);\n"
    "    return rc;\n"
    "}\n"
    "/* A temporary of a general variant, its size known only now: stream-ordered where\n"
    " * the driver can (*sync = 0), else cuMemAlloc, freed after the stream drains. */\n"
    "static int pf_cu_temp(pf_CUptr *p, int64_t bytes, void *stream, int *sync, const char *k)\n"
    "{\n"
    "    size_t n = (size_t)(bytes > 0 ? bytes : 1);\n"
    "    *sync = 0;\n"
    "    if (pf_cu.MemAllocAsync && !pf_cu.MemAllocAsync(p, n, stream))\n"
    "        return PERFC_LIB_OK;\n"
    "    *sync = 1;\n"
    "    pf_CUresult r = pf_cu.MemAlloc(p, n);\n"
    "    if (r) {\n"
    "        *p = 0;\n"
    "        return pf_cu_fail(k, \"cuMemAlloc (a temporary)\", r);\n"
    "    }\n"
    "    return PERFC_LIB_OK;\n"
    "}\n"
    "static void pf_cu_temp_free(pf_CUptr p, int sync, void *stream)\n"
    "{\n"
    "    if (!p)\n"
    "        return;\n"
    "    if (!sync) {\n"
    "        pf_cu.MemFreeAsync(p, stream);\n"
    "        return;\n"
    "    }\n"
    "    pf_cu.StreamSynchronize(stream);\n"
    "    pf_cu.MemFree(p);\n"
    "}\n"
    "/* One node of a general variant: `total` threads' worth of work in PF_GEN_BLOCK-thread\n"
    " * blocks; its grid-stride loop takes what a capped grid leaves. */\n"
    "static int pf_cu_launch_general(pf_cu_variant *v, int node, int64_t total, void **args, void *stream,\n"
    "                                const char *k)\n"
    "{\n"
    "    int64_t blocks = (total + PF_GEN_BLOCK - 1) / PF_GEN_BLOCK;\n"
    "    if (blocks > (INT64_C(1) << 20))\n"
    "        blocks = INT64_C(1) << 20;\n"
    "    pf_CUresult r = pf_cu.LaunchKernel(v->fn[node], (unsigned)blocks, 1, 1, PF_GEN_BLOCK, 1, 1, 0, stream, args, 0);\n"
    "    return r ? pf_cu_fail(k, \"cuLaunchKernel (general variant)\", r) : PERFC_LIB_OK;\n"
    "}\n";

static void bytes_array(StrBuf *s, const char *name, const unsigned char *p, size_t n, bool nul)
{
    sb_printf(s, "static const unsigned char %s[] = {", name);
    for (size_t i = 0; i < n; i++)
        sb_printf(s, "%s%u,", i % 24 ? "" : "\n    ", p[i]);
    sb_printf(s, "%s};\n", nul ? "0" : "");
}

int lib_cuda_code_table(const Lib *L, const char *base, const CgCudaModule *mods, const bool *built, StrBuf *s)
{
    for (int g = 0; g < L->ngpu; g++) {
        if (!built[g])
            continue;
        const CgCudaModule *m = &mods[g];
        char nm[400];
        snprintf(nm, sizeof nm, "%s_%d_cubin", base, g);
        bytes_array(s, nm, m->cubin, m->cubin_len, false);
        snprintf(nm, sizeof nm, "%s_%d_ptx", base, g);
        bytes_array(s, nm, (const unsigned char *)m->ptx, m->ptx_len, true);
        sb_printf(s, "static const pf_cu_launch %s_%d_launch[] = {\n", base, g);
        for (int l = 0; l < m->nlaunches; l++) {
            const CgLaunch *la = &m->launches[l];
            sb_printf(s, "    {\"%s\", {%" PRId64 "u, %" PRId64 "u, %" PRId64 "u}, {%du, %du, %du}, %du},\n", la->name,
                      la->grid[0], la->grid[1], la->grid[2], la->block[0], la->block[1], la->block[2],
                      la->shared_bytes);
        }
        sb_puts(s, "};\n");
        sb_printf(s, "static const pf_cu_tmap %s_%d_tmap[] = {\n", base, g);
        for (int t = 0; t < m->ntmaps; t++) {
            const CgTmap *c = &m->tmaps[t];
            sb_printf(s, "    {%d, %du, {", c->buf, c->rank);
            for (int j = 0; j < 5; j++) sb_printf(s, "%" PRIu64 "ull, ", c->dims[j]);
            sb_puts(s, "}, {");
            for (int j = 0; j < 4; j++) sb_printf(s, "%" PRIu64 "ull, ", c->strides[j]);
            sb_puts(s, "}, {");
            for (int j = 0; j < 5; j++) sb_printf(s, "%uu, ", c->box[j]);
            sb_puts(s, "}},\n");
        }
        sb_puts(s, "    {0, 0u, {0}, {0}, {0}}};\n");
    }
    sb_printf(s, "static const pf_cu_code %s_code[] = {\n", base);
    int ncode = 0;
    for (int g = 0; g < L->ngpu; g++) {
        if (!built[g])
            continue;
        const Target *a = cg_cuda_arch(L->gpus[g]);
        sb_printf(s, "    {\"%s\", %d, %d, %d, %s_%d_cubin, (const char *)%s_%d_ptx, %s_%d_launch, %d, %s_%d_tmap, %d},\n",
                  L->gpus[g], a ? a->sm / 10 : 0, a ? a->sm % 10 : 0, a && a->arch_specific, base, g, base, g, base, g,
                  mods[g].nlaunches, base, g, mods[g].ntmaps);
        ncode++;
    }
    sb_puts(s, "};\n");
    return ncode;
}

void lib_cuda_source(const Lib *L, StrBuf *s)
{
    if (!L->ngpu)
        return;
    const char *N = L->o->name;
    sb_printf(s, "\n#define PF_GEN_BLOCK %d /* threads per block of general variants (codegen/c) */", CG_C_GPU_BLOCK);
    sb_puts(s, LOADER);
    for (int i = 0; i < L->nk; i++) {
        const LibKernel *lk = &L->k[i];
        const Kernel *k = lk->gen;
        sb_printf(s, "\n/* ---- %s on the GPU ---- */\n", lk->name);
        for (int v = 0; v < lk->ngvar; v++) {
            const GpuVariant *gv = &lk->gvar[v];
            int nargs = -1;
            const int *args = NULL;
            for (int g = 0; g < L->ngpu; g++)
                if (gv->built[g] && nargs < 0) {
                    nargs = gv->mod[g].nargs;
                    args = gv->mod[g].arg_bufs;
                }
            char base[300];
            snprintf(base, sizeof base, "%s__%s__g%d", N, lk->name, v);
            int ncode = lib_cuda_code_table(L, base, gv->mod, gv->built, s);
            sb_printf(s, "static const int %s__%s__g%d_arg[] = {", N, lk->name, v);
            for (int a = 0; a < nargs; a++)
                sb_printf(s, "%d, ", args[a]);
            sb_printf(s, "0};\nstatic const int64_t %s__%s__g%d_temp[] = {", N, lk->name, v);
            for (int b = 0; b < gv->nbufs; b++)
                sb_printf(s, "INT64_C(%" PRId64 "), ", gv->temp_bytes[b]);
            sb_printf(s, "0};\nstatic pf_cu_variant %s__%s__g%d = {%s__%s__g%d_code, %d, %s__%s__g%d_arg, %d, "
                         "%s__%s__g%d_temp, %d, 0, 0, 0, 0, 0, 0};\n",
                      N, lk->name, v, N, lk->name, v, ncode, N, lk->name, v, nargs, N, lk->name, v, gv->nbufs);
        }
        lib_cuda_general_source(L, lk, s);
        /* the runner: checks, then the variant of these sizes, else the general one */
        sb_printf(s, "\nstatic int %s__cuda_run_%s(void *const *t, const int64_t *p, void *stream)\n{\n", N, lk->name);
        int nb = k->nbufs;
        for (int v = 0; v < lk->ngvar; v++)
            nb = lk->gvar[v].nbufs > nb ? lk->gvar[v].nbufs : nb;
        sb_printf(s, "    void *bufs[%d] = {0};\n    int64_t bytes[%d] = {0};\n", nb + 1, nb + 1);
        sb_printf(s, "    int rc = %s__check_%s(t, p, bufs, bytes);\n    if (rc)\n        return rc;\n", N, lk->name);
        /* specialised code: these sizes, and every tensor aligned as cuMemAlloc aligns
         * (its vector and TMA accesses assume 16 bytes and more) */
        for (int v = 0; v < lk->ngvar; v++) {
            sb_puts(s, "    if (");
            for (int j = 0; j < k->nparams; j++)
                sb_printf(s, "p[%d] == INT64_C(%" PRId64 ") && ", j, lk->gvar[v].values[j]);
            for (int b = 0; b < k->nbufs; b++)
                if (k->bufs[b]->kind != BUF_TEMP)
                    sb_printf(s, "((uintptr_t)bufs[%d] & 255) == 0 && ", b);
            sb_printf(s, "1)\n        return pf_cu_run(&%s__%s__g%d, bufs, stream, \"%s\");\n", N, lk->name, v,
                      lk->name);
        }
        if (lk->ggen.k) {
            sb_printf(s, "    return %s__cuda_general_%s(bufs, bytes, p, stream);\n}\n", N, lk->name);
        } else {
            StrBuf sets = {0};
            for (int v = 0; v < lk->ngvar; v++) {
                sb_puts(&sets, v ? "; " : "");
                for (int j = 0; j < k->nparams; j++)
                    sb_printf(&sets, "%s%s=%" PRId64, j ? "," : "", k->params[j].name, lk->gvar[v].values[j]);
            }
            sb_printf(s, "    return pf_fail(PERFC_LIB_EDEVICE, \"%s: the library has GPU code for %s only (with "
                         "tensors 256-byte aligned), and no general GPU variant\");\n}\n",
                      lk->name, lk->ngvar ? sets.s : "no sizes");
            sb_free(&sets);
        }
        StrBuf sig = {0};
        lib_signature(L, lk, "_cuda", true, &sig);
        sb_printf(s, "\n%s\n{\n", sig.s);
        sb_free(&sig);
        sb_printf(s, "    void *t[%d] = {", k->nbufs + 1);
        int m = 0;
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b]->kind != BUF_TEMP)
                sb_printf(s, "%s(void *)%s", m++ ? ", " : "", k->bufs[b]->name);
        sb_printf(s, "%s0};\n    int64_t p[%d] = {", m ? ", " : "", k->nparams + 1);
        for (int j = 0; j < k->nparams; j++)
            sb_printf(s, "%s%s", j ? ", " : "", k->params[j].name);
        sb_printf(s, "%s0};\n    pf_err[0] = 0;\n    return %s__cuda_run_%s(t, p, stream);\n}\n", k->nparams ? ", " : "",
                  N, lk->name);
    }
    sb_printf(s, "\nint %s_call_cuda(const char *kernel, void *const *tensors, const int64_t *sizes, void *stream)\n{\n"
                 "    pf_err[0] = 0;\n"
                 "    if (!kernel)\n        return pf_fail(PERFC_LIB_ENOKERNEL, \"%s_call_cuda: the kernel name is NULL\");\n",
              N, N);
    for (int i = 0; i < L->nk; i++) {
        const LibKernel *lk = &L->k[i];
        sb_printf(s, "    if (!strcmp(kernel, \"%s\")) {\n", lk->name);
        sb_printf(s, "        if (!tensors || !sizes)\n            return pf_fail(PERFC_LIB_ENULL, \"%s: the tensor or "
                     "size array is NULL\");\n", lk->name);
        sb_printf(s, "        return %s__cuda_run_%s(tensors, sizes, stream);\n    }\n", N, lk->name);
    }
    sb_printf(s, "    return pf_fail(PERFC_LIB_ENOKERNEL, \"%s_call_cuda: no kernel '%%.200s' in this library\", kernel);\n}\n",
              N);
}
