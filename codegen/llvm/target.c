/* CPU targets of the LLVM back end: a Target (ir/target.c, the table of names perfc
 * accepts with their triple, CPU, features and ABI) made into what LLVM is told, the
 * running CPU's triple, name and features for "host" (only LLVM knows them), target
 * machines, and the one-time LLVM initialisation. */
#define _POSIX_C_SOURCE 200809L
#include "cg_llvm_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Support.h>

#include <llvm-c/Target.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char host_triple[64], host_cpu[64];
static char *host_features; /* lives for the whole process */

static void init_llvm(void)
{
    /* Only the three back ends perfc links; LLVMInitializeAll* would pull in every
     * target the LLVM build has, which a static link does not carry. */
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
    LLVMInitializeRISCVTargetInfo();
    LLVMInitializeRISCVTarget();
    LLVMInitializeRISCVTargetMC();
    LLVMInitializeRISCVAsmPrinter();
    /* No Loop Strength Reduction in the code generator.  The emitter already writes
     * a register tile's addresses as one hoisted base plus constant offsets, which is
     * what LSR would build; on the stdlib kernels LSR cost 10-15% of a compilation
     * (conv2d's schedule: 18 of 120 million instructions; attention 7-9 of 70) and
     * bought nothing measurable on the scheduled kernels, 3-5% on the naive attention
     * loops (docs/benchmarks-log.md "Compile time, 2026-11-21 (LSR off)").  An LLVM option is
     * process-wide: set once here, before any compilation. */
    const char *argv[] = {"perfc", "-disable-lsr"};
    LLVMParseCommandLineOptions(2, argv, NULL);

    char *t = LLVMGetDefaultTargetTriple();
    char *n = LLVMNormalizeTargetTriple(t);
    snprintf(host_triple, sizeof host_triple, "%s", n);
    LLVMDisposeMessage(n);
    LLVMDisposeMessage(t);
    char *cpu = LLVMGetHostCPUName();
    snprintf(host_cpu, sizeof host_cpu, "%s", cpu);
    LLVMDisposeMessage(cpu);
    char *f = LLVMGetHostCPUFeatures();
    host_features = xstrdup(f);
    LLVMDisposeMessage(f);
}

void cg_llvm_init(void)
{
    pthread_once(&init_once, init_llvm);
}

/* Whether an LLVM feature string turns feature `name` on ("+name" as an item). */
static bool has_feature(const char *features, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = features; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n + 1 && p[0] == '+' && memcmp(p + 1, name, n) == 0)
            return true;
        p = end ? end + 1 : p + len;
    }
    return false;
}

bool cg_llvm_target_known(const char *target)
{
    return target_is_cpu(target_find(target));
}

bool cg_target_lookup(const char *name, CgTarget *t)
{
    return cg_target_fill(target_find(name), t);
}

bool cg_target_fill(const Target *d, CgTarget *t)
{
    if (!target_is_cpu(d))
        return false;
    cg_llvm_init();
    memset(t, 0, sizeof *t);
    t->target = d;
    snprintf(t->name, sizeof t->name, "%s", d->name);
    if (d->host) {
        /* What only LLVM knows of the running CPU: triple, CPU name, features. */
        snprintf(t->triple, sizeof t->triple, "%s", host_triple);
        snprintf(t->cpu, sizeof t->cpu, "%s", host_cpu);
        t->features = host_features;
        t->abi = "";
        t->is_host = true;
        bool arm = strncmp(host_triple, "aarch64", 7) == 0;
        bool rv = strncmp(host_triple, "riscv64", 7) == 0;
        t->fma = arm || has_feature(host_features, "fma") || (rv && has_feature(host_features, "d"));
        t->native_half = arm || has_feature(host_features, "f16c") || has_feature(host_features, "zfhmin");
        if (rv)
            t->abi = "lp64d";
        if (has_feature(host_features, "avx512f"))
            t->vector_width = 512;
        t->dot_bf16 = has_feature(host_features, "avx512bf16") && has_feature(host_features, "avx512vl");
        /* LLVM's features say the instructions exist; the Target's flag that the OS
         * keeps the tiles too */
        t->amx = d->amx_bf16 && has_feature(host_features, "amx-tile") && has_feature(host_features, "amx-bf16");
        if (arm && has_feature(host_features, "sve")) {
            /* The running machine's vector length is not known to LLVM here; 128
             * bits is the architectural minimum. */
            t->vscale_min = 1;
            t->vscale_max = 16;
        }
        return true;
    }
    snprintf(t->triple, sizeof t->triple, "%s", d->triple);
    snprintf(t->cpu, sizeof t->cpu, "%s", d->cpu);
    t->features = d->features;
    t->abi = d->abi;
    t->fma = d->fma;
    t->native_half = d->native_half;
    t->vscale_min = d->vscale_min;
    t->vscale_max = d->vscale_max;
    t->vector_width = d->vector_width;
    t->dot_bf16 = d->dot_bf16;
    t->amx = d->amx_bf16;
    return true;
}

