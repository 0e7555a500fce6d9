/* NVRTC, loaded with dlopen at run time: perfc links no part of the CUDA toolkit, so
 * one binary runs on machines with and without it.  Only the handful of entry
 * points used are declared here, with NVRTC's documented C signatures.
 *
 * cg_cuda_compile asks ptxas for its resource report (-Xptxas -v) and reads each
 * entry function's registers, stack frame and spills out of NVRTC's log, so the
 * numbers exist without a driver or GPU; the runtime cross-checks them with
 * cuFuncGetAttribute when it loads the cubin.
 *
 * PERFC_CUDA_SOURCE=FILE (a developer's hook, for measuring a change to the emitter
 * before writing it): FILE is compiled in place of the generated CUDA, which must
 * declare the same kernels with the same parameters (a module whose kernels it does
 * not declare, such as the f64 reference, is compiled as generated); the harness
 * validates and times it as usual, and perfc says on stderr that it did so. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_cuda.h"
#include "../../lang/util.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    bool tried, ok;
    char why[512];
    void *h;
    nvrtcResult (*Version)(int *, int *);
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
} nv;

void cg_cuda_no_compile_cache(void)
{
    /* With a driver present NVRTC (12.9 on) answers a compile it has seen from the
     * CUDA compute cache, and then its log has no ptxas report: no registers, so no
     * occupancy request (occupancy.c), and every run of a kernel after its first got
     * the first build without it (the causal flash kernel: 0.205 ms on a fresh
     * machine, 0.254 ms after, on an H100).  The cache's switch is read when the
     * driver starts, so the driver's loader calls this too.  A user's own setting
     * stands. */
    setenv("CUDA_CACHE_DISABLE", "1", 0);
}

