/* The embedding API (include/perfc.h): the steps of the perfc command (cli/) as
 * library calls.  A perfc_program owns the source text and the checked AST; a
 * perfc_kernel owns its lowered kernels (scheduled and unscheduled, which the harness
 * needs for the golden reference) and the schedule texts its compilation parsed.
 * Diagnostics are collected per call and handed back as text, never printed. */
#include "perfc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/cuda/cg_cuda.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "runtime/runtime.h"
#include "tune/tune.h"
#ifdef PERFC_HAVE_LLVM
#include "codegen/llvm/cg_llvm.h"
#endif

struct perfc_program {
    Arena *arena;
    char *text, *name;
    Source src;
    Program *prog;
};

struct perfc_kernel {
    perfc_program *p;
    AstKernel *ast;
    char *target;
    const Target *tgt;          /* target, parsed once */
    Kernel *low;                /* k lowered for tgt: what the back ends translate */
    int64_t *values;
    bool *bound;
    Kernel *k, *u;             /* scheduled, unscheduled */
    const AstSchedule *scheds[64];
    int nscheds;
    char *sched_text;
};

const char *perfc_version(void)
{
    return PERFC_VERSION_STRING;
}

void perfc_free(void *p)
{
    free(p);
}

/* The diagnostics as one malloc'd text for *errors; frees d. */
static void hand_back(Diags *d, char **errors)
{
    if (errors) {
        *errors = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            diag_flush(d, f);
            fclose(f);
            *errors = buf;
        }
    }
    diag_free(d);
}

perfc_program *perfc_parse(const char *source, const char *name, char **errors)
{
    Diags d;
    diag_init(&d);
    if (!source) {
        diag_plain(&d, DIAG_ERROR, "perfc_parse: the source text is NULL");
        hand_back(&d, errors);
        return NULL;
    }
    perfc_program *p = xcalloc(1, sizeof *p);
    p->arena = arena_new();
    p->text = xstrdup(source);
    p->name = xstrdup(name ? name : "<string>");
    p->src.path = p->name;
    p->src.text = p->text;
    p->src.len = strlen(p->text);
    p->prog = parse_program(p->arena, &p->src, &d);
    if (p->prog && !d.nerrors)
        sema_program(p->prog, &d);
    if (!p->prog || d.nerrors) {
        hand_back(&d, errors);
        perfc_program_free(p);
        return NULL;
    }
    hand_back(&d, errors);
    return p;
}

void perfc_program_free(perfc_program *p)
{
    if (!p)
        return;
    arena_free(p->arena);
    free(p->text);
    free(p->name);
    free(p);
}

int perfc_program_nkernels(const perfc_program *p)
{
    return p ? p->prog->nkernels : 0;
}

const char *perfc_program_kernel(const perfc_program *p, int i)
{
    return p && i >= 0 && i < p->prog->nkernels ? p->prog->kernels[i]->name : NULL;
}

