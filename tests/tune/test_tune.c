/* Autotuner and tuning-database tests, one per command-line name (CTest runs each
 * as its own test):
 *
 *   search      the tuner finds the known best of a synthetic space, exhaustively
 *               and by evolution, with a planted measure whose cost is a known
 *               function of the scheduled IR (so the timing is deterministic)
 *   db          round trip: records written, best and listing read back, reopen
 *   concurrent  two processes write one database at once; nothing is lost
 *   crash       a tuning process is killed with SIGKILL mid-run; the database opens,
 *               passes integrity_check and holds every measurement it finished
 *   repro       real tuning on the host; the exported schedule, pasted into the
 *               kernel's source, reproduces the measured candidate's IR exactly
 *   warm        a second tuning run with the same key answers from the database
 *               without a search */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "tune/tune.h"
#include "runtime/tunedb.h"
#include "tune/model.h"
#ifdef PERFC_HAVE_SQLITE
#include <sqlite3.h>
#endif

static int failures;
#define CHECK(c, ...)                                                        \
    do {                                                                     \
        if (!(c)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* ---- a kernel from text ---- */

typedef struct Src {
    Arena *arena;
    Source src;
    Program *prog;
    AstKernel *ast;
    int64_t values[16];
    bool bound[16];
    TuneInput in;
    const AstSchedule *scheds[8];
} Src;

static bool src_open(Src *s, const char *text, int64_t size)
{
    memset(s, 0, sizeof *s);
    s->arena = arena_new();
    s->src.path = "<test>";
    s->src.text = arena_strdup(s->arena, text);
    s->src.len = strlen(text);
    Diags d;
    diag_init(&d);
    s->prog = parse_program(s->arena, &s->src, &d);
    if (!d.nerrors)
        sema_program(s->prog, &d);
    if (d.nerrors) {
        diag_flush(&d, stderr);
        diag_free(&d);
        return false;
    }
    diag_free(&d);
    s->ast = s->prog->kernels[0];
    for (int i = 0; i < s->ast->nparams; i++) {
        s->values[i] = size;
        s->bound[i] = true;
    }
    s->in.prog = s->prog;
    s->in.ast = s->ast;
    s->in.values = s->values;
    s->in.bound = s->bound;
    for (int i = 0; i < s->prog->nschedules && s->in.nscheds < 8; i++)
        s->scheds[s->in.nscheds++] = s->prog->schedules[i];
    s->in.scheds = s->scheds;
    /* the search itself is under test: the schedule's parameters alone, the
     * planted costs a function of them */
    s->in.own_only = true;
    return true;
}

static void src_close(Src *s)
{
    arena_free(s->arena);
}

/* used by the tests that run on the host JIT (PERFC_HAVE_LLVM) */
__attribute__((unused)) static const char gemm_text[] = "kernel g(M, N, K) {\n"
                                "  in  A: f32[M, K]\n"
                                "  in  B: f32[K, N]\n"
                                "  out C: f32[M, N]\n"
                                "  C[i, j] = sum(k) A[i, k] * B[k, j]\n"
                                "}\n";

/* ---- the planted measure: cost from the IR ---- */

static int64_t loop_extent(const Kernel *k, const char *name)
{
    Node *l = ir_find_loop((Kernel *)k, name);
    int64_t lo = 0, hi = -1;
    if (!l || !ir_eval_size(k, l->u.loop.lo, &lo) || !ir_eval_size(k, l->u.loop.hi, &hi))
        return -1; /* a factor of 1 leaves no inner loop */
    return hi - lo;
}

typedef struct Planted {
    int calls;
    int notify_fd;   /* crash test: a byte per measurement started */
    int sleep_us;
} Planted;

/* The cost is smallest at ii = 8, ji = 4, ki = 16: a bowl in log2 of each extent,
 * so neighbouring candidates are near in cost, as real tile sizes tend to be. */
static int planted_measure(void *ctx, RtDevice *dev, const Kernel *k, const Kernel *u, const RunOptions *o,
                           RtResult *r, Diags *d)
{
    (void)dev, (void)u, (void)o, (void)d;
    Planted *p = ctx;
    p->calls++;
    if (p->notify_fd >= 0) {
        char c = 'm';
        if (write(p->notify_fd, &c, 1) != 1)
            return 3;
    }
    if (p->sleep_us)
        usleep((useconds_t)p->sleep_us);
    int64_t ei = loop_extent(k, "ii"), ej = loop_extent(k, "ji");
    double a = ei > 0 ? log2((double)ei) : 0, b = ej > 0 ? log2((double)ej) : 0;
    int64_t kk = loop_extent(k, "ki");
    double c = kk > 0 ? log2((double)kk) : 0;
    memset(r, 0, sizeof *r);
    r->k = k;
    r->valid = true;
    r->rel_error = 1e-7;
    double cost = 1 + fabs(a - 3) + 0.7 * fabs(b - 2) + (kk > 0 ? 0.5 * fabs(c - 4) : 0);
    r->time.median = r->time.min = r->time.max = cost;
    r->time.reps = 3;
    r->gflops = 1 / cost;
    return 0;
}

static void planted_options(TuneOptions *o, Planted *p, const char *db)
{
    tune_options_init(o);
    o->measure = planted_measure;
    o->measure_ctx = p;
    o->device_name = "planted test device";
    o->threads = 1;
    o->progress = 0;
    o->quiet = true;
    o->db_path = db;
    o->no_db = db == NULL;
    o->seed = 42;
}

static int test_search(void)
{
    /* exhaustive: 6 x 6 = 36 candidates, budget 64 */
    Src s;
    const char *t1 = "kernel g(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
                     "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n"
                     "schedule g {\n  param TI in [1, 2, 4, 8, 16, 32]\n  param TJ in [32, 16, 8, 4, 2, 1]\n"
                     "  tile(i, j, TI, TJ)\n}\n";
    if (!src_open(&s, t1, 64))
        return 1;
    Planted p = {.notify_fd = -1};
    TuneOptions o;
    planted_options(&o, &p, NULL);
    o.budget = 64;
    TuneResult r;
    Diags d;
    diag_init(&d);
    int rc = tune_kernel(&s.in, &o, &r, &d);
    diag_flush(&d, stderr);
    CHECK(rc == 0, "status %d", rc);
    /* the 36 and the kernel as written, always a candidate (measured last) */
    CHECK(r.measured == 37, "exhaustive search measured %d of 36 + 1", r.measured);
    CHECK(r.ntop == TUNE_TOP, "top %d", r.ntop);
    CHECK(r.ntop && !strcmp(r.top[0].params, "TI=8 TJ=4"), "best %s, want TI=8 TJ=4", r.ntop ? r.top[0].params : "");
    CHECK(r.best_block && strstr(r.best_block, "param TI = 8") && strstr(r.best_block, "tile(i, j, TI, TJ)"),
          "block:\n%s", r.best_block ? r.best_block : "");
    tune_result_free(&r);
    src_close(&s);

    /* evolutionary: 8 x 8 x 6 = 384 candidates, budget 60 */
    const char *t2 = "kernel g(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
                     "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n"
                     "schedule g {\n  param TI in [1, 2, 4, 8, 16, 32, 64, 128]\n"
                     "  param TJ in [128, 64, 32, 16, 8, 4, 2, 1]\n  param TK in [2, 4, 8, 16, 32, 64]\n"
                     "  tile(i, j, TI, TJ)\n  split(k, TK)\n}\n";
    if (!src_open(&s, t2, 128))
        return 1;
    int found = 0;
    for (int seed = 1; seed <= 5; seed++) {
        Planted q = {.notify_fd = -1};
        planted_options(&o, &q, NULL);
        o.budget = 60;
        o.seed = (uint64_t)seed;
        rc = tune_kernel(&s.in, &o, &r, &d);
        diag_flush(&d, stderr);
        CHECK(rc == 0, "status %d", rc);
        CHECK(r.measured <= 60, "budget exceeded: %d", r.measured);
        CHECK(q.calls == r.measured + 1, "measure called %d times for %d measured + 1 final", q.calls, r.measured);
        found += r.ntop && !strcmp(r.top[0].params, "TI=8 TJ=4 TK=16");
        tune_result_free(&r);
    }
    /* 60 of 384 at random would find the best with p = 0.16 per seed */
    CHECK(found >= 4, "evolution found the best in %d of 5 seeds", found);
    src_close(&s);
    diag_free(&d);
    return 0;
}

/* ---- database ---- */

static void fill_key(TuneKey *k, const char *kernel, int threads)
{
    memset(k, 0, sizeof *k);
    snprintf(k->kernel, sizeof k->kernel, "%s", kernel);
    snprintf(k->fingerprint, sizeof k->fingerprint, "00ff00ff00ff00ff");
    snprintf(k->shape, sizeof k->shape, "M=64 N=64 K=64");
    snprintf(k->dtypes, sizeof k->dtypes, "A:f32 B:f32 C:f32");
    snprintf(k->target, sizeof k->target, "host");
    snprintf(k->device, sizeof k->device, "test device");
    snprintf(k->version, sizeof k->version, "0.1.0");
    k->threads = threads;
    tunekey_finish(k);
}

static void add_row(TuneDb *db, const TuneKey *k, double ms, bool valid, const char *params, Diags *d)
{
    TuneRecord r;
    memset(&r, 0, sizeof r);
    r.key = *k;
    r.schedule = "param T = 4\nsplit(i, T)\n";
    r.params = params;
    r.median_ms = r.min_ms = r.max_ms = ms;
    r.gflops = 1 / ms;
    r.valid = valid;
    r.status = valid ? 0 : 2;
    if (!tunedb_add(db, &r, d)) {
        diag_flush(d, stderr);
        failures++;
    }
}

static void count_row(void *ctx, const TuneRecord *r)
{
    (void)r;
    ++*(int *)ctx;
}

/* A database written before the baseline columns existed (the first file format)
 * opens, keeps its rows and takes new ones. */
static int test_db_upgrade(const char *dir)
{
#ifndef PERFC_HAVE_SQLITE
    (void)dir;
    return 0;
#else
    char path[512];
    snprintf(path, sizeof path, "%s/old-format.db", dir);
    unlink(path);
    sqlite3 *raw;
    CHECK(sqlite3_open(path, &raw) == SQLITE_OK, "create the old file");
    /* the row's key fields hash to its key, as perfc wrote it */
    TuneKey k;
    memset(&k, 0, sizeof k);
    snprintf(k.kernel, sizeof k.kernel, "g");
    snprintf(k.fingerprint, sizeof k.fingerprint, "f");
    snprintf(k.shape, sizeof k.shape, "M=1");
    snprintf(k.dtypes, sizeof k.dtypes, "A:f32");
    snprintf(k.target, sizeof k.target, "host");
    snprintf(k.device, sizeof k.device, "dev");
    snprintf(k.version, sizeof k.version, "0.1.0");
    k.threads = 1;
    tunekey_finish(&k);
    char old[2048];
    snprintf(old, sizeof old,
             "CREATE TABLE measurement(id INTEGER PRIMARY KEY, key TEXT NOT NULL, kernel TEXT NOT NULL,"
             " fingerprint TEXT NOT NULL, shape TEXT NOT NULL, dtypes TEXT NOT NULL, target TEXT NOT NULL,"
             " device TEXT NOT NULL, version TEXT NOT NULL, threads INTEGER NOT NULL, schedule TEXT NOT NULL,"
             " params TEXT NOT NULL, median_ms REAL, min_ms REAL, max_ms REAL, gflops REAL, compile_ms REAL,"
             " valid INTEGER NOT NULL, rel_error REAL, status INTEGER NOT NULL, final INTEGER NOT NULL,"
             " created REAL NOT NULL);"
             "INSERT INTO measurement VALUES(1, '%s', 'g', 'f', 'M=1', 'A:f32', 'host', 'dev', '0.1.0', 1,"
             " 'split(i, 4)\n', 'T=4', 1.5, 1.4, 1.6, 2.0, 3.0, 1, 1e-7, 0, 1, 1700000000);",
             k.id);
    CHECK(sqlite3_exec(raw, old, NULL, NULL, NULL) == SQLITE_OK, "old schema and row");
    sqlite3_close(raw);
    Diags d;
    diag_init(&d);
    TuneDb *db = tunedb_open(path, &d);
    CHECK(db, "open the old file: %s", d.text.s ? d.text.s : "");
    if (!db)
        return 1;
    /* no search state in an old file: a key with a final row was a finished search */
    CHECK(tunedb_search_status(db, &k, NULL) == TUNE_FINAL, "an old final row reads as a final search");
    TuneRecord r;
    CHECK(tunedb_best(db, &k, &r) && r.median_ms == 1.5 && r.reps == 0 && !r.base_call[0], "old row read");
    CHECK(tunedb_final_of(db, &k, "split(i, 4)\n", &r) && r.reps == 0, "old final row, no stored reps");
    tunedb_close(db);
    db = tunedb_open(path, &d); /* a second open finds the columns there */
    CHECK(db, "reopen the upgraded file");
    if (db) {
        char *ic = tunedb_integrity(db);
        CHECK(!strcmp(ic, "ok"), "integrity after upgrade %s", ic);
        free(ic);
        tunedb_close(db);
    }
    diag_free(&d);
    return 0;
#endif
}

static int test_db(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/roundtrip.db", dir);
    unlink(path);
    Diags d;
    diag_init(&d);
    TuneDb *db = tunedb_open(path, &d);
    CHECK(db, "open: %s", d.text.s ? d.text.s : "");
    if (!db)
        return 1;
    TuneKey k1, k2;
    fill_key(&k1, "g", 1);
    fill_key(&k2, "g", 2);
    CHECK(strcmp(k1.id, k2.id) != 0, "threads must change the key");
    add_row(db, &k1, 3.0, true, "T=1", &d);
    add_row(db, &k1, 1.0, false, "T=2", &d); /* fastest but invalid: never the best */
    add_row(db, &k1, 2.0, true, "T=3", &d);
    add_row(db, &k2, 5.0, true, "T=4", &d);
    TuneRecord b;
    CHECK(tunedb_best(db, &k1, &b) && !strcmp(b.params, "T=3") && b.median_ms == 2.0, "best of k1");
    CHECK(!strcmp(b.key.shape, k1.shape) && !strcmp(b.key.id, k1.id), "shape and key read back");
    CHECK(!strcmp(b.key.device, "test device") && b.key.threads == 1, "key fields read back");
    CHECK(!strcmp(b.schedule, "param T = 4\nsplit(i, T)\n"), "schedule text read back: %s", b.schedule);
    CHECK(tunedb_count(db, &k1) == 3, "count k1 %d", tunedb_count(db, &k1));
    tunedb_close(db);

    db = tunedb_open(path, &d);
    CHECK(db, "reopen");
    if (!db)
        return 1;
    int n = 0;
    CHECK(tunedb_foreach(db, true, NULL, count_row, &n, &d) == 4 && n == 4, "all rows: %d", n);
    n = 0;
    CHECK(tunedb_foreach(db, false, NULL, count_row, &n, &d) == 2 && n == 2, "best per key: %d", n);
    n = 0;
    CHECK(tunedb_foreach(db, true, "nothing", count_row, &n, &d) == 0, "kernel filter");
    char *ic = tunedb_integrity(db);
    CHECK(!strcmp(ic, "ok"), "integrity %s", ic);
    free(ic);

    /* A final row keeps the baseline timed beside it; tunedb_final_of finds the
     * latest final row of a schedule, and a search row (no baseline) is not one. */
    TuneRecord f;
    memset(&f, 0, sizeof f);
    f.key = k1;
    f.schedule = "param T = 4\nsplit(i, T)\n";
    f.params = "T=3";
    f.median_ms = 2.5, f.min_ms = 2.4, f.max_ms = 2.7, f.gflops = 0.4, f.reps = 9;
    f.valid = true, f.final = true;
    f.base_call = "cblas_sgemm";
    f.base_median_ms = 2.0, f.base_min_ms = 1.9, f.base_max_ms = 2.2, f.base_gflops = 0.5, f.base_reps = 11;
    CHECK(tunedb_add(db, &f, &d), "final row");
    TuneRecord g;
    CHECK(tunedb_final_of(db, &k1, f.schedule, &g), "final row found");
    CHECK(g.final && g.reps == 9 && g.median_ms == 2.5 && !strcmp(g.base_call, "cblas_sgemm") &&
              g.base_median_ms == 2.0 && g.base_min_ms == 1.9 && g.base_max_ms == 2.2 && g.base_gflops == 0.5 &&
              g.base_reps == 11,
          "final row read back (reps %d, base %s %g)", g.reps, g.base_call, g.base_median_ms);
    CHECK(!tunedb_final_of(db, &k2, f.schedule, &g), "no final row under k2");
    CHECK(!tunedb_final_of(db, &k1, "split(i, 8)\n", &g), "no final row for another schedule");

    /* The state of a search: running in this process, then interrupted or final. */
    TuneSearch ss;
    CHECK(tunedb_search_status(db, &k2, &ss) == TUNE_INTERRUPTED, "rows without a state or a final row");
    CHECK(tunedb_search_begin(db, &k2, &d) && tunedb_search_status(db, &k2, &ss) == TUNE_RUNNING &&
              ss.pid == (int64_t)getpid(),
          "begin: %s", tune_status_name(ss.status));
    CHECK(tunedb_search_end(db, &k2, TUNE_INTERRUPTED, &d) && tunedb_search_status(db, &k2, NULL) == TUNE_INTERRUPTED,
          "end interrupted");
    double started = ss.started;
    CHECK(tunedb_search_begin(db, &k2, &d) && tunedb_search_status(db, &k2, &ss) == TUNE_RUNNING &&
              ss.started == started,
          "a resumed search keeps its start");
    CHECK(tunedb_search_end(db, &k2, TUNE_FINAL, &d) && tunedb_search_status(db, &k2, NULL) == TUNE_FINAL, "end final");
    CHECK(!tunedb_search_end(db, &k2, TUNE_RUNNING, &d), "a search does not end running");
    diag_free(&d);
    diag_init(&d);
    tunedb_close(db);

    /* Values read back are checked: rows damaged outside perfc (a time that is
     * text, times out of order, a key field that no longer hashes to the key, a
     * negative time) are ignored with a warning, never used; a damaged search
     * state never reads as final. */
    sqlite3 *raw;
    CHECK(sqlite3_open(path, &raw) == SQLITE_OK, "raw open");
    const char *damage =
        "UPDATE measurement SET median_ms = 'fast' WHERE params = 'T=3' AND final = 0;"
        "INSERT INTO measurement(key, kernel, fingerprint, shape, dtypes, target, device, version, threads,"
        " schedule, params, median_ms, min_ms, max_ms, gflops, compile_ms, valid, rel_error, status, final, created)"
        " SELECT key, kernel, fingerprint, shape, dtypes, target, device, version, threads, schedule, 'T=5',"
        " 0.5, 0.9, 0.4, 2, 1, 1, 0, 0, 1, created FROM measurement WHERE params = 'T=1';"
        "INSERT INTO measurement(key, kernel, fingerprint, shape, dtypes, target, device, version, threads,"
        " schedule, params, median_ms, min_ms, max_ms, gflops, compile_ms, valid, rel_error, status, final, created)"
        " SELECT key, 'h', fingerprint, shape, dtypes, target, device, version, threads, schedule, 'T=6',"
        " 0.2, 0.2, 0.2, 5, 1, 1, 0, 0, 1, created FROM measurement WHERE params = 'T=1';"
        "INSERT INTO measurement(key, kernel, fingerprint, shape, dtypes, target, device, version, threads,"
        " schedule, params, median_ms, min_ms, max_ms, gflops, compile_ms, valid, rel_error, status, final, created)"
        " SELECT key, kernel, fingerprint, shape, dtypes, target, device, version, threads, schedule, 'T=7',"
        " 0.1, -1, 0.1, 10, 1, 1, 0, 0, 1, created FROM measurement WHERE params = 'T=1';"
        "UPDATE search SET status = 'finale';";
    CHECK(sqlite3_exec(raw, damage, NULL, NULL, NULL) == SQLITE_OK, "damage: %s", sqlite3_errmsg(raw));
    sqlite3_close(raw);
    db = tunedb_open(path, &d);
    CHECK(db, "reopen after damage");
    if (!db)
        return 1;
    CHECK(tunedb_best(db, &k1, &b) && !strcmp(b.params, "T=3") && b.final && b.median_ms == 2.5,
          "best of k1 past the damaged rows: %s %g", b.params, b.median_ms);
    /* the three that rank before it: final rows faster than it, each damaged (the
     * row with a text time is not final, and final rows rank first) */
    CHECK(tunedb_ignored(db) == 3, "%d damaged rows ignored, want 3", tunedb_ignored(db));
    n = 0;
    tunedb_foreach(db, true, NULL, count_row, &n, &d);
    CHECK(n == 4 && tunedb_ignored(db) == 4, "listing skips the damaged rows: %d of 8 listed", n);
    CHECK(tunedb_search_status(db, &k2, NULL) == TUNE_INTERRUPTED, "a damaged state reads as interrupted");
    tunedb_close(db);
    diag_free(&d);
    return test_db_upgrade(dir);
}

enum { ROWS_PER_WRITER = 150 };

static int test_concurrent(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/concurrent.db", dir);
    unlink(path);
    pid_t kids[2];
    for (int w = 0; w < 2; w++) {
        kids[w] = fork();
        if (kids[w] == 0) {
            Diags d;
            diag_init(&d);
            TuneDb *db = tunedb_open(path, &d);
            if (!db) {
                diag_flush(&d, stderr);
                _exit(1);
            }
            TuneKey k;
            fill_key(&k, w ? "writer1" : "writer0", 1);
            int before = failures;
            for (int i = 0; i < ROWS_PER_WRITER; i++)
                add_row(db, &k, 1.0 + i, true, "T=1", &d);
            tunedb_close(db);
            _exit(failures != before);
        }
    }
    for (int w = 0; w < 2; w++) {
        int st = 0;
        waitpid(kids[w], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", w);
    }
    Diags d;
    diag_init(&d);
    TuneDb *db = tunedb_open(path, &d);
    CHECK(db, "open after writers");
    if (!db)
        return 1;
    int n = 0;
    tunedb_foreach(db, true, NULL, count_row, &n, &d);
    CHECK(n == 2 * ROWS_PER_WRITER, "rows %d, want %d", n, 2 * ROWS_PER_WRITER);
    char *ic = tunedb_integrity(db);
    CHECK(!strcmp(ic, "ok"), "integrity %s", ic);
    free(ic);
    tunedb_close(db);
    diag_free(&d);
    return 0;
}

static int test_crash(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/crash.db", dir);
    unlink(path);
    int fds[2];
    if (pipe(fds))
        return 1;
    pid_t kid = fork();
    if (kid == 0) {
        close(fds[0]);
        Src s;
        const char *t = "kernel g(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
                        "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n"
                        "schedule g {\n  param TI in [1, 2, 4, 8, 16, 32, 64, 128]\n"
                        "  param TJ in [128, 64, 32, 16, 8, 4, 2, 1]\n  tile(i, j, TI, TJ)\n}\n";
        if (!src_open(&s, t, 128))
            _exit(1);
        Planted p = {.notify_fd = fds[1], .sleep_us = 20000};
        TuneOptions o;
        planted_options(&o, &p, path);
        o.budget = 64; /* about 1.3 s of measuring: killed long before the end */
        TuneResult r;
        Diags d;
        diag_init(&d);
        tune_kernel(&s.in, &o, &r, &d);
        _exit(0);
    }
    close(fds[1]);
    /* wait for 20 measurements to start, then kill without warning */
    int started = 0;
    char c;
    while (started < 20 && read(fds[0], &c, 1) == 1)
        started++;
    kill(kid, SIGKILL);
    int st = 0;
    waitpid(kid, &st, 0);
    /* count what the child started before it died */
    while (read(fds[0], &c, 1) == 1)
        started++;
    close(fds[0]);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the child was not killed (status %d)", st);

    Diags d;
    diag_init(&d);
    TuneDb *db = tunedb_open(path, &d);
    CHECK(db, "reopen after SIGKILL: %s", d.text.s ? d.text.s : "");
    if (!db)
        return 1;
    char *ic = tunedb_integrity(db);
    CHECK(!strcmp(ic, "ok"), "integrity after SIGKILL: %s", ic);
    free(ic);
    int n = 0;
    tunedb_foreach(db, true, NULL, count_row, &n, &d);
    /* measurement m is committed before measurement m + 1 starts */
    CHECK(n >= started - 1 && n <= started, "%d rows after %d measurements started", n, started);
    /* The killed search never wrote its end: its `running` row names a process that
     * is gone, so it reads as interrupted, and a later run resumes it instead of
     * serving its best row as the answer. */
    TuneKey key;
    memset(&key, 0, sizeof key);
    TuneStatus ts = TUNE_NONE;
    char first_id[24] = "";
    {
        /* the key of the killed run: the one key in the file */
        sqlite3 *raw;
        if (sqlite3_open(path, &raw) == SQLITE_OK) {
            sqlite3_stmt *q;
            if (sqlite3_prepare_v2(raw, "SELECT key FROM search", -1, &q, NULL) == SQLITE_OK) {
                if (sqlite3_step(q) == SQLITE_ROW)
                    snprintf(first_id, sizeof first_id, "%s", (const char *)sqlite3_column_text(q, 0));
                sqlite3_finalize(q);
            }
            sqlite3_close(raw);
        }
        snprintf(key.id, sizeof key.id, "%s", first_id);
        ts = tunedb_search_status(db, &key, NULL);
    }
    CHECK(first_id[0] && ts == TUNE_INTERRUPTED, "the killed search reads as %s", tune_status_name(ts));
    tunedb_close(db);

    Src s;
    const char *t = "kernel g(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
                    "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n"
                    "schedule g {\n  param TI in [1, 2, 4, 8, 16, 32, 64, 128]\n"
                    "  param TJ in [128, 64, 32, 16, 8, 4, 2, 1]\n  tile(i, j, TI, TJ)\n}\n";
    if (!src_open(&s, t, 128))
        return 1;
    Planted p = {.notify_fd = -1};
    TuneOptions o;
    planted_options(&o, &p, path);
    o.budget = 64;
    TuneResult r;
    tune_kernel(&s.in, &o, &r, &d);
    diag_flush(&d, stderr);
    CHECK(r.status == 0 && !r.from_db && r.found == TUNE_INTERRUPTED, "resumed run: status %d, from_db %d, found %s",
          r.status, r.from_db, tune_status_name(r.found));
    CHECK(r.resumed == n && r.measured == 64 && p.calls == 64 - n + 1,
          "resumed %d of %d stored rows, measured %d, measure called %d times", r.resumed, n, r.measured, p.calls);
    CHECK(r.ntop && !strcmp(r.top[0].params, "TI=8 TJ=4"), "the resumed search's winner %s",
          r.ntop ? r.top[0].params : "");
    tune_result_free(&r);
    db = tunedb_open(path, &d);
    if (db) {
        ts = tunedb_search_status(db, &key, NULL);
        CHECK(ts == TUNE_FINAL, "after the resumed search finished: %s", tune_status_name(ts));
        tunedb_close(db);
    }
    /* a finished search is served */
    Planted p2 = {.notify_fd = -1};
    planted_options(&o, &p2, path);
    o.budget = 64;
    tune_kernel(&s.in, &o, &r, &d);
    CHECK(r.status == 0 && r.from_db && r.found == TUNE_FINAL && p2.calls == 1,
          "third run: status %d, from_db %d, %d measurements", r.status, r.from_db, p2.calls);
    tune_result_free(&r);
    src_close(&s);
    diag_free(&d);
    return 0;
}

/* ---- reproducibility and the warm database, on the real host ---- */

/* ---- a device's own f64 GEMM as the golden, seen through the tuner's proxy ---- */

#ifdef PERFC_HAVE_LLVM
static RtDevice *hook_dev;
static int hook_calls, hook_wrong_dev;

/* A plain f64 product standing in for cuBLAS DGEMM: the tuner must hand it the real
 * device (its impl is the device's own state), never the proxy it wraps it in. */
static bool fake_gemm_f64(RtDevice *dev, const RtGemm *g, const double *a, const double *b, double *c, Diags *d)
{
    (void)d;
    if (!g)
        return true;
    hook_calls++;
    if (dev != hook_dev)
        hook_wrong_dev++;
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < g->k; k++)
                acc += a[i * g->k + k] * b[k * g->n + j];
            c[i * g->n + j] = acc;
        }
    return true;
}
#endif

static int test_golden_hook(void)
{
#ifndef PERFC_HAVE_LLVM
    fprintf(stderr, "skipped: no LLVM\n");
    return 77;
#else
    Src s;
    if (!src_open(&s, gemm_text, 320)) /* 2*320^3 flops: above the interpreter's share */
        return 1;
    Diags d;
    diag_init(&d);
    hook_dev = rt_host_open(&d);
    CHECK(hook_dev, "host device");
    if (!hook_dev)
        return 1;
    hook_dev->gemm_f64 = fake_gemm_f64;
    hook_dev->gemm_f64_name = "test-dgemm";
    TuneOptions o;
    tune_options_init(&o);
    o.threads = 1;
    o.budget = 2;
    o.progress = 0;
    o.quiet = true;
    o.no_db = true;
    o.seed = 5;
    o.cand_min_time_s = 0.002;
    o.device = hook_dev;
    TuneResult r;
    int rc = tune_kernel(&s.in, &o, &r, &d);
    diag_flush(&d, stderr);
    CHECK(rc == 0 && r.has_final && r.final.valid, "tuning with the device's golden: status %d", rc);
    CHECK(!strcmp(r.final.golden, "test-dgemm"), "golden %s", r.final.golden);
    CHECK(hook_calls >= 2 && hook_wrong_dev == 0, "hook called %d times, %d with the proxy", hook_calls,
          hook_wrong_dev);
    tune_result_free(&r);
    hook_dev->close(hook_dev);
    src_close(&s);
    diag_free(&d);
    return 0;
#endif
}

static int test_repro(const char *dir, bool warm)
{
#ifndef PERFC_HAVE_LLVM
    (void)dir, (void)warm;
    fprintf(stderr, "skipped: no LLVM\n");
    return 77;
#else
    char path[512];
    snprintf(path, sizeof path, "%s/%s.db", dir, warm ? "warm" : "repro");
    unlink(path);
    Src s;
    if (!src_open(&s, gemm_text, 64))
        return 1;
    TuneOptions o;
    tune_options_init(&o);
    o.threads = 2;
    o.budget = 6;
    o.progress = 0;
    o.quiet = true;
    o.db_path = path;
    o.seed = 7;
    o.cand_min_time_s = 0.002;
    TuneResult r;
    Diags d;
    diag_init(&d);
    int rc = tune_kernel(&s.in, &o, &r, &d);
    diag_flush(&d, stderr);
    CHECK(rc == 0, "tuning status %d", rc);
    if (rc) {
        src_close(&s);
        return 1;
    }
    CHECK(r.measured >= 1 && r.measured <= 6, "measured %d", r.measured);
    CHECK(r.has_final && r.final.valid, "the winner was re-validated");
    if (warm) {
        TuneResult w;
        double t0 = now_seconds();
        rc = tune_kernel(&s.in, &o, &w, &d);
        double el = now_seconds() - t0;
        diag_flush(&d, stderr);
        CHECK(rc == 0 && w.from_db, "second run: status %d, from_db %d", rc, w.from_db);
        CHECK(w.measured == 0, "second run measured %d", w.measured);
        CHECK(w.best_block && r.best_block && !strcmp(w.best_block, r.best_block), "same winner");
        CHECK(el < 1.0, "warm answer took %.2f s", el);
        /* re-validated now on one fresh input set; the times are the winner's
         * final measurement, not a new one */
        CHECK(w.final.valid && w.final.checks == 1, "warm answer validated (%d checks)", w.final.checks);
        CHECK(w.final.measured_at > 0 && w.final.time.median == r.final.time.median &&
                  w.final.time.reps == r.final.time.reps,
              "warm answer reports the stored times (%g ms, %d reps; final run %g ms, %d reps)",
              w.final.time.median, w.final.time.reps, r.final.time.median, r.final.time.reps);
        tune_result_free(&w);
        tune_result_free(&r);
        src_close(&s);
        diag_free(&d);
        return 0;
    }

    /* Export from the database, as `perfc tune --export` does, paste the block
     * after the kernel, and compile the file the ordinary way. */
    TuneDb *db = tunedb_open(path, &d);
    CHECK(db, "open");
    TuneRecord best;
    bool have = db && tunedb_best(db, &r.key, &best);
    CHECK(have, "the database has a winner for the key");
    if (!have) {
        src_close(&s);
        return 1;
    }
    StrBuf file = {0};
    sb_puts(&file, gemm_text);
    tune_block("g", "host", best.schedule, &file);
    tunedb_close(db);
    Src p;
    CHECK(src_open(&p, file.s, 64), "the exported block parses:\n%s", file.s);
    CHECK(p.in.nscheds == 1, "one schedule");
    Kernel *k = lower_kernel(p.prog, p.ast, p.values, p.bound, &d);
    PipelineOpts po = {0};
    po.schedules = p.scheds;
    po.nschedules = p.in.nscheds;
    CHECK(k && pipeline_run(k, &po, &d), "the exported schedule applies");
    diag_flush(&d, stderr);
    StrBuf ir = {0};
    if (k)
        ir_print_kernel(k, &ir);
    CHECK(ir.s && r.best_ir && !strcmp(ir.s, r.best_ir), "IR differs:\n--- measured\n%s--- from the export\n%s",
          r.best_ir ? r.best_ir : "", ir.s ? ir.s : "");
    if (k)
        ir_free(k);
    sb_free(&ir);
    sb_free(&file);
    src_close(&p);
    tune_result_free(&r);
    src_close(&s);
    diag_free(&d);
    return 0;
#endif
}

/* ---- a ranked search measures each template once first ---- */

/* A planted cost that only the packed-panel templates make cheap (a buffer named
 * like the panel, `B_...`), so a model fitted on earlier searches ranks the other
 * templates last; and a progress sink that records the template of each measured
 * candidate ("[template N] ..."). */
static int planted_packed(void *ctx, RtDevice *dev, const Kernel *k, const Kernel *u, const RunOptions *o, RtResult *r,
                          Diags *d)
{
    (void)dev, (void)u, (void)o, (void)d;
    ((Planted *)ctx)->calls++;
    bool packed = false;
    for (int i = 0; i < k->nbufs; i++)
        packed |= !strncmp(k->bufs[i]->name, "B_", 2);
    memset(r, 0, sizeof *r);
    r->k = k;
    r->valid = true;
    r->rel_error = 1e-7;
    r->time.median = r->time.min = r->time.max = packed ? 1.0 : 4.0;
    r->time.reps = 3;
    r->gflops = 1 / r->time.median;
    return 0;
}

typedef struct Order {
    int t[64];
    int n;
} Order;

static void record_template(void *ctx, const ProgEvent *e)
{
    Order *o = ctx;
    int t;
    if (e->phase == PROG_SEARCH && e->kind == PROG_TICK && e->what && sscanf(e->what, "[template %d]", &t) == 1 &&
        o->n < 64)
        o->t[o->n++] = t;
}

static int test_explore(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/explore.db", dir);
    remove(path);
    const char *text = "kernel g(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
                       "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n";
    /* three searches at other sizes give the model its rows (20 needed) */
    static const int64_t train[3] = {192, 224, 288};
    Order ord = {0};
    for (int round = 0; round < 4; round++) {
        Src s;
        if (!src_open(&s, text, round < 3 ? train[round] : 256))
            return 1;
        Planted p = {.notify_fd = -1};
        TuneOptions o;
        planted_options(&o, &p, path);
        o.measure = planted_packed;
        o.budget = 12;
        Progress pr = {.fn = record_template, .ctx = &ord};
        ord.n = 0;
        if (round == 3) o.prog = &pr;
        TuneResult r;
        Diags d;
        diag_init(&d);
        int rc = tune_kernel(&s.in, &o, &r, &d);
        diag_flush(&d, stderr);
        diag_free(&d);
        CHECK(rc == 0, "search %d: status %d", round, rc);
        tune_result_free(&r);
        src_close(&s);
    }
    /* budget 12, one kept for the kernel as written: the first 5 measurements cover
     * the four rule templates, the unpacked ones (ranked last) included */
    bool seen[TUNE_MAX_TEMPLATES + 1] = {0};
    int distinct = 0;
    for (int i = 0; i < ord.n && i < 5; i++)
        if (ord.t[i] >= 1 && ord.t[i] <= TUNE_MAX_TEMPLATES && !seen[ord.t[i]]) {
            seen[ord.t[i]] = true;
            distinct++;
        }
    CHECK(ord.n >= 5, "only %d measurements reported", ord.n);
    CHECK(distinct >= 4, "the first 5 measurements cover %d templates: %d %d %d %d %d", distinct, ord.t[0], ord.t[1],
          ord.t[2], ord.t[3], ord.t[4]);
    return 0;
}

/* The cost model on rows whose cost is a known function of two features: the LASSO
 * must keep those two, rank unseen candidates of a new group in the right order,
 * refuse to fit on too few rows, and be deterministic.  Each group has its own
 * offset (a kernel's own speed), which the within-group centring must ignore. */
static double model_truth(const double *f) { return 0.8 * f[TM_VEC_REGS] - 0.5 * f[TM_REUSE_L2]; }

static int test_model(void)
{
    Rng r;
    rng_seed(&r, 42);
    TuneModel m, m2;
    tm_init(&m);
    tm_init(&m2);
    double f[TM_NFEAT];
    for (int i = 0; i < TM_MIN_ROWS - 1; i++) {
        for (int j = 0; j < TM_NFEAT; j++)
            f[j] = rng_uniform(&r, 0, 4);
        tm_add(&m, f, 1e6, exp(model_truth(f)), 1);
        tm_add(&m2, f, 1e6, exp(model_truth(f)), 1);
    }
    CHECK(!tm_fit(&m), "a model was fitted on %d rows", m.n);
    for (int g = 0; g < 4; g++)
        for (int i = 0; i < 60; i++) {
            for (int j = 0; j < TM_NFEAT; j++)
                f[j] = rng_uniform(&r, 0, 4);
            double work = 1e6 * (g + 1);
            double ms = work * exp(model_truth(f) + 3.0 * g + rng_uniform(&r, -0.05, 0.05));
            tm_add(&m, f, work, ms, (uint64_t)g + 10);
            tm_add(&m2, f, work, ms, (uint64_t)g + 10);
        }
    CHECK(tm_fit(&m), "no fit on %d rows", m.n);
    tm_fit(&m2);
    CHECK(m.w[TM_VEC_REGS] > 0.5 && m.w[TM_REUSE_L2] < -0.3, "weights %g %g: the two true features not kept",
          m.w[TM_VEC_REGS], m.w[TM_REUSE_L2]);
    CHECK(m.cv_r2 > 0.9, "cross-validated R^2 %g on a nearly exact linear cost", m.cv_r2);
    /* ranking: every pair of new candidates ordered as the truth orders them
     * (pairs closer than the noise aside) */
    int wrong = 0, pairs = 0;
    double fa[TM_NFEAT], fb[TM_NFEAT];
    for (int i = 0; i < 200; i++) {
        for (int j = 0; j < TM_NFEAT; j++) {
            fa[j] = rng_uniform(&r, 0, 4);
            fb[j] = rng_uniform(&r, 0, 4);
        }
        double dt = model_truth(fa) - model_truth(fb);
        if (fabs(dt) < 0.2)
            continue;
        pairs++;
        wrong += (tm_predict(&m, fa) - tm_predict(&m, fb)) * dt < 0;
    }
    CHECK(pairs > 50 && wrong == 0, "%d of %d pairs ranked wrongly", wrong, pairs);
    CHECK(m.nonzero == m2.nonzero && m.lambda == m2.lambda && tm_predict(&m, fa) == tm_predict(&m2, fa),
          "two fits of the same rows differ");
    /* the database's text form round-trips */
    StrBuf b = {0};
    tm_features_text(fa, 12345, &b);
    double back[TM_NFEAT], w = 0;
    CHECK(tm_features_parse(b.s, back, &w) && w == 12345, "features text '%s' does not parse back", b.s);
    for (int j = 0; j < TM_NFEAT; j++)
        CHECK(fabs(back[j] - fa[j]) < 1e-3 * (1 + fabs(fa[j])), "feature %s: %g back as %g", tm_feature_name(j), fa[j],
              back[j]);
    CHECK(!tm_features_parse("w=1 2 3", back, &w), "a short feature text parsed");
    CHECK(!tm_features_parse("", back, &w), "an empty feature text parsed");
    sb_free(&b);
    tm_free(&m);
    tm_free(&m2);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_tune search|db|concurrent|crash|repro|warm TMPDIR\n");
        return 2;
    }
    const char *what = argv[1], *dir = argv[2];
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    int rc;
    if (!strcmp(what, "search"))
        rc = test_search();
    else if (!strcmp(what, "db"))
        rc = test_db(dir);
    else if (!strcmp(what, "concurrent"))
        rc = test_concurrent(dir);
    else if (!strcmp(what, "crash"))
        rc = test_crash(dir);
    else if (!strcmp(what, "repro"))
        rc = test_repro(dir, false);
    else if (!strcmp(what, "warm"))
        rc = test_repro(dir, true);
    else if (!strcmp(what, "golden_hook"))
        rc = test_golden_hook();
    else if (!strcmp(what, "model"))
        rc = test_model();
    else if (!strcmp(what, "explore"))
        rc = test_explore(dir);
    else {
        fprintf(stderr, "unknown test %s\n", what);
        return 2;
    }
    if (rc == 77)
        return 77;
    if (failures)
        fprintf(stderr, "%s: %d failure%s\n", what, failures, failures == 1 ? "" : "s");
    return rc || failures ? 1 : 0;
}