static bool load(void)
{
    if (nv.tried)
        return nv.ok;
    nv.tried = true;
    cg_cuda_no_compile_cache();
    /* PERFC_NVRTC names a library explicitly; then the loader's path; then the usual
     * toolkit folders (NVRTC finds its builtins library beside itself). */
    const char *names[] = {getenv("PERFC_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                           "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
                           "/usr/local/cuda/lib64/libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !nv.h; i++)
        if (names[i] && *names[i])
            nv.h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv.h) {
        snprintf(nv.why, sizeof nv.why, "NVRTC (libnvrtc.so.13 or .12) was not found: install the CUDA "
                 "toolkit's NVRTC or set PERFC_NVRTC to the library's path");
        return false;
    }
#define SYM(f)                                                                   \
    do {                                                                         \
        *(void **)&nv.f = dlsym(nv.h, "nvrtc" #f);                               \
        if (!nv.f) {                                                             \
            snprintf(nv.why, sizeof nv.why, "NVRTC lacks nvrtc%s", #f);           \
            return false;                                                        \
        }                                                                        \
    } while (0)
    SYM(Version);
    SYM(GetErrorString);
    SYM(CreateProgram);
    SYM(CompileProgram);
    SYM(GetPTXSize);
    SYM(GetPTX);
    SYM(GetCUBINSize);
    SYM(GetCUBIN);
    SYM(GetProgramLogSize);
    SYM(GetProgramLog);
    SYM(DestroyProgram);
#undef SYM
    nv.ok = true;
    return true;
}

bool cg_nvrtc_available(char *why, size_t n)
{
    bool ok = load();
    if (!ok && why && n)
        snprintf(why, n, "%s", nv.why);
    return ok;
}

bool cg_nvrtc_version(int *major, int *minor)
{
    return load() && nv.Version(major, minor) == 0;
}

static CgLaunch *launch_named(CgCudaModule *m, const char *name, size_t len)
{
    for (int i = 0; i < m->nlaunches; i++)
        if (strlen(m->launches[i].name) == len && strncmp(m->launches[i].name, name, len) == 0)
            return &m->launches[i];
    return NULL;
}

/* Reads ptxas' "-v" report: after "Compiling entry function 'NAME'" come the
 * stack/spill line and the "Used N registers" line of that function. */
static void parse_ptxas(CgCudaModule *m, const char *log)
{
    CgLaunch *cur = NULL;
    for (const char *p = log; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char ln[512];
        snprintf(ln, sizeof ln, "%.*s", (int)(len < sizeof ln - 1 ? len : sizeof ln - 1), p);
        const char *q;
        if ((q = strstr(ln, "Compiling entry function '"))) {
            q += strlen("Compiling entry function '");
            const char *e = strchr(q, '\'');
            cur = e ? launch_named(m, q, (size_t)(e - q)) : NULL;
        } else if (cur && (q = strstr(ln, "bytes stack frame"))) {
            int st = 0, ss = 0, sl = 0;
            const char *s = ln;
            while (*s && (*s < '0' || *s > '9')) s++;
            if (sscanf(s, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &st, &ss, &sl) == 3) {
                cur->stack_bytes = st;
                cur->spill_stores = ss;
                cur->spill_loads = sl;
            }
        } else if (cur && (q = strstr(ln, "Used "))) {
            int r = 0;
            if (sscanf(q, "Used %d registers", &r) == 1)
                cur->regs = r;
            const char *sm = strstr(ln, " bytes smem");
            if (sm) {   /* "..., 1024 bytes smem": the digits before it */
                const char *b = sm;
                while (b > ln && b[-1] >= '0' && b[-1] <= '9') b--;
                cur->static_smem = atoi(b);
            }
        }
        p = eol ? eol + 1 : NULL;
    }
}

/* One NVRTC compilation of m->src: replaces ptx, cubin and log and reads the ptxas
 * report into the launches. */
static bool build(CgCudaModule *m, const char *arch, Diags *d)
{
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    /* -lineinfo lets compute-sanitizer name source lines; it costs no speed */
    const char *opts[] = {archopt, "--std=c++17", "-Xptxas", "-v", "-lineinfo"};
    nvrtcProgram prog = NULL;
    char name[96];
    snprintf(name, sizeof name, "%s.cu", m->nlaunches ? m->launches[0].name : "perfc");
    nvrtcResult r = nv.CreateProgram(&prog, m->src.s ? m->src.s : "", name, 0, NULL, NULL);
    if (r != 0) {
        diag_plain(d, DIAG_ERROR, "nvrtcCreateProgram: %s", nv.GetErrorString(r));
        return false;
    }
    r = nv.CompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t n = 0;
    sb_free(&m->log);
    if (nv.GetProgramLogSize(prog, &n) == 0 && n > 1) {
        char *log = xmalloc(n + 1);
        nv.GetProgramLog(prog, log);
        log[n] = 0;
        sb_puts(&m->log, log);
        free(log);
    }
    if (r != 0) {
        /* generated code that NVRTC rejects is a perfc bug: show everything */
        diag_plain(d, DIAG_ERROR, "internal error: NVRTC rejected the generated CUDA for %s (%s):\n%s", arch,
                   nv.GetErrorString(r), m->log.s ? m->log.s : "");
        nv.DestroyProgram(&prog);
        return false;
    }
    free(m->ptx);
    free(m->cubin);
    m->ptx = NULL;
    m->cubin = NULL;
    if (nv.GetPTXSize(prog, &n) == 0 && n) {
        m->ptx = xmalloc(n + 1);
        nv.GetPTX(prog, m->ptx);
        m->ptx[n] = 0;
        m->ptx_len = strlen(m->ptx);
    }
    if (nv.GetCUBINSize(prog, &n) == 0 && n) {
        m->cubin = xmalloc(n);
        nv.GetCUBIN(prog, m->cubin);
        m->cubin_len = n;
    }
    nv.DestroyProgram(&prog);
    if (!m->ptx || !m->cubin) {
        diag_plain(d, DIAG_ERROR, "NVRTC produced no %s for %s", m->ptx ? "cubin" : "PTX", arch);
        return false;
    }
    for (int i = 0; i < m->nlaunches; i++) {
        CgLaunch *L = &m->launches[i];
        L->regs = L->stack_bytes = L->spill_stores = L->spill_loads = L->static_smem = -1;
    }
    parse_ptxas(m, m->log.s);
    return true;
}

/* Where registers alone keep a launch below the blocks per SM its shared memory and
 * threads admit, asks for those blocks in the launch's __launch_bounds__ (the line
 * emit.c prints), compiles again and keeps that when no launch spills more than 64
 * bytes a thread (stores and loads) beyond what it spilled before; else the first
 * source and build stand. */
static void raise_occupancy(CgCudaModule *m, const Target *a, const char *arch)
{
    size_t lbytes = (size_t)m->nlaunches * sizeof *m->launches;
    CgLaunch *launches = xmalloc(lbytes);   /* the first build's, restored if the second spills */
    memcpy(launches, m->launches, lbytes);
    StrBuf src = {0};
    sb_puts(&src, m->src.s ? m->src.s : "");
    bool any = false;
    for (int i = 0; i < m->nlaunches; i++) {
        CgLaunch *L = &m->launches[i];
        int b = cg_cuda_min_blocks(L, a);
        int64_t thr = (int64_t)L->block[0] * L->block[1] * L->block[2];
        StrBuf from = {0}, to = {0};
        cg_cuda_bounds(&from, thr, 0, L->name);
        cg_cuda_bounds(&to, thr, b, L->name);
        char *at = b ? strstr(src.s, from.s) : NULL;
        if (at) {
            StrBuf t = {0};
            sb_printf(&t, "%.*s%s%s", (int)(at - src.s), src.s, to.s, at + from.len);
            sb_free(&src);
            src = t;
            L->min_blocks = b;
            any = true;
        }
        sb_free(&from);
        sb_free(&to);
    }
    if (!any) {
        sb_free(&src);
        free(launches);
        return;
    }
    CgCudaModule first = *m;
    m->src = src;
    m->ptx = NULL;
    m->cubin = NULL;
    m->log = (StrBuf){0};
    Diags quiet;
    diag_init(&quiet);
    bool ok = build(m, arch, &quiet);
    diag_free(&quiet);
    for (int i = 0; ok && i < m->nlaunches; i++) {
        const CgLaunch *L = &m->launches[i], *F = &launches[i];
        ok = L->regs > 0 && L->spill_stores >= 0 && F->spill_stores >= 0 &&
             L->spill_stores + L->spill_loads <= F->spill_stores + F->spill_loads + 64;
    }
    CgCudaModule *drop = ok ? &first : m;
    sb_free(&drop->src);
    free(drop->ptx);
    free(drop->cubin);
    sb_free(&drop->log);
    if (!ok) {
        *m = first;   /* the same launches array, refilled with the first build's */
        memcpy(m->launches, launches, lbytes);
    }
    free(launches);
}

bool cg_cuda_compile(CgCudaModule *m, const char *arch, Diags *d)
{
    const Target *a = cg_cuda_arch(arch);
    if (!a) {
        diag_plain(d, DIAG_ERROR, "unknown CUDA target '%s' (supported: %s)", arch ? arch : "", cg_cuda_targets());
        return false;
    }
    if (!load()) {
        diag_plain(d, DIAG_ERROR, "cannot compile CUDA for %s: %s", arch, nv.why);
        return false;
    }
    const char *over = getenv("PERFC_CUDA_SOURCE");
    if (over && *over) {
        size_t len = 0;
        char *text = read_file(over, &len);
        if (!text) {
            diag_plain(d, DIAG_ERROR, "PERFC_CUDA_SOURCE: cannot read '%s'", over);
            return false;
        }
        /* only for the module whose kernels the file declares (not the f64 reference's) */
        bool same = m->nlaunches > 0;
        for (int i = 0; same && i < m->nlaunches; i++) {
            char decl[128];
            snprintf(decl, sizeof decl, " %s(", m->launches[i].name);
            same = strstr(text, decl) != NULL;
        }
        if (same) {
            fprintf(stderr, "perfc: compiling %s in place of the generated CUDA (PERFC_CUDA_SOURCE)\n", over);
            sb_free(&m->src);
            sb_puts(&m->src, text);
        }
        free(text);
    }
    if (!build(m, arch, d))
        return false;
    raise_occupancy(m, a, arch);
    bool ok = true;
    for (int i = 0; i < m->nlaunches; i++) {
        CgLaunch *L = &m->launches[i];
        int64_t thr = (int64_t)L->block[0] * L->block[1] * L->block[2];
        if (L->regs > 0 && (int64_t)L->regs * thr > a->regs_per_block) {
            diag_plain(d, DIAG_ERROR, "launch %s needs %d registers x %lld threads = %lld registers per block; "
                       "%s has %d", L->name, L->regs, (long long)thr, (long long)L->regs * thr, arch,
                       a->regs_per_block);
            ok = false;
        }
    }
    return ok;
}