perfc_kernel *perfc_compile(perfc_program *p, const char *kernel, const char *target, const perfc_size *sizes,
                            int nsizes, const char *schedule, char **errors)
{
    Diags d;
    diag_init(&d);
    if (!p || (nsizes > 0 && !sizes) || nsizes < 0) {
        diag_plain(&d, DIAG_ERROR, "perfc_compile: %s", !p ? "the program is NULL" : "bad size array");
        hand_back(&d, errors);
        return NULL;
    }
    AstKernel *ak = kernel ? program_find_kernel(p->prog, kernel) : p->prog->kernels[0];
    if (!ak) {
        diag_plain(&d, DIAG_ERROR, "perfc_compile: %s has no kernel %s", p->name, kernel);
        hand_back(&d, errors);
        return NULL;
    }
    const Target *tgt = target_parse(target ? target : "host", &d);
    if (!tgt) {
        hand_back(&d, errors);
        return NULL;
    }
    perfc_kernel *k = xcalloc(1, sizeof *k);
    k->tgt = tgt;
    k->p = p;
    k->ast = ak;
    k->target = xstrdup(target ? target : "host");
    k->values = xcalloc((size_t)ak->nparams + 1, sizeof(int64_t));
    k->bound = xcalloc((size_t)ak->nparams + 1, sizeof(bool));
    for (int i = 0; i < ak->nparams; i++)
        if (ak->params[i].has_default) {
            k->values[i] = ak->params[i].def;
            k->bound[i] = true;
        }
    bool ok = true;
    for (int s = 0; s < nsizes; s++) {
        int i;
        for (i = 0; i < ak->nparams; i++)
            if (sizes[s].name && !strcmp(ak->params[i].name, sizes[s].name))
                break;
        if (i == ak->nparams || sizes[s].value < 0) {
            diag_plain(&d, DIAG_ERROR, "perfc_compile: %s %s: %s", ak->name, sizes[s].name ? sizes[s].name : "(NULL)",
                       i == ak->nparams ? "no size parameter of that name" : "a size must not be negative");
            ok = false;
            continue;
        }
        k->values[i] = sizes[s].value;
        k->bound[i] = true;
    }
    if (ok) {
        for (int i = 0; i < p->prog->nschedules && k->nscheds < 32; i++) {
            const AstSchedule *s = p->prog->schedules[i];
            if (schedule_applies(s, ak, k->tgt, NULL))
                k->scheds[k->nscheds++] = s;
        }
        if (schedule) {
            k->sched_text = xstrdup(schedule);
            Source *src = arena_alloc(p->arena, sizeof *src);
            src->path = "<schedule>";
            src->text = k->sched_text;
            src->len = strlen(k->sched_text);
            AstSchedule *s = parse_schedule_text(p->arena, src, &d);
            if (s) {
                s->kernel = ak->name;
                k->scheds[k->nscheds++] = s;
            } else {
                ok = false;
            }
        }
    }
    if (ok) {
        k->u = lower_kernel(p->prog, ak, k->values, k->bound, &d);
        k->k = k->u && !d.nerrors ? lower_kernel(p->prog, ak, k->values, k->bound, &d) : NULL;
        ok = k->k && !d.nerrors && ir_verify(k->u, &d);
        if (ok && k->nscheds) {
            PipelineOpts po = {0};
            po.schedules = k->scheds;
            po.nschedules = k->nscheds;
            ok = pipeline_run(k->k, &po, &d);
        }
        /* "ir" shows k->k as scheduled (as -emit ir); the code generators
         * translate only a copy lowered for the target */
        if (ok) {
            k->low = ir_clone_kernel(k->k);
            ok = pipeline_target(k->low, tgt, &d);
        }
    }
    hand_back(&d, errors);
    if (!ok) {
        perfc_kernel_free(k);
        return NULL;
    }
    return k;
}

void perfc_kernel_free(perfc_kernel *k)
{
    if (!k)
        return;
    if (k->k)
        ir_free(k->k);
    if (k->low)
        ir_free(k->low);
    if (k->u)
        ir_free(k->u);
    free(k->values);
    free(k->bound);
    free(k->target);
    free(k->sched_text);
    free(k);
}

static char *dup_bytes(const char *s, size_t n)
{
    char *r = xmalloc(n + 1);
    if (n)
        memcpy(r, s, n);
    r[n] = 0;
    return r;
}

int perfc_emit(perfc_kernel *k, const char *what, char **out, size_t *len, char **errors)
{
    Diags d;
    diag_init(&d);
    if (out)
        *out = NULL;
    if (len)
        *len = 0;
    if (!k || !what || !out) {
        diag_plain(&d, DIAG_ERROR, "perfc_emit: %s is NULL", !k ? "the kernel" : !what ? "what" : "out");
        hand_back(&d, errors);
        return PERFC_ECOMPILE;
    }
    StrBuf b = {0};
    bool ok = true, gpu = target_is_gpu(k->tgt);
    if (!strcmp(what, "ir")) {
        ir_print_kernel(k->k, &b);
    } else if (!strcmp(what, "cuda") || !strcmp(what, "ptx") || !strcmp(what, "cubin")) {
        if (!gpu) {
            diag_plain(&d, DIAG_ERROR, "perfc_emit: %s needs a GPU target, and %s is not one", what, k->target);
            ok = false;
        } else {
            CgCudaKind kind = !strcmp(what, "cuda") ? CG_CUDA_SRC : !strcmp(what, "ptx") ? CG_CUDA_PTX : CG_CUDA_CUBIN;
            ok = ir_all_bound(k->k, &d) && cg_cuda_emit(k->low, k->target, kind, &b, &d);
        }
    } else if (!strcmp(what, "llvm") || !strcmp(what, "asm") || !strcmp(what, "obj")) {
        if (gpu) {
            diag_plain(&d, DIAG_ERROR, "perfc_emit: %s needs a CPU target, and %s is not one", what, k->target);
            ok = false;
        } else {
#ifdef PERFC_HAVE_LLVM
            CgEmitKind kind = !strcmp(what, "llvm") ? CG_EMIT_LLVM : !strcmp(what, "asm") ? CG_EMIT_ASM : CG_EMIT_OBJ;
            ok = ir_all_bound(k->k, &d) && cg_llvm_emit(k->low, k->target, kind, &b, &d);
#else
            diag_plain(&d, DIAG_ERROR, "perfc_emit: this libperfc was built without LLVM");
            ok = false;
#endif
        }
    } else {
        diag_plain(&d, DIAG_ERROR, "perfc_emit: what is ir, llvm, asm, obj, cuda, ptx or cubin, not '%s'", what);
        ok = false;
    }
    if (ok) {
        *out = dup_bytes(b.s ? b.s : "", b.len);
        if (len)
            *len = b.len;
    }
    sb_free(&b);
    hand_back(&d, errors);
    return ok ? PERFC_OK : PERFC_ECOMPILE;
}

