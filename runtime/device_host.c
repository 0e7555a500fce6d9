/* The host CPU as a harness device.
 *
 * Memory is ordinary 64-byte-aligned heap memory (the alignment the LLVM back end
 * assumes), upload and download are copies, so the kernel under test and the
 * harness never share a pointer: a kernel cannot see the staging data it is later
 * judged by.  Compilation is the LLVM JIT; library calls are OpenBLAS.
 *
 * Cache flushing between timed repetitions: on x86-64 every cache line of every
 * buffer this device allocated is evicted with clflush (which evicts from every
 * core's caches, not only the flushing core's), so each repetition starts from
 * memory, as a kernel called on fresh data would.  Elsewhere a buffer twice the
 * size of the last-level cache is written instead.
 *
 * A kernel that crashes must not take the report down with a misleading message:
 * while this device is open, SIGSEGV, SIGBUS, SIGILL and SIGFPE print one line and
 * end the process with status 3 (runtime error, `perfc --help`). */
#include "runtime.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef PERFC_HAVE_LLVM
#include "../codegen/llvm/cg_llvm.h"
#endif
#include "pool.h"

enum { HOST_ALIGN = 64 };

typedef struct Alloc {
    void *p;
    size_t bytes;
} Alloc;

typedef struct Host {
    Alloc *allocs;
    int nallocs, cap;
    unsigned char *sweep;   /* non-x86 flushing: 2 x LLC */
    size_t sweep_bytes;
    unsigned char sweep_val;
    struct sigaction old[4];
} Host;

/* What the host runs: a function and its context. */
typedef struct HostCall {
    RtExec x;
    void (*call)(void *ctx, void **bufs);
    void *ctx;
    void (*drop)(void *ctx);
} HostCall;

static const int crash_signals[4] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};

static void on_crash(int sig)
{
    /* async-signal-safe: write and _exit only */
    static const char msg[] = "perfc: error: the kernel crashed (";
    const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGFPE";
    ssize_t w = write(2, msg, sizeof msg - 1);
    w = write(2, name, strlen(name));
    w = write(2, ")\n", 2);
    (void)w;
    _exit(3);
}

static void host_describe(RtDevice *dev, RtMachine *m)
{
    (void)dev;
    /* rt_machine_host has already named the CPU in m->device */
    (void)m;
}

