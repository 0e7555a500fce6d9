/* `perfc FILE --autotune` and `perfc tune --show|--export`: the command-line face of
 * the autotuner (tune/tune.h) and of its database (runtime/tunedb.h).
 *
 *   perfc tune --show   [--db FILE] [-k KERNEL] [--all]   one line per key (its best
 *                                                         row), or every row
 *   perfc tune --export [--db FILE] [-k KERNEL]           the winning schedule of
 *                                                         each key, as PDL
 *   perfc tune --show --plot FILE.svg [-k KERNEL]         the database's history
 *                                                         as a picture (cli/plot.c) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tune/tune.h"

int cli_tune_autotune(Compilation *c);
int cli_tune_main(int argc, char **argv);
int cli_plot_history(TuneDb *db, const char *kernel, const char *path, Diags *d); /* cli/plot.c */

int cli_tune_autotune(Compilation *c)
{
    if (!strcmp(c->o->target, "interp")) {
        diag_plain(&c->diags, DIAG_ERROR, "--autotune needs a target that runs code (host, x86_64..., sm_*), "
                                          "not the interpreter");
        return 1;
    }
    if (!ir_all_bound(c->kernel, &c->diags) || !rt_check_sizes(c->kernel, 8, &c->diags))
        return 1;
    TuneInput in = {0};
    in.prog = c->prog;
    in.ast = c->ast;
    in.values = c->values;
    in.bound = c->bound;
    in.scheds = c->scheds;
    in.nscheds = compilation_user_scheds(c);
    in.threads = c->o->threads;
    TuneOptions to;
    tune_options_init(&to);
    to.target = c->o->target;
    to.threads = c->o->threads;
    to.compare = c->o->compare;
    to.budget = c->o->budget;
    to.time_limit = c->o->time_limit;
    to.db_path = c->o->db;
    to.json = c->o->json;
    to.verbose = c->o->verbose;
    to.use_model = !c->o->no_model;
    /* progress on stderr: a status line on a terminal, else a line per phase */
    ProgressTerm term;
    Progress prog = {progress_term_fn, &term};
    progress_term_init(&term, stderr, -1);
    to.progress = 0;
    if (!c->o->quiet)
        to.prog = &prog;
    /* Ctrl-C stops the search between candidates; the best so far is validated,
     * reported and stored (a second Ctrl-C ends perfc at once). */
    progress_catch_sigint();
    to.stop = progress_stop_flag();
    /* Fresh inputs on every run unless the user pins them (as --run does). */
    to.seed = c->o->seed_given ? c->o->seed
                               : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() ^
                                     (uint64_t)(now_seconds() * 1e9);
    if (getenv("PERFC_RETUNE") && *getenv("PERFC_RETUNE") == '1')
        to.retune = true;
    TuneResult res;
    int rc = tune_kernel(&in, &to, &res, &c->diags);
    progress_term_clear(&term);
    signal(SIGINT, SIG_DFL);
    if (c->o->plot && res.has_final) {
        int prc = cli_plot_run(c, &res.final, &res);
        if (rc == 0)
            rc = prc;
    }
    tune_result_free(&res);
    return rc;
}

static void tune_usage(FILE *f)
{
    fputs("usage: perfc tune --show [--all] [--db FILE] [-k KERNEL] [--plot FILE.svg]\n"
          "       perfc tune --export [--db FILE] [-k KERNEL]\n"
          "\n"
          "Reads the tuning database (default $XDG_CACHE_HOME/perfc/tune.db, else ~/.cache/perfc/tune.db).\n"
          "  --show     one line per tuned key with its best measurement (--all: every measurement)\n"
          "  --export   the winning schedule of each key, in PDL syntax, ready to paste into the .pdl\n"
          "  --plot F   with --show: also draw every measurement of each key over time into the SVG file F\n",
          f);
}

typedef struct ShowCtx {
    bool all, export;
    int n;
    TuneDb *db; /* for the state of each key's search */
} ShowCtx;

