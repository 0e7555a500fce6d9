/* The perfc command: reads a PDL file, checks it, lowers the chosen kernel to the
 * loop-nest IR, applies its schedule, and then emits, interprets, or compiles,
 * validates and times it (runtime/).  It is a thin driver: every stage lives in its
 * module and reports through Diags, and this file decides only what to run and
 * which exit status to give (`perfc --help`: 0 ok, 1 usage/compile error, 2 validation
 * failed, 3 runtime or device error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "cli.h"
#include "runtime/runtime.h"

/* Every exit from main after the compilation starts goes through here, so the
 * diagnostics are printed once and everything is released (LeakSanitizer runs the
 * whole test suite). */
static int finish(Compilation *c, int status)
{
    diag_flush(&c->diags, stderr);
    compilation_free(c);
    options_free(c->o);
    return status;
}

int main(int argc, char **argv)
{
    rt_blas_fit_core(argv); /* first: it may start perfc again with the library's right kernel */
    if (argc >= 2 && !strcmp(argv[1], "tune")) {
        int cli_tune_main(int argc, char **argv); /* cli/tune.c */
        return cli_tune_main(argc - 1, argv + 1);
    }
    if (argc >= 2 && !strcmp(argv[1], "lib")) {
        int cli_lib_main(int argc, char **argv); /* cli/lib.c */
        return cli_lib_main(argc - 1, argv + 1);
    }
    if (argc >= 2 && !strcmp(argv[1], "dojo")) {
        int cli_dojo_main(int argc, char **argv); /* cli/dojo_proto.c */
        return cli_dojo_main(argc - 1, argv + 1);
    }
    Options o;
    int r = options_parse(&o, argc, argv);
    if (r) {
        options_free(&o);
        return r < 0 ? 0 : 1;
    }

    Compilation c;
    compilation_init(&c, &o);
    int status = compile_front(&c);
    if (status)
        return finish(&c, status);
    if (o.emit == EMIT_AST) {
        StrBuf b = {0};
        ast_print_program(c.prog, &b);
        status = write_output(&c, b.s ? b.s : "", b.len);
        sb_free(&b);
        return finish(&c, status);
    }
    status = compile_kernel(&c);
    if (status)
        return finish(&c, status);
    if (o.actions) {
        status = cli_actions(&c);
        return finish(&c, status);
    }
    switch (o.emit) {
    case EMIT_IR: {
        StrBuf b = {0};
        ir_print_kernel(c.kernel, &b);
        status = write_output(&c, b.s ? b.s : "", b.len);
        sb_free(&b);
        break;
    }
    case EMIT_REPORT:
        if (o.autotune) /* --compare implies --run, but with --autotune it names the final baseline */
            status = cli_autotune(&c);
        else if (o.run)
            status = cli_run(&c);
        else
            status = cli_report(&c);
        break;
    default:
        status = cli_emit_code(&c);
        break;
    }
    return finish(&c, status);
}
