/* What perfc does with a scheduled kernel: a short report, --actions, --run on a
 * target, or code for -emit llvm|asm|obj|cuda|ptx|cubin.  Each back end is reached
 * through its module's header; this file only routes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "codegen/cuda/cg_cuda.h"
#include "passes/xform.h"
#include "runtime/progress.h"
#include "runtime/runtime.h"
#ifdef PERFC_HAVE_LLVM
#include "codegen/llvm/cg_llvm.h"
#endif

int cli_run_interp(Compilation *c);

int cli_report(Compilation *c)
{
    Kernel *k = c->kernel;
    printf("kernel %s: %d buffer%s, %d schedule%s applied%s\n", k->name, k->nbufs, k->nbufs == 1 ? "" : "s",
           c->nscheds, c->nscheds == 1 ? "" : "s",
           !c->default_sched                           ? ""
           : strstr(c->default_origin, "contraction") ? " (the default schedule for contractions: --verbose shows it)"
                                                        : " (the default schedule: --verbose shows it)");
    for (int i = 0; i < k->nparams; i++) {
        if (k->params[i].bound)
            printf("  %s = %lld\n", k->params[i].name, (long long)k->params[i].value);
        else
            printf("  %s unbound (-D %s=...)\n", k->params[i].name, k->params[i].name);
    }
    printf("(-emit ir shows the loop nest; --run compiles, validates and times it)\n");
    return 0;
}

int cli_actions(Compilation *c)
{
    StrBuf b = {0};
    xf_list_actions(c->kernel, &b);
    int st = write_output(c, b.s ? b.s : "", b.len);
    sb_free(&b);
    return st;
}

int cli_run(Compilation *c)
{
    if (!ir_all_bound(c->kernel, &c->diags))
        return 1;
    /* before any allocation: every tensor and the run's working set must fit */
    if (!rt_check_sizes(c->kernel, 8, &c->diags))
        return 1;
    if (c->target->cls == TARGET_INTERP)
        return cli_run_interp(c);
    RunOptions ro;
    rt_options_init(&ro);
    ro.target = c->o->target;
    ro.threads = c->o->threads;
    ro.compare = c->o->compare;
    ro.json = c->o->json;
    ro.verbose = c->o->verbose;
    ro.inputs = c->o->inputs;
    ro.save_inputs = c->o->save_inputs;
    ro.save_outputs = c->o->save_outputs;
    /* Fresh inputs on every run unless the user pins them. */
    ro.seed = c->o->seed_given ? c->o->seed
                               : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() ^ (uint64_t)(now_seconds() * 1e9);
    ProgressTerm term;
    Progress prog = {progress_term_fn, &term};
    progress_term_init(&term, stderr, -1);
    if (!c->o->quiet)
        ro.progress = &prog;
    RtResult *keep = c->o->plot ? xcalloc(1, sizeof *keep) : NULL;
    ro.keep = keep;
    int rc = rt_run(c->kernel, c->unscheduled, &ro, &c->diags);
    progress_term_clear(&term);
    if (keep && (rc == 0 || rc == 2)) {
        int prc = cli_plot_run(c, keep, NULL);
        if (rc == 0)
            rc = prc;
    }
    free(keep);
    return rc;
}

int cli_emit_code(Compilation *c)
{
    const char *t = c->o->target;
    EmitKind e = c->o->emit;
    bool gpu_emit = e == EMIT_CUDA || e == EMIT_PTX || e == EMIT_CUBIN;
    if (gpu_emit != target_is_gpu(c->target)) {
        diag_plain(&c->diags, DIAG_ERROR, "-emit %s needs a %s target, and -target %s is not one%s",
                   gpu_emit ? "cuda/ptx/cubin" : "llvm/asm/obj", gpu_emit ? "GPU (sm_80 ... sm_90a)" : "CPU", t,
                   gpu_emit ? "" : " (GPU code is emitted with -emit cuda, ptx or cubin)");
        return 1;
    }
    if (!ir_all_bound(c->kernel, &c->diags))
        return 1;
    StrBuf out = {0};
    bool ok;
    if (gpu_emit) {
        CgCudaKind kind = e == EMIT_CUDA ? CG_CUDA_SRC : e == EMIT_PTX ? CG_CUDA_PTX : CG_CUDA_CUBIN;
        ok = cg_cuda_emit(c->kernel, t, kind, &out, &c->diags);
    } else {
#ifdef PERFC_HAVE_LLVM
        CgEmitKind kind = e == EMIT_LLVM ? CG_EMIT_LLVM : e == EMIT_ASM ? CG_EMIT_ASM : CG_EMIT_OBJ;
        ok = cg_llvm_emit(c->kernel, t, kind, &out, &c->diags);
#else
        diag_plain(&c->diags, DIAG_ERROR, "this perfc was built without LLVM: CPU code cannot be emitted "
                   "(install llvm-19-dev and rebuild)");
        ok = false;
#endif
    }
    int st = ok ? write_output(c, out.s ? out.s : "", out.len) : 1;
    sb_free(&out);
    return st;
}

int cli_tune_autotune(Compilation *c); /* cli/tune.c */

int cli_autotune(Compilation *c)
{
    return cli_tune_autotune(c);
}

