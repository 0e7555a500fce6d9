/* Internal interface of the perfc command: one Compilation carries a run from the
 * source text to the scheduled IR; the files of cli/ each handle one kind of output. */
#ifndef PERFC_CLI_CLI_H
#define PERFC_CLI_CLI_H

#include "ir/ir.h"
#include "lang/ast.h"
#include "options.h"

typedef struct Compilation {
    Options *o;
    Diags diags;
    Arena *arena;              /* AST */
    Source src;
    char *text;
    Program *prog;
    AstKernel *ast;            /* the chosen kernel */
    int64_t *values;           /* per AST parameter */
    bool *bound;
    const Target *target;      /* -target, parsed once by compile_kernel */
    Kernel *unscheduled;       /* lowered, before any schedule */
    Kernel *kernel;            /* after the pipeline (schedules applied) */
    const AstSchedule *scheds[MAX_SCHEDS + 16];
    int nscheds;
    /* The default schedule of a CPU contraction without one (tune/default.c): when
     * set it is the last of scheds, and the tuner is given the others only. */
    char *default_sched;
    char default_origin[160];
} Compilation;

/* The schedules the file and -s gave (scheds without the default one). */
static inline int compilation_user_scheds(const Compilation *c) { return c->nscheds - (c->default_sched != NULL); }

void compilation_init(Compilation *c, Options *o);
void compilation_free(Compilation *c);
/* Reads, parses and checks the file.  Returns an exit status (0 to go on). */
int compile_front(Compilation *c);
/* Picks the kernel, binds -D, lowers, applies schedules.  Exit status. */
int compile_kernel(Compilation *c);
/* Writes to -o or stdout. */
int write_output(Compilation *c, const char *data, size_t len);
/* Lowers the chosen kernel again (a fresh copy, no schedule). */
Kernel *lower_fresh(Compilation *c);

int cli_report(Compilation *c);
int cli_run(Compilation *c);
int cli_emit_code(Compilation *c);
int cli_actions(Compilation *c);
int cli_autotune(Compilation *c);
/* --plot FILE.svg of a run (r) or of a tuning run (tr, may be NULL): cli/plot.c.
 * Returns 0, or 1 with a diagnostic when the file cannot be written. */
struct RtResult;
struct TuneResult;
int cli_plot_run(Compilation *c, const struct RtResult *r, const struct TuneResult *tr);

#endif
