/* What perfc does with a scheduled kernel: a short report, --actions, --run on a
 * target, or code for -emit llvm|asm|obj|cuda|ptx|cubin.  Each back end is reached
 * through its module's header; this file only routes. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "passes/xform.h"

int cli_run_interp(Compilation *c);

int cli_report(Compilation *c)
{
    Kernel *k = c->kernel;
    printf("kernel %s: %d buffer%s, %d schedule%s applied\n", k->name, k->nbufs, k->nbufs == 1 ? "" : "s", c->nscheds,
           c->nscheds == 1 ? "" : "s");
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
    if (!strcmp(c->o->target, "interp"))
        return cli_run_interp(c);
    diag_plain(&c->diags, DIAG_ERROR, "--run -target %s is not available in this build yet; use -target interp",
               c->o->target);
    return 1;
}

int cli_emit_code(Compilation *c)
{
    diag_plain(&c->diags, DIAG_ERROR, "code emission is not available in this build yet");
    return 1;
}

int cli_autotune(Compilation *c)
{
    diag_plain(&c->diags, DIAG_ERROR, "--autotune is not available in this version of perfc");
    return 1;
}

int cli_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("perfc demo: run `make demo` (scripts/demo.sh)\n", stderr);
    return 1;
}
