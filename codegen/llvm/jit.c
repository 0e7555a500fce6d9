/* Drivers of the LLVM back end: the O3 pipeline, the host JIT and file emission.
 *
 * Every compilation has its own LLVMContext and LLJIT, and uses its thread's
 * TargetMachine for the target (cg_thread_target_machine: kept for the thread's
 * life, as building one cost 0.6 ms), so the autotuner may compile candidates from
 * several threads at once; the only state shared between threads is LLVM's one-time
 * initialisation and the table of registered symbols.
 *
 * The JIT path compiles to an object in memory with our own TargetMachine and hands
 * that object to an LLJIT: the optimisation level, CPU and features are then exactly
 * those of -emit obj for the same target, and the time to machine code is measured
 * in one place.  The LLJIT resolves external symbols from, in order: the symbols
 * registered with cg_llvm_add_symbol, the libc/libm functions generated code may call
 * (by address, so they resolve even in a statically linked perfc), and the symbols
 * of the running process. */
#define _POSIX_C_SOURCE 200809L
#include "cg_llvm_int.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Transforms/PassBuilder.h>

struct JitKernel {
    LLVMOrcLLJITRef jit;
    KernelEntry entry;
    double compile_ms;
};

/* ---- symbols for JIT code ---- */

typedef struct Sym {
    char *name;
    void *addr;
} Sym;

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static Sym *syms;
static int nsyms, capsyms;

void cg_llvm_add_symbol(const char *name, void *addr)
{
    pthread_mutex_lock(&sym_lock);
    int i;
    for (i = 0; i < nsyms && strcmp(syms[i].name, name) != 0; i++)
        ;
    if (i == nsyms) {
        if (nsyms == capsyms) {
            capsyms = capsyms ? 2 * capsyms : 8;
            syms = xrealloc(syms, sizeof *syms * (size_t)capsyms);
        }
        syms[nsyms].name = xstrdup(name);
        nsyms++;
    }
    syms[i].addr = addr;
    pthread_mutex_unlock(&sym_lock);
}

/* What generated code may call besides the thread pool: libm for tanh/erf and for
 * the libcalls LLVM itself emits (llvm.floor -> floorf without SSE4.1, llvm.exp/log
 * on vectors -> expf per lane), and the memory functions its idiom recognition produces. */
/* llvm.roundeven without a rounding instruction: C11 has no roundeven, but
 * nearbyint rounds ties to even in the default rounding mode, which perfc never changes. */
static float roundeven_f(float x) { return nearbyintf(x); }
static double roundeven_d(double x) { return nearbyint(x); }
typedef double (*D1)(double);
typedef float (*F1)(float);
static const struct {
    const char *name;
    void (*addr)(void);
} libsyms[] = {
    {"memset", (void (*)(void))memset},   {"memcpy", (void (*)(void))memcpy},
    {"memmove", (void (*)(void))memmove}, {"expf", (void (*)(void))(F1)expf},
    {"exp", (void (*)(void))(D1)exp},     {"logf", (void (*)(void))(F1)logf},
    {"log", (void (*)(void))(D1)log},     {"tanhf", (void (*)(void))(F1)tanhf},
    {"tanh", (void (*)(void))(D1)tanh},   {"erff", (void (*)(void))(F1)erff},
    {"erf", (void (*)(void))(D1)erf},     {"fmodf", (void (*)(void))fmodf},
    {"fmod", (void (*)(void))fmod},       {"fmaf", (void (*)(void))fmaf},
    {"fma", (void (*)(void))fma},         {"sqrtf", (void (*)(void))(F1)sqrtf},
    {"sqrt", (void (*)(void))(D1)sqrt},   {"floorf", (void (*)(void))(F1)floorf},
    {"floor", (void (*)(void))(D1)floor},
    {"ceilf", (void (*)(void))(F1)ceilf}, {"ceil", (void (*)(void))(D1)ceil},
    {"roundevenf", (void (*)(void))roundeven_f}, {"roundeven", (void (*)(void))roundeven_d},
    {"log1pf", (void (*)(void))(F1)log1pf}, {"log1p", (void (*)(void))(D1)log1p},
    {"expm1f", (void (*)(void))(F1)expm1f}, {"expm1", (void (*)(void))(D1)expm1},
    {"powf", (void (*)(void))powf}, {"pow", (void (*)(void))pow},
};