static void show_row(void *ctx, const TuneRecord *r)
{
    ShowCtx *s = ctx;
    char when[32];
    time_t t = (time_t)r->created;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    if (s->export) {
        printf("%s# %s  %s  -target %s  threads %d  %s  (%s)\n", s->n ? "\n" : "", r->key.kernel, r->key.shape,
               r->key.target, r->key.threads, r->key.device, when);
        printf("# median %.4g ms, %.4g GFLOP/s, relative error %.2e; key %s\n", r->median_ms, r->gflops,
               r->rel_error, r->key.id);
        TuneStatus st = tunedb_search_status(s->db, &r->key, NULL);
        if (st != TUNE_FINAL)
            printf("# search %s: the best so far, not the winner of a finished search\n", tune_status_name(st));
        StrBuf b = {0};
        tune_block(r->key.kernel, r->key.target, r->schedule, &b);
        fputs(b.s, stdout);
        sb_free(&b);
    } else if (s->all) {
        printf("%-6lld %-16s %-14s %-24s %-7s t%-2d %10.4g ms %9.4g GF/s %s%s %s  %s\n", (long long)r->id, r->key.id,
               r->key.kernel, r->key.shape, r->key.target, r->key.threads, r->median_ms, r->gflops,
               r->valid ? "valid" : "INVALID", r->final ? " final" : "", when, r->params);
    } else {
        printf("%-16s %-14s %-24s %-7s t%-2d %10.4g ms %9.4g GF/s  %s  %-11s  %s\n", r->key.id, r->key.kernel,
               r->key.shape, r->key.target, r->key.threads, r->median_ms, r->gflops, when,
               tune_status_name(tunedb_search_status(s->db, &r->key, NULL)), r->params);
    }
    s->n++;
}

int cli_tune_main(int argc, char **argv)
{
    const char *db = NULL, *kernel = NULL, *plot = NULL;
    ShowCtx s = {0};
    bool show = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--show")) {
            show = true;
        } else if (!strcmp(a, "--export")) {
            s.export = true;
        } else if (!strcmp(a, "--all")) {
            s.all = true;
        } else if (!strcmp(a, "--db") && i + 1 < argc) {
            db = argv[++i];
        } else if (!strcmp(a, "-k") && i + 1 < argc) {
            kernel = argv[++i];
        } else if (!strcmp(a, "--plot") && i + 1 < argc) {
            plot = argv[++i];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            tune_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "perfc: error: tune: unknown or incomplete option '%s'\n", a);
            tune_usage(stderr);
            return 1;
        }
    }
    if (show == s.export) {
        fputs("perfc: error: tune: give exactly one of --show and --export\n", stderr);
        tune_usage(stderr);
        return 1;
    }
    if (plot && !show) {
        fputs("perfc: error: tune: --plot goes with --show\n", stderr);
        return 1;
    }
    char *path = db ? xstrdup(db) : tunedb_default_path();
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "perfc: error: no tuning database at %s (perfc FILE --autotune makes one)\n", path);
        free(path);
        return 1;
    }
    Diags d;
    diag_init(&d);
    TuneDb *t = tunedb_open(path, &d);
    int rc = 0;
    s.db = t;
    if (!t) {
        rc = 1;
    } else {
        if (show && !s.all)
            printf("%-16s %-14s %-24s %-7s %-3s %13s %14s  %-19s  %-11s  %s\n", "key", "kernel", "shape", "target",
                   "thr", "best median", "", "measured (UTC)", "search", "parameters");
        int n = tunedb_foreach(t, s.all && !s.export, kernel, show_row, &s, &d);
        if (n < 0)
            rc = 1;
        else if (plot && n > 0 && cli_plot_history(t, kernel, plot, &d))
            rc = 1;
        else if (n == 0)
            fprintf(stderr, "perfc: tune: no %s in %s%s%s\n", s.export ? "valid winner" : "record", path,
                    kernel ? " for kernel " : "", kernel ? kernel : "");
        tunedb_close(t);
    }
    diag_flush(&d, stderr);
    diag_free(&d);
    free(path);
    return rc;
}
