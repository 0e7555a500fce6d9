/* The autotuner: searches schedules for one kernel, measures candidates with the
 * harness, remembers every measurement in the tuning database and prints the winner
 * as a schedule that can be pasted into the .pdl.
 *
 * A search space is one or more schedule templates: ordinary AstSchedules whose
 * `param NAME in [...]` items are the tunable values (a template and a concrete
 * schedule are one syntax).  A kernel's own schedule with parameters is tuned as
 * written; a kernel without a schedule for the target gets templates built from
 * rules per kernel class (tune/rules.c).  A candidate is one template plus
 * one candidate index per parameter.
 *
 * The search (tune/search.c) is exhaustive when the space fits the budget, else
 * evolutionary (mutation and crossover of parameter choices).  Before anything is
 * compiled each candidate is scheduled (IR only, cheap) and pruned statically: a
 * refused transformation, a vector loop that is not a whole number of SIMD
 * registers, a GPU launch over the target's limits.  Survivors are compiled in
 * parallel on every core (CPU targets), then measured one at a time with
 * rt_evaluate, which validates each of them; the winner is validated again on fresh
 * inputs and timed afresh before it is reported. */
#ifndef PERFC_TUNE_TUNE_H
#define PERFC_TUNE_TUNE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../lang/ast.h"
#include "../passes/xform.h"
#include "../runtime/progress.h"
#include "../runtime/runtime.h"
#include "../runtime/tunedb.h"

enum { TUNE_MAX_PARAMS = 16, TUNE_MAX_TEMPLATES = 12, TUNE_TOP = 5 };

/* What is tuned: the checked kernel and how to lower it (as the CLI does). */
typedef struct TuneInput {
    const Program *prog;
    const AstKernel *ast;
    const int64_t *values;  /* per AST parameter (lower_kernel) */
    const bool *bound;
    /* The schedules that apply to this kernel and target (the file's, then -s), in
     * order.  With parameters among them they are a template of the search space
     * (on a GPU the only one); without, the rules add a template after them. */
    const AstSchedule *const *scheds;
    int nscheds;
    /* With parameters in the schedules: they alone are the space, even on a CPU,
     * where the rules' templates otherwise compete with them (tune_space) */
    bool own_only;
    /* The threads the kernel will run on (--threads); <= 0: every core.  The CPU
     * templates deal work out to that many (a second column block for a second
     * thread that never ran: a 300 x 300 x 2000 product on one thread of a Zen 3 at
     * 0.85 of OpenBLAS, 0.93-1.06 in one block) */
    int threads;
} TuneInput;

struct TuneRule;

/* One template: a schedule whose parameters are the search dimensions.  Either
 * written (s: the kernel's own schedule, or one read back from the database) or
 * built by a rule through the typed builder (rule: tune/builder.h). */
typedef struct TuneTemplate {
    AstSchedule *s;
    const struct TuneRule *rule;
    const char *origin;     /* "the kernel's schedule", "rules: contraction", ... */
    int nparams;
    const char *names[TUNE_MAX_PARAMS];
    int ncands[TUNE_MAX_PARAMS];
} TuneTemplate;

typedef struct TuneSpace {
    TuneTemplate t[TUNE_MAX_TEMPLATES];
    int n;
    const char *kclass;     /* the kernel class the rules saw */
    double size;            /* candidates in all templates together */
} TuneSpace;

/* The measurement hook: rt_evaluate's signature.  Tests plant a function whose
 * cost is a known function of the parameters. */
typedef int (*TuneMeasureFn)(void *ctx, RtDevice *dev, const Kernel *k, const Kernel *u, const RunOptions *o,
                             RtResult *r, Diags *d);

typedef struct TuneOptions {
    const char *target;     /* NULL: "host" */
    int threads;            /* <= 0: every core (kernel and baseline) */
    const char *compare;    /* baseline for the final report, or NULL */
    int budget;             /* candidates to measure; <= 0: 48 */
    double time_limit;      /* seconds of search; <= 0: 300 */
    const char *db_path;    /* NULL: tunedb_default_path() */
    bool no_db;             /* tune without memory */
    bool retune;            /* measure even when the database has a winner */
    uint64_t seed;          /* search randomness and the inputs of each check */
    int jobs;               /* compile threads; <= 0: every core */
    int progress;           /* with prog NULL: 1 a status line on stderr, 0 off, -1: when stderr is a terminal */
    const Progress *prog;   /* progress events (runtime/progress.h); overrides `progress` */
    /* Set (to nonzero) from outside, e.g. by a SIGINT handler: the search stops
     * between candidates and the best so far is validated, reported and stored. */
    volatile sig_atomic_t *stop;
    bool use_model;         /* rank candidates by the cost model fitted from the database (default on) */
    FILE *out;              /* the final report; NULL: stdout */
    bool json;              /* the winner's report as JSON (the table goes to stderr) */
    bool verbose;           /* the harness traces each check and phase on stderr (--verbose) */
    RtDevice *device;       /* NULL: rt_device_open(target) */
    const char *device_name;/* overrides the key's device name (tests) */
    TuneMeasureFn measure;  /* NULL: rt_evaluate */
    void *measure_ctx;
    double cand_min_time_s; /* timing per candidate; <= 0: 0.05 */
    bool quiet;             /* no report at all (tests) */
} TuneOptions;

void tune_options_init(TuneOptions *o);

typedef struct TuneEntry {
    char *params;           /* "TI=4 TJ=64" */
    char *schedule;         /* schedule_print text */
    double median_ms, min_ms, max_ms, gflops;
    bool stored;            /* times read back from an interrupted search, not measured in this run */
} TuneEntry;