/* C library functions a kernel must not be named after: what libsyms defines, and
 * the rest of libm, which LLVM may call for its intrinsics on some targets. */
static const char *const libc_names[] = {
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh",
    "erfc", "exp10", "exp2", "expm1", "fabs", "fdim", "fmax", "fmin", "frexp", "hypot", "ldexp", "lgamma",
    "llrint", "llround", "log10", "log1p", "log2", "logb", "lrint", "lround", "modf", "nearbyint", "nextafter",
    "pow", "remainder", "rint", "round", "roundeven", "scalbn", "sin", "sincos", "sinh", "tan", "tgamma",
    "trunc", "memcmp", "bcmp", "bzero", "strlen", "abort", "exit", "malloc", "calloc", "realloc", "free",
    "main",
};

static bool symbol_taken(const char *s)
{
    if (s[0] == '_' || strncmp(s, "perfc_", 6) == 0 || strncmp(s, "llvm.", 5) == 0)
        return true;
    for (size_t i = 0; i < sizeof libsyms / sizeof libsyms[0]; i++)
        if (strcmp(libsyms[i].name, s) == 0)
            return true;
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof libc_names / sizeof libc_names[0]; i++) {
        size_t m = strlen(libc_names[i]);
        /* the f and l variants too: sinf, sinl */
        if (strncmp(libc_names[i], s, m) == 0 && (n == m || (n == m + 1 && (s[m] == 'f' || s[m] == 'l'))))
            return true;
    }
    return false;
}

const char *cg_llvm_symbol(const char *kernel, char *buf, size_t n)
{
    snprintf(buf, n, symbol_taken(kernel) ? "pfk_%s" : "%s", kernel);
    return buf;
}

static bool llvm_error(Diags *d, LLVMErrorRef e, const char *what)
{
    if (!e)
        return false;
    char *msg = LLVMGetErrorMessage(e);
    diag_plain(d, DIAG_ERROR, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return true;
}

static bool define_symbols(LLVMOrcLLJITRef J, Diags *d)
{
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(J);
    size_t nlib = sizeof libsyms / sizeof libsyms[0];
    pthread_mutex_lock(&sym_lock);
    size_t n = nlib + (size_t)nsyms;
    LLVMOrcCSymbolMapPair *pairs = xcalloc(n, sizeof *pairs);
    size_t m = 0;
    for (int i = 0; i < nsyms; i++) {
        pairs[m].Name = LLVMOrcLLJITMangleAndIntern(J, syms[i].name);
        pairs[m].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
        pairs[m].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        m++;
    }
    for (size_t i = 0; i < nlib; i++) {
        bool dup = false;
        for (int j = 0; j < nsyms; j++)
            dup |= strcmp(syms[j].name, libsyms[i].name) == 0;
        if (dup)
            continue;
        pairs[m].Name = LLVMOrcLLJITMangleAndIntern(J, libsyms[i].name);
        pairs[m].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)libsyms[i].addr;
        pairs[m].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        m++;
    }
    pthread_mutex_unlock(&sym_lock);
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, m);
    free(pairs);
    if (llvm_error(d, LLVMOrcJITDylibDefine(jd, mu), "JIT symbols"))
        return false;
    LLVMOrcDefinitionGeneratorRef gen;
    if (llvm_error(d, LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(J), NULL, NULL),
                   "JIT process symbols"))
        return false;
    LLVMOrcJITDylibAddGenerator(jd, gen);
    return true;
}

/* ---- compilation ---- */

/* Whether list l holds a loop the schedule made something other than serial. */
static bool has_scheduled_loop(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP && (n->u.loop.kind != LOOP_SERIAL || has_scheduled_loop(&n->u.loop.body)))
            return true;
        if (n->kind == N_IF && has_scheduled_loop(&n->u.guard.body))
            return true;
    }
    return false;
}