bool cg_target_runs_on_host(const CgTarget *t)
{
    if (t->is_host)
        return true;
    cg_llvm_init();
    if (t->target->arch != ARCH_X86_64 || target_find("host")->arch != ARCH_X86_64)
        return false;
    static const char *const need_avx2[] = {"avx2", "fma", "f16c", "bmi2", NULL};
    static const char *const need_avx512[] = {"avx512f", "avx512bw", "avx512dq", "avx512vl", NULL};
    if (t->target->vector_bytes >= 32)
        for (const char *const *f = need_avx2; *f; f++)
            if (!has_feature(host_features, *f))
                return false;
    if (t->target->vector_bytes >= 64)
        for (const char *const *f = need_avx512; *f; f++)
            if (!has_feature(host_features, *f))
                return false;
    if (t->target->dot_bf16 && !has_feature(host_features, "avx512bf16"))
        return false;
    if (t->target->amx_bf16 && !target_find("host")->amx_bf16)
        return false;
    return true;
}

LLVMTargetMachineRef cg_target_machine(const CgTarget *t, Diags *d)
{
    cg_llvm_init();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
        diag_plain(d, DIAG_ERROR, "LLVM has no back end for %s (%s): %s", t->name, t->triple, err ? err : "");
        LLVMDisposeMessage(err);
        return NULL;
    }
    LLVMTargetMachineOptionsRef o = LLVMCreateTargetMachineOptions();
    LLVMTargetMachineOptionsSetCPU(o, t->cpu);
    LLVMTargetMachineOptionsSetFeatures(o, t->features);
    if (t->abi && *t->abi)
        LLVMTargetMachineOptionsSetABI(o, t->abi);
    LLVMTargetMachineOptionsSetCodeGenOptLevel(o, LLVMCodeGenLevelAggressive);
    /* PIC: emitted objects go into PIE executables and shared libraries; JITLink
     * handles PIC code for the host as well. */
    LLVMTargetMachineOptionsSetRelocMode(o, LLVMRelocPIC);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachineWithOptions(target, t->triple, o);
    LLVMDisposeTargetMachineOptions(o);
    if (!tm)
        diag_plain(d, DIAG_ERROR, "LLVM could not create a target machine for %s (%s, %s)", t->name,
                   t->triple, t->cpu);
    return tm;
}

/* Target machines are kept per thread and target for the thread's life: building a
 * machine and its subtarget (the tables of legal operations and costs LLVM fills on
 * first use) took about 3 million instructions, 0.6 ms, of every compilation.  A
 * machine is used by its thread's compilations one at a time, never shared. */
typedef struct TmCache {
    int n;
    struct {
        char name[32];
        LLVMTargetMachineRef tm;
    } e[16];
} TmCache;

static pthread_key_t tm_key;
static pthread_once_t tm_once = PTHREAD_ONCE_INIT;

static void tm_cache_free(void *p)
{
    TmCache *c = p;
    for (int i = 0; i < c->n; i++)
        LLVMDisposeTargetMachine(c->e[i].tm);
    free(c);
}

static void tm_key_init(void)
{
    if (pthread_key_create(&tm_key, tm_cache_free))
        die("pthread_key_create failed");
}

LLVMTargetMachineRef cg_thread_target_machine(const CgTarget *t, Diags *d)
{
    pthread_once(&tm_once, tm_key_init);
    TmCache *c = pthread_getspecific(tm_key);
    if (!c) {
        c = xcalloc(1, sizeof *c);
        pthread_setspecific(tm_key, c);
    }
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].name, t->name))
            return c->e[i].tm;
    LLVMTargetMachineRef tm = cg_target_machine(t, d);
    if (tm && c->n < (int)(sizeof c->e / sizeof c->e[0])) {
        snprintf(c->e[c->n].name, sizeof c->e[c->n].name, "%s", t->name);
        c->e[c->n++].tm = tm;
    } else if (tm) {
        die("more CPU targets than the cache holds");
    }
    return tm;
}