/* One measured candidate of a search, in order: for the best-so-far plot and the
 * time-to-within-5% figure. */
typedef struct TunePoint {
    double t_s;             /* seconds since the tuner started */
    double ms;              /* its median; 0 when invalid or failed */
    double best_ms;         /* the best median so far (0: none yet) */
} TunePoint;

typedef struct TuneResult {
    int status;             /* exit status (`perfc --help`) */
    bool from_db;           /* the winner came from the database */
    TuneStatus found;       /* the search state the database held for the key at the start */
    int resumed;            /* measurements taken from an interrupted search, not re-measured */
    bool interrupted;       /* stopped early (Ctrl-C: o->stop) with candidates left in the budget:
                             * the best so far is reported and stored, and the database records
                             * the search as interrupted, so the next run resumes it instead of
                             * serving that best as final */
    TuneKey key;
    double space_size;
    int generated, pruned, measured, invalid, failed;
    double wall_s, search_s;
    TuneEntry top[TUNE_TOP];
    int ntop;
    char *best_block;       /* `schedule K for T { ... }`, pasteable */
    char *best_ir;          /* ir_print_kernel of the winner as measured */
    RtResult final;         /* the winner on fresh inputs (valid when status 0) */
    bool has_final;
    bool time_limited;      /* stopped by the time limit with candidates left */
    TunePoint *trace;       /* every measured candidate, in order */
    int ntrace;
    double t_within5;       /* seconds until the best so far was within 5% of the search's best; < 0 none */
    int n_within5;          /* candidates measured by then */
    double lib_ms;          /* the library (--compare) timed in the search, 0 when not */
    char model[320];        /* the cost model used, in words; empty when none */
    int stopped_early;      /* candidates whose timing stopped early (RunOptions.stop_above_ms) */
    int ref_hits;           /* input sets whose reference was reused (RtRefCache) */
    /* CPU: the best few candidates and the default timed again in interleaved rounds
     * (retime_contenders): how many, how many rounds, and the search's own winner
     * when the rounds chose another (its params; NULL when they agreed) */
    int retimed, retime_rounds;
    char *retime_was;
    double retime_s;
    char plain_note[192];   /* why the kernel as written was not measured; empty when it was (or is a template) */
    /* Where the search's wall time went, seconds (the report's `profile` line):
     * building the space, reading and fitting the model, proposing and scheduling
     * candidates (IR), compiling, and inside the measurements the harness's phases
     * (RtResult.spent), the database writes, and the winner's final run. */
    struct {
        double space, model, schedule, compile, setup, inputs, golden, checks, timing, baseline, db, final;
    } spent;
} TuneResult;

/* ---- tune/search.c ---- */
/* Tunes one kernel.  Fills res and returns its status: 0 a validated winner, 2 no
 * candidate passed validation, 1 usage or compile error, 3 runtime error. */
int tune_kernel(const TuneInput *in, const TuneOptions *o, TuneResult *res, Diags *d);
void tune_result_free(TuneResult *r);
/* The database key of a kernel (lowered k, checked ast) on a device. */
void tune_make_key(const AstKernel *ast, const Kernel *k, const char *target, const char *device, int threads,
                   TuneKey *key);
/* The pasteable block for a concrete schedule text. */
void tune_block(const char *kernel, const char *target, const char *schedule, StrBuf *out);
/* ---- tune/apply.c ---- */
/* Lowers the kernel afresh and applies template t with the chosen parameters (t
 * NULL: the kernel as lowered, unscheduled), then the rest of the schedule pipeline.
 * text (may be NULL) receives the candidate as a concrete schedule (`param X = v`
 * lines, then the statements: what the database, the report and the pasteable
 * block hold).  NULL with diagnostics when refused.  Every candidate, template
 * check, final run and database answer is built here; thread-safe. */
Kernel *tune_apply(const TuneInput *in, const TuneTemplate *t, const ParamChoice *ch, int nch, StrBuf *text,
                   Diags *d);
/* The text of a candidate without keeping its kernel (for a written template, no
 * lowering at all). */
bool tune_text(const TuneInput *in, const TuneTemplate *t, const ParamChoice *ch, int nch, StrBuf *text);
/* A copy of the scheduled k with target's legalisation and lowering passes run
 * (passes/pipeline.c pipeline_target): what the back ends accept.  NULL with
 * diagnostics when the target refuses it. */
Kernel *tune_lower(const Kernel *k, const Target *target, Diags *d);
/* ---- tune/rules.c ---- */
/* Builds the search space: the input's schedules when they have parameters, else
 * templates from the rules for the kernel's class on target (u: the lowered,
 * unscheduled kernel).  Templates live in arena a. */
bool tune_space(const TuneInput *in, const Kernel *u, const Target *target, Arena *a, TuneSpace *sp, Diags *d);
/* ---- tune/default.c ---- */
/* The schedule a contraction without one gets: the text of the first contraction
 * template at its defaults (on a CPU the machine's blocking; on a GPU a tensor-core
 * or pipelined shared-memory template), checked to apply and lower whole; malloc'd,
 * NULL when none applies (another kernel class, the input has schedules).  origin
 * (may be NULL) receives the template's name. */
char *tune_default_schedule(const TuneInput *in, const Kernel *u, const Target *target, char *origin, size_t cap);
/* Lanes of one SIMD register for dtype t on a CPU target (8 for f32 on AVX2). */
int tune_vector_lanes(const Target *target, DType t);

#endif