/* The pass pipeline, chosen by what the schedule did (docs/codegen.md, "Compile
 * time and concurrency", has the measurements):
 *  - vector or unroll loops (register tiles, cg_kernel_tiled): a short function
 *    pipeline.  The code generator has already done what O3's expensive passes
 *    would: the tiles are unrolled and vectorised, addresses are a hoisted sum plus
 *    a constant, loads and stores within a block are reused, tile copies are vector
 *    code or transposes, small loops around the tiles are unrolled.  What is left is
 *    promoting the tiles to registers (SROA), a little clean-up and hoisting
 *    invariant loads out of loops.  default<O3> spent 25 to 250 ms on these kernels,
 *    mostly simplifying the big unrolled bodies again (InstCombine, GVN, DSE, SLP)
 *    and unrolling the loops around them;
 *  - no scheduled loop (what --no-schedule compiles) and no padded read: the same
 *    with loop unswitching, GVN, DSE and the loop vectoriser without interleaving.
 *    On the stdlib's naive kernels this gives the loops default<O3> gave (runs
 *    within 2% either way, causal attention and softmax faster) for half its
 *    compile time; without IndVarSimplify, which made LSR's work double;
 *  - no scheduled loop, padded reads (convolutions): default<O3> with the loop and
 *    SLP vectorisers but without LLVM's unrolling and interleaving, which multiply
 *    the code of a naive kernel by 8 or more.  O3's IndVarSimplify and unswitching
 *    simplify the bounds tests of the clamped loads (depthwise_conv2d runs 15% slower
 *    without them);
 *  - parallel loops only: default<O3> in full, LLVM being left to vectorise and
 *    unroll the serial loops inside. */
static const char *pipeline_tiled = "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm))";
static const char *pipeline_naive =
    "function(sroa,early-cse<memssa>,simplifycfg,instcombine<no-verify-fixpoint>,"
    "loop-mssa(licm,simple-loop-unswitch<nontrivial>),simplifycfg,gvn,dse,"
    "loop-vectorize<interleave-forced-only>,instcombine<no-verify-fixpoint>,simplifycfg)";