static uint64_t fresh_seed(void)
{
    return (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() ^ (uint64_t)(now_seconds() * 1e9);
}

static char *report_json(const RtResult *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    rt_report_json(r, f);
    fclose(f);
    return buf;
}

int perfc_run(perfc_kernel *k, const perfc_run_options *o, char **report, char **errors)
{
    Diags d;
    diag_init(&d);
    if (report)
        *report = NULL;
    if (!k) {
        diag_plain(&d, DIAG_ERROR, "perfc_run: the kernel is NULL");
        hand_back(&d, errors);
        return PERFC_ECOMPILE;
    }
    if (!ir_all_bound(k->k, &d)) {
        hand_back(&d, errors);
        return PERFC_ECOMPILE;
    }
    RunOptions ro;
    rt_options_init(&ro);
    ro.target = k->target;
    ro.threads = o ? o->threads : 0;
    ro.compare = o ? o->compare : NULL;
    ro.seed = o && o->seed ? o->seed : fresh_seed();
    int rc = 1;
    RtDevice *dev = rt_device_open(k->target, &rc, &d);
    if (!dev) {
        hand_back(&d, errors);
        return rc;
    }
    RtResult r;
    memset(&r, 0, sizeof r);
    rc = rt_evaluate(dev, k->low, k->u, &ro, &r, &d);
    if ((rc == 0 || rc == 2) && report)
        *report = report_json(&r);
    dev->close(dev);
    hand_back(&d, errors);
    return rc;
}

int perfc_tune(perfc_kernel *k, const perfc_run_options *o, char **report, char **schedule, char **errors)
{
    Diags d;
    diag_init(&d);
    if (report)
        *report = NULL;
    if (schedule)
        *schedule = NULL;
    if (!k) {
        diag_plain(&d, DIAG_ERROR, "perfc_tune: the kernel is NULL");
        hand_back(&d, errors);
        return PERFC_ECOMPILE;
    }
    TuneInput in = {.prog = k->p->prog, .ast = k->ast, .values = k->values, .bound = k->bound,
                    .scheds = k->scheds, .nscheds = k->nscheds};
    TuneOptions to;
    tune_options_init(&to);
    to.target = k->target;
    to.threads = o ? o->threads : 0;
    to.compare = o ? o->compare : NULL;
    to.budget = o ? o->budget : 0;
    to.time_limit = o ? o->time_limit : 0;
    to.db_path = o ? o->db : NULL;
    to.seed = o && o->seed ? o->seed : fresh_seed();
    to.quiet = true;
    to.progress = 0;
    TuneResult res;
    memset(&res, 0, sizeof res);
    int rc = tune_kernel(&in, &to, &res, &d);
    if (rc == 0) {
        if (report && res.has_final)
            *report = report_json(&res.final);
        if (schedule && res.ntop > 0 && res.top[0].schedule)
            *schedule = xstrdup(res.top[0].schedule);
    }
    tune_result_free(&res);
    hand_back(&d, errors);
    return rc;
}