static void *host_alloc(RtDevice *dev, size_t bytes, Diags *d)
{
    Host *h = dev->impl;
    size_t n = (bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
    void *p = aligned_alloc(HOST_ALIGN, n ? n : HOST_ALIGN);
    if (!p) {
        diag_plain(d, DIAG_ERROR, "out of host memory allocating %zu bytes", bytes);
        return NULL;
    }
    if (h->nallocs == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->allocs = xrealloc(h->allocs, sizeof *h->allocs * (size_t)h->cap);
    }
    h->allocs[h->nallocs++] = (Alloc){p, n};
    return p;
}

static void host_free(RtDevice *dev, void *p)
{
    Host *h = dev->impl;
    if (!p)
        return;
    for (int i = 0; i < h->nallocs; i++)
        if (h->allocs[i].p == p) {
            h->allocs[i] = h->allocs[--h->nallocs];
            break;
        }
    free(p);
}

static bool host_copy(RtDevice *dev, void *dst, const void *src, size_t bytes, Diags *d)
{
    (void)dev, (void)d;
    memcpy(dst, src, bytes);
    return true;
}

#ifdef PERFC_HAVE_LLVM
static void call_jit(void *ctx, void **bufs)
{
    cg_jit_run(ctx, bufs);
}

static void drop_jit(void *ctx)
{
    cg_jit_free(ctx);
}
#endif

static RtExec *make_call(const char *what, void (*call)(void *, void **), void *ctx, void (*drop)(void *))
{
    HostCall *c = xcalloc(1, sizeof *c);
    c->x.what = what;
    c->x.impl = c;
    c->call = call;
    c->ctx = ctx;
    c->drop = drop;
    return &c->x;
}

RtExec *rt_host_exec_fn(RtDevice *host, void (*fn)(void *ctx, void **bufs), void *ctx, const char *what)
{
    (void)host;
    return make_call(what, fn, ctx, NULL);
}

static RtExec *host_compile(RtDevice *dev, const Kernel *k, const char *target, Diags *d)
{
    (void)dev;
#ifdef PERFC_HAVE_LLVM
    JitKernel *j = cg_llvm_jit(k, target, d);
    if (!j)
        return NULL;
    return make_call("perfc kernel", call_jit, j, drop_jit);
#else
    (void)k, (void)target;
    diag_plain(d, DIAG_ERROR, "this perfc was built without LLVM: it cannot compile kernels for the CPU");
    return NULL;
#endif
}

static RtExec *host_library(RtDevice *dev, const char *lib, const RtGemm *g, char *why, size_t whylen, Diags *d)
{
    (void)dev, (void)d;
    if (strcmp(lib, "openblas") != 0) {
        snprintf(why, whylen, "%s does not run on the CPU (use --compare openblas)", lib);
        return NULL;
    }
    RtBlasCall *c = rt_blas_plan(g, why, whylen);
    if (!c)
        return NULL;
    return make_call(rt_blas_call_name(c), rt_blas_call, c, rt_blas_free);
}

static bool host_run(RtDevice *dev, RtExec *x, void **bufs, double *ms, Diags *d)
{
    (void)dev, (void)d;
    HostCall *c = x->impl;
    double t0 = now_seconds();
    c->call(c->ctx, bufs);
    double t1 = now_seconds();
    if (ms)
        *ms = (t1 - t0) * 1e3;
    return true;
}

static void host_flush(RtDevice *dev)
{
    Host *h = dev->impl;
#if defined(__x86_64__)
    for (int i = 0; i < h->nallocs; i++) {
        const char *p = h->allocs[i].p;
        for (size_t off = 0; off < h->allocs[i].bytes; off += 64)
            _mm_clflush(p + off);
    }
    _mm_mfence();
#else
    if (!h->sweep) {
        int64_t llc = rt_llc_bytes();
        h->sweep_bytes = (size_t)(llc > 0 ? 2 * llc : 64 << 20);
        h->sweep = xmalloc(h->sweep_bytes);
    }
    memset(h->sweep, ++h->sweep_val, h->sweep_bytes);
    /* read one byte back through a volatile so the stores cannot be dropped */
    volatile unsigned char *v = h->sweep;
    (void)v[h->sweep_bytes - 1];
#endif
}

static void host_release(RtDevice *dev, RtExec *x)
{
    (void)dev;
    if (!x)
        return;
    HostCall *c = x->impl;
    if (c->drop)
        c->drop(c->ctx);
    free(c);
}

static void host_close(RtDevice *dev)
{
    Host *h = dev->impl;
    for (int i = 0; i < 4; i++)
        sigaction(crash_signals[i], &h->old[i], NULL);
    for (int i = 0; i < h->nallocs; i++)
        free(h->allocs[i].p);
    free(h->allocs);
    free(h->sweep);
    free(h);
    free(dev);
}

RtDevice *rt_host_open(Diags *d)
{
    (void)d;
#ifdef PERFC_HAVE_LLVM
    /* JIT code calls the pool; a test binary or a library user's program may not
     * export it, so it is handed to the JIT by address. */
    void (*pf)(int64_t, void (*)(void *, int64_t, int64_t), void *) = perfc_parallel_for;
    void *addr;
    memcpy(&addr, &pf, sizeof addr);
    cg_llvm_add_symbol("perfc_parallel_for", addr);
#endif
    Host *h = xcalloc(1, sizeof *h);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++)
        sigaction(crash_signals[i], &sa, &h->old[i]);
    RtDevice *dev = xcalloc(1, sizeof *dev);
    dev->name = "cpu";
    dev->impl = h;
    dev->describe = host_describe;
    dev->alloc = host_alloc;
    dev->free = host_free;
    dev->upload = host_copy;
    dev->download = host_copy;
    dev->compile = host_compile;
    dev->library = host_library;
    dev->run = host_run;
    dev->flush = host_flush;
    dev->release = host_release;
    dev->close = host_close;
    return dev;
}