static bool optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, const Kernel *k, Diags *d)
{
    LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
    const char *pipeline = "default<O3>";
    bool scheduled = has_scheduled_loop(&k->body);
    if (cg_kernel_tiled(k)) {
        pipeline = pipeline_tiled;
    } else if (!scheduled && !cg_kernel_padded(k)) {
        pipeline = pipeline_naive;
    } else {
        /* The C API's defaults leave the SLP vectoriser off; clang -O3 runs it. */
        LLVMPassBuilderOptionsSetLoopVectorization(o, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(o, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(o, scheduled);
        LLVMPassBuilderOptionsSetLoopInterleaving(o, scheduled);
    }
    LLVMErrorRef e = LLVMRunPasses(m, pipeline, tm, o);
    LLVMDisposePassBuilderOptions(o);
    return !llvm_error(d, e, "LLVM optimisation");
}

/* Builds and optimises the kernel's module for t; the caller owns ctx. */
static LLVMModuleRef compile(const Kernel *k, const CgTarget *t, LLVMContextRef ctx, LLVMTargetMachineRef tm, Diags *d)
{
    /* The emitter translates; the decisions of how (passes/cpu_*.c) are made by the
     * pipeline for a CPU target, which every caller runs (pipeline_run with a CPU
     * target, or pipeline_lower_cpu): a kernel without them is a caller's bug. */
    if (!k->cpu_lowered) {
        diag_plain(d, DIAG_ERROR, "internal error: kernel %s reached the LLVM back end without the CPU target "
                   "passes (run the pipeline with target %s first)", k->name, t->name);
        return NULL;
    }
    LLVMModuleRef m = cg_build_module(k, t, ctx, tm, d);
    if (!m)
        return NULL;
    if (!optimize(m, tm, k, d)) {
        LLVMDisposeModule(m);
        return NULL;
    }
    return m;
}

static bool lookup_target(const char *target, CgTarget *t, Diags *d)
{
    if (cg_target_lookup(target, t))
        return true;
    diag_plain(d, DIAG_ERROR, "unknown CPU target '%s' (known: %s)", target, target_names(TARGET_CPU));
    return false;
}

JitKernel *cg_llvm_jit(const Kernel *k, const char *target, Diags *d)
{
    CgTarget t;
    if (!lookup_target(target, &t, d))
        return NULL;
    if (!cg_target_runs_on_host(&t)) {
        diag_plain(d, DIAG_ERROR, "code for target %s cannot run on this machine (use -emit obj or -emit asm)", t.name);
        return NULL;
    }
    double t0 = now_seconds();
    LLVMTargetMachineRef tm = cg_thread_target_machine(&t, d);
    if (!tm)
        return NULL;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = compile(k, &t, ctx, tm, d);
    LLVMMemoryBufferRef obj = NULL;
    if (m) {
        char *err = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &err, &obj)) {
            diag_plain(d, DIAG_ERROR, "LLVM code generation for %s: %s", k->name, err ? err : "");
            obj = NULL;
        }
        LLVMDisposeMessage(err);
        LLVMDisposeModule(m);
    }
    LLVMContextDispose(ctx);
    if (!obj)
        return NULL;

    LLVMOrcLLJITRef J;
    if (llvm_error(d, LLVMOrcCreateLLJIT(&J, LLVMOrcCreateLLJITBuilder()), "creating the JIT")) {
        LLVMDisposeMemoryBuffer(obj);
        return NULL;
    }
    LLVMOrcExecutorAddress addr = 0;
    char sym[300];
    if (!define_symbols(J, d) ||
        llvm_error(d, LLVMOrcLLJITAddObjectFile(J, LLVMOrcLLJITGetMainJITDylib(J), obj), "loading the kernel") ||
        llvm_error(d, LLVMOrcLLJITLookup(J, &addr, cg_llvm_symbol(k->name, sym, sizeof sym)), "linking the kernel")) {
        LLVMOrcDisposeLLJIT(J);
        return NULL;
    }
    JitKernel *j = xcalloc(1, sizeof *j);
    j->jit = J;
    j->entry = (KernelEntry)(uintptr_t)addr;
    j->compile_ms = (now_seconds() - t0) * 1e3;
    return j;
}

KernelEntry cg_jit_entry(JitKernel *j)
{
    return j->entry;
}

#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
void cg_jit_run(JitKernel *j, void **bufs)
{
    j->entry(bufs);
}

double cg_jit_compile_ms(const JitKernel *j)
{
    return j->compile_ms;
}

void cg_jit_free(JitKernel *j)
{
    if (!j)
        return;
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->jit);
    if (e)
        LLVMConsumeError(e);
    free(j);
}

bool cg_llvm_emit(const Kernel *k, const char *target, CgEmitKind kind, StrBuf *out, Diags *d)
{
    CgTarget t;
    if (!lookup_target(target, &t, d))
        return false;
    /* emitted code is called by programs that allocate as they like (malloc's 16
     * bytes): it assumes no more than an element's alignment */
    t.any_align = true;
    LLVMTargetMachineRef tm = cg_thread_target_machine(&t, d);
    if (!tm)
        return false;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = compile(k, &t, ctx, tm, d);
    bool ok = m != NULL;
    if (ok && kind == CG_EMIT_LLVM) {
        char *s = LLVMPrintModuleToString(m);
        sb_puts(out, s);
        LLVMDisposeMessage(s);
    } else if (ok) {
        LLVMMemoryBufferRef buf;
        char *err = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, kind == CG_EMIT_ASM ? LLVMAssemblyFile : LLVMObjectFile, &err, &buf)) {
            diag_plain(d, DIAG_ERROR, "LLVM code generation for %s (%s): %s", k->name, t.name, err ? err : "");
            ok = false;
        } else {
            const char *p = LLVMGetBufferStart(buf);
            size_t n = LLVMGetBufferSize(buf);
            for (size_t i = 0; i < n; i++)
                sb_putc(out, p[i]);
            LLVMDisposeMemoryBuffer(buf);
        }
        LLVMDisposeMessage(err);
    }
    if (m)
        LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
    return ok;
}
