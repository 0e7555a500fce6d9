/* The tuning database on SQLite (see tunedb.h for what is kept and why).
 *
 * Durability choices: journal_mode=WAL so readers never block the tuner and a
 * killed writer leaves at most an uncommitted frame that the next open discards;
 * synchronous=NORMAL, which in WAL mode loses nothing when a process dies (only a
 * power cut can cost the last commits); one INSERT per transaction, so every
 * finished measurement is on disk before the next candidate runs; a busy timeout so
 * two tuners sharing one file wait for each other instead of failing. */
#include "tunedb.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lang/util.h"

const char *tune_status_name(TuneStatus s)
{
    switch (s) {
    case TUNE_RUNNING: return "running";
    case TUNE_INTERRUPTED: return "interrupted";
    case TUNE_FINAL: return "final";
    default: return "none";
    }
}

uint64_t tunedb_hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_str(const char *s, uint64_t h)
{
    /* the NUL separates fields, so "ab"+"c" and "a"+"bc" differ */
    return tunedb_hash(s, strlen(s) + 1, h);
}

void tunekey_finish(TuneKey *k)
{
    uint64_t h = TUNEDB_HASH0;
    h = hash_str(k->kernel, h);
    h = hash_str(k->fingerprint, h);
    h = hash_str(k->shape, h);
    h = hash_str(k->dtypes, h);
    h = hash_str(k->target, h);
    h = hash_str(k->device, h);
    h = hash_str(k->version, h);
    h = tunedb_hash(&k->threads, sizeof k->threads, h);
    snprintf(k->id, sizeof k->id, "%016llx", (unsigned long long)h);
}

char *tunedb_default_path(void)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    StrBuf b = {0};
    if (xdg && *xdg)
        sb_printf(&b, "%s/perfc/tune.db", xdg);
    else
        sb_printf(&b, "%s/.cache/perfc/tune.db", getenv("HOME") ? getenv("HOME") : ".");
    return b.s;
}

#ifdef PERFC_HAVE_SQLITE
#include <sqlite3.h>

struct TuneDb {
    sqlite3 *db;
    sqlite3_stmt *best;
    char *path;
    int64_t *warned; /* ids of rows ignored (and warned about) so far */
    int nwarned, capwarned;
    int ignored;
    /* strings of the last row handed out: [0] by tunedb_best, [1] by tunedb_final_of */
    char *str[2][3];
};

/* mkdir -p of the folder that holds path. */
static bool make_parent(const char *path)
{
    char *p = xstrdup(path);
    char *slash = strrchr(p, '/');
    if (!slash) {
        free(p);
        return true;
    }
    *slash = 0;
    for (char *q = p + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            if (mkdir(p, 0755) && errno != EEXIST) {
                free(p);
                return false;
            }
            *q = '/';
        }
    bool ok = !*p || mkdir(p, 0755) == 0 || errno == EEXIST;
    free(p);
    return ok;
}

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS measurement("
    " id INTEGER PRIMARY KEY,"
    " key TEXT NOT NULL, kernel TEXT NOT NULL, fingerprint TEXT NOT NULL, shape TEXT NOT NULL,"
    " dtypes TEXT NOT NULL, target TEXT NOT NULL, device TEXT NOT NULL, version TEXT NOT NULL,"
    " threads INTEGER NOT NULL,"
    " schedule TEXT NOT NULL, params TEXT NOT NULL,"
    " median_ms REAL, min_ms REAL, max_ms REAL, gflops REAL, compile_ms REAL,"
    " valid INTEGER NOT NULL, rel_error REAL, status INTEGER NOT NULL, final INTEGER NOT NULL,"
    " created REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS measurement_key ON measurement(key, valid, median_ms);"
    "CREATE TABLE IF NOT EXISTS search("
    " key TEXT PRIMARY KEY, status TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL,"
    " started REAL NOT NULL, updated REAL NOT NULL);";

/* Columns added after the first release of the file format; a database written by
 * an older perfc gains them on open (ALTER TABLE ... ADD COLUMN keeps its rows, which
 * read as NULL there: no repetition count, no stored baseline). */
static const struct {
    const char *name, *type;
} added[] = {
    {"reps", "INTEGER"},       {"base_call", "TEXT"},   {"base_median_ms", "REAL"}, {"base_min_ms", "REAL"},
    {"base_max_ms", "REAL"},   {"base_gflops", "REAL"}, {"base_reps", "INTEGER"},
    {"features", "TEXT"},
};

static const char cols[] = "id, key, kernel, fingerprint, shape, dtypes, target, device, version, threads, schedule, "
                           "params, median_ms, min_ms, max_ms, gflops, compile_ms, valid, rel_error, status, final, "
                           "created, reps, base_call, base_median_ms, base_min_ms, base_max_ms, base_gflops, "
                           "base_reps, features";

static bool has_column(sqlite3 *db, const char *name)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('measurement') WHERE name = ?1", -1, &s, NULL) !=
        SQLITE_OK)
        return false;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    bool yes = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return yes;
}

/* Brings an older file up to the current columns.  Two perfc processes may race
 * here: the loser's ALTER fails with "duplicate column", which is the state it
 * wanted, so that error is ignored once the column is seen to exist. */
static bool upgrade(sqlite3 *db, char **err)
{
    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) {
        if (has_column(db, added[i].name))
            continue;
        char sql[128];
        snprintf(sql, sizeof sql, "ALTER TABLE measurement ADD COLUMN %s %s", added[i].name, added[i].type);
        if (sqlite3_exec(db, sql, NULL, NULL, err) != SQLITE_OK) {
            if (!has_column(db, added[i].name))
                return false;
            sqlite3_free(*err);
            *err = NULL;
        }
    }
    return true;
}

static bool fail(TuneDb *t, sqlite3 *db, Diags *d, const char *what)
{
    diag_plain(d, DIAG_ERROR, "tuning database %s: %s: %s", t ? t->path : "", what,
               db ? sqlite3_errmsg(db) : "out of memory");
    return false;
}

TuneDb *tunedb_open(const char *path, Diags *d)
{
    if (!make_parent(path)) {
        diag_plain(d, DIAG_ERROR, "tuning database %s: cannot create its folder: %s", path, strerror(errno));
        return NULL;
    }
    TuneDb *t = xcalloc(1, sizeof *t);
    t->path = xstrdup(path);
    if (sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL) !=
        SQLITE_OK) {
        fail(t, t->db, d, "cannot open");
        tunedb_close(t);
        return NULL;
    }
    sqlite3_busy_timeout(t->db, 30000);
    /* journal_mode needs the write lock once; it persists in the file, so later
     * opens find WAL already set.  Two processes creating the file at once can get
     * SQLITE_BUSY here without the busy handler being asked (the mode switch and
     * the schema race on a file that is not in WAL mode yet; seen in
     * tune_concurrent under load), so the set-up is retried for up to the same 30 s. */
    char *err = NULL;
    for (int attempt = 0;; attempt++) {
        int rc = sqlite3_exec(t->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &err);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(t->db, schema, NULL, NULL, &err);
        if (rc == SQLITE_OK && upgrade(t->db, &err))
            break;
        int code = sqlite3_errcode(t->db) & 0xff;
        if (attempt < 3000 && (code == SQLITE_BUSY || code == SQLITE_LOCKED)) {
            sqlite3_free(err);
            err = NULL;
            sqlite3_sleep(10);
            continue;
        }
        diag_plain(d, DIAG_ERROR, "tuning database %s: %s", path, err ? err : "cannot set up");
        sqlite3_free(err);
        tunedb_close(t);
        return NULL;
    }
    StrBuf q = {0};
    sb_printf(&q, "SELECT %s FROM measurement WHERE key = ?1 AND valid = 1 AND median_ms > 0 "
                  "ORDER BY final DESC, median_ms, id", cols);
    int rc = sqlite3_prepare_v2(t->db, q.s, -1, &t->best, NULL);
    sb_free(&q);
    if (rc != SQLITE_OK) {
        fail(t, t->db, d, "cannot prepare a query");
        tunedb_close(t);
        return NULL;
    }
    return t;
}

void tunedb_close(TuneDb *t)
{
    if (!t)
        return;
    sqlite3_finalize(t->best);
    sqlite3_close(t->db);
    free(t->path);
    free(t->warned);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            free(t->str[i][j]);
    free(t);
}

bool tunedb_add(TuneDb *t, const TuneRecord *r, Diags *d)
{
    static const char sql[] =
        "INSERT INTO measurement(key, kernel, fingerprint, shape, dtypes, target, device, version, threads,"
        " schedule, params, median_ms, min_ms, max_ms, gflops, compile_ms, valid, rel_error, status, final, created,"
        " reps, base_call, base_median_ms, base_min_ms, base_max_ms, base_gflops, base_reps, features)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,"
        "?22,?23,?24,?25,?26,?27,?28,?29)";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(t->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail(t, t->db, d, "cannot prepare an insert");
    const TuneKey *k = &r->key;
    sqlite3_bind_text(s, 1, k->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, k->kernel, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, k->fingerprint, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, k->shape, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, k->dtypes, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 6, k->target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 7, k->device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 8, k->version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 9, k->threads);
    sqlite3_bind_text(s, 10, r->schedule ? r->schedule : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 11, r->params ? r->params : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 12, r->median_ms);
    sqlite3_bind_double(s, 13, r->min_ms);
    sqlite3_bind_double(s, 14, r->max_ms);
    sqlite3_bind_double(s, 15, r->gflops);
    sqlite3_bind_double(s, 16, r->compile_ms);
    sqlite3_bind_int(s, 17, r->valid);
    sqlite3_bind_double(s, 18, r->rel_error);
    sqlite3_bind_int(s, 19, r->status);
    sqlite3_bind_int(s, 20, r->final);
    sqlite3_bind_double(s, 21, r->created > 0 ? r->created : (double)time(NULL));
    sqlite3_bind_int(s, 22, r->reps);
    if (r->base_call && *r->base_call) {
        sqlite3_bind_text(s, 23, r->base_call, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(s, 24, r->base_median_ms);
        sqlite3_bind_double(s, 25, r->base_min_ms);
        sqlite3_bind_double(s, 26, r->base_max_ms);
        sqlite3_bind_double(s, 27, r->base_gflops);
        sqlite3_bind_int(s, 28, r->base_reps);
    } /* else NULL: no baseline was timed beside this row */
    if (r->features && *r->features)
        sqlite3_bind_text(s, 29, r->features, -1, SQLITE_TRANSIENT);
    /* Autocommit: this INSERT is its own transaction, durable when step returns. */
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return fail(t, t->db, d, "cannot record a measurement");
    return true;
}

static const char *col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    return v ? (const char *)v : "";
}

static void copy_field(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src);
}

/* Reads the current row; strings point into the statement (valid until it steps).
 * Returns NULL, or what is wrong with the row: a value of the wrong type, out of
 * its range, a string too long for its field, or key fields that do not hash to
 * the row's key (a row edited or damaged outside perfc).  Such a row is never used:
 * a stored time read as a measurement would be reported as one. */
static const char *read_row(sqlite3_stmt *s, TuneRecord *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(s, 0);
    static const struct {
        int col;
        size_t off, cap;
    } texts[] = {
        {1, offsetof(TuneKey, id), sizeof r->key.id},
        {2, offsetof(TuneKey, kernel), sizeof r->key.kernel},
        {3, offsetof(TuneKey, fingerprint), sizeof r->key.fingerprint},
        {4, offsetof(TuneKey, shape), sizeof r->key.shape},
        {5, offsetof(TuneKey, dtypes), sizeof r->key.dtypes},
        {6, offsetof(TuneKey, target), sizeof r->key.target},
        {7, offsetof(TuneKey, device), sizeof r->key.device},
        {8, offsetof(TuneKey, version), sizeof r->key.version},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int c = texts[i].col;
        if (sqlite3_column_type(s, c) != SQLITE_TEXT || (size_t)sqlite3_column_bytes(s, c) >= texts[i].cap)
            return "a key field is not text of its size";
        copy_field((char *)&r->key + texts[i].off, texts[i].cap, col_text(s, c));
    }
    for (int c = 9; c <= 22; c++) {
        int ty = sqlite3_column_type(s, c);
        bool integer = c == 9 || c == 17 || c == 19 || c == 20 || c == 22;
        if (c == 10 || c == 11) {
            if (ty != SQLITE_TEXT)
                return "the schedule or its parameters are not text";
        } else if (c == 22 && ty == SQLITE_NULL) {
            /* reps: NULL in rows written before the column existed */
        } else if (integer ? ty != SQLITE_INTEGER : ty != SQLITE_FLOAT && ty != SQLITE_INTEGER) {
            return "a number column holds something else";
        }
    }
    r->key.threads = sqlite3_column_int(s, 9);
    r->schedule = col_text(s, 10);
    r->params = col_text(s, 11);
    r->median_ms = sqlite3_column_double(s, 12);
    r->min_ms = sqlite3_column_double(s, 13);
    r->max_ms = sqlite3_column_double(s, 14);
    r->gflops = sqlite3_column_double(s, 15);
    r->compile_ms = sqlite3_column_double(s, 16);
    int valid = sqlite3_column_int(s, 17), fin = sqlite3_column_int(s, 20);
    r->valid = valid != 0;
    r->rel_error = sqlite3_column_double(s, 18);
    r->status = sqlite3_column_int(s, 19);
    r->final = fin != 0;
    r->created = sqlite3_column_double(s, 21);
    sqlite3_int64 reps = sqlite3_column_int64(s, 22);
    r->reps = (int)reps;
    r->base_call = col_text(s, 23);
    r->base_median_ms = sqlite3_column_double(s, 24);
    r->base_min_ms = sqlite3_column_double(s, 25);
    r->base_max_ms = sqlite3_column_double(s, 26);
    r->base_gflops = sqlite3_column_double(s, 27);
    sqlite3_int64 breps = sqlite3_column_int64(s, 28);
    r->base_reps = (int)breps;
    r->features = col_text(s, 29);

    TuneKey k = r->key;
    tunekey_finish(&k);
    if (strcmp(k.id, r->key.id))
        return "its key fields do not hash to its key";
    if ((valid != 0 && valid != 1) || (fin != 0 && fin != 1) || r->status < 0 || r->status > 3)
        return "a flag or status out of range";
    if (r->key.threads < 1 || r->key.threads > 1 << 20 || reps < 0 || reps > INT32_MAX)
        return "a thread or repetition count out of range";
    double now = (double)time(NULL);
    if (!isfinite(r->created) || r->created < 946684800.0 || r->created > now + 86400)
        return "its creation time is not a time";
    if (!isfinite(r->compile_ms) || r->compile_ms < 0 || !isfinite(r->rel_error) || r->rel_error < 0)
        return "a compile time or error out of range";
    if (r->valid && !(isfinite(r->median_ms) && r->median_ms > 0 && isfinite(r->min_ms) && r->min_ms > 0 &&
                      isfinite(r->max_ms) && r->min_ms <= r->median_ms && r->median_ms <= r->max_ms &&
                      isfinite(r->gflops) && r->gflops >= 0))
        return "its times are not ordered positive numbers";
    if (sqlite3_column_type(s, 23) != SQLITE_NULL) {
        if (sqlite3_column_type(s, 23) != SQLITE_TEXT || sqlite3_column_bytes(s, 23) >= 32)
            return "the baseline call is not a short text";
        for (int c = 24; c <= 28; c++)
            if (c == 28 ? sqlite3_column_type(s, c) != SQLITE_INTEGER
                        : sqlite3_column_type(s, c) != SQLITE_FLOAT && sqlite3_column_type(s, c) != SQLITE_INTEGER)
                return "a baseline number column holds something else";
        if (!(isfinite(r->base_median_ms) && r->base_median_ms > 0 && isfinite(r->base_min_ms) &&
              r->base_min_ms > 0 && isfinite(r->base_max_ms) && r->base_min_ms <= r->base_median_ms &&
              r->base_median_ms <= r->base_max_ms && isfinite(r->base_gflops) && r->base_gflops >= 0 &&
              breps >= 0 && breps <= INT32_MAX))
            return "its baseline times are not ordered positive numbers";
    }
    return NULL;
}

/* Warns (once per row and handle) that a row is ignored. */
static void ignore_row(TuneDb *t, int64_t id, const char *why)
{
    for (int i = 0; i < t->nwarned; i++)
        if (t->warned[i] == id)
            return;
    if (t->nwarned == t->capwarned) {
        t->capwarned = t->capwarned ? 2 * t->capwarned : 16;
        t->warned = xrealloc(t->warned, sizeof *t->warned * (size_t)t->capwarned);
    }
    t->warned[t->nwarned++] = id;
    t->ignored++;
    fprintf(stderr, "perfc: warning: tuning database %s: row %lld ignored: %s\n", t->path, (long long)id, why);
}

int tunedb_ignored(const TuneDb *t) { return t ? t->ignored : 0; }

/* Steps s to the next row that passes read_row; false at the end. */
static bool next_good_row(TuneDb *t, sqlite3_stmt *s, TuneRecord *r)
{
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *why = read_row(s, r);
        if (!why)
            return true;
        ignore_row(t, r->id, why);
    }
    return false;
}

/* Copies the row's strings into slots (freeing what they held) and points the row
 * at the copies, so they outlive the statement. */
static void keep_strings(char **slots, TuneRecord *r)
{
    const char **f[3] = {&r->schedule, &r->params, &r->base_call};
    for (int i = 0; i < 3; i++) {
        free(slots[i]);
        slots[i] = xstrdup(*f[i]);
        *f[i] = slots[i];
    }
    r->features = NULL; /* not kept: tunedb_foreach hands it out, the cost model reads it there */
}

bool tunedb_best(TuneDb *t, const TuneKey *key, TuneRecord *out)
{
    sqlite3_reset(t->best);
    sqlite3_bind_text(t->best, 1, key->id, -1, SQLITE_TRANSIENT);
    if (!next_good_row(t, t->best, out)) {
        sqlite3_reset(t->best);
        return false;
    }
    keep_strings(t->str[0], out);
    sqlite3_reset(t->best);
    return true;
}

bool tunedb_final_of(TuneDb *t, const TuneKey *key, const char *schedule, TuneRecord *out)
{
    StrBuf q = {0};
    sb_printf(&q, "SELECT %s FROM measurement WHERE key = ?1 AND schedule = ?2 AND final = 1 AND valid = 1"
                  " AND median_ms > 0 ORDER BY id DESC", cols);
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(t->db, q.s, -1, &s, NULL);
    sb_free(&q);
    if (rc != SQLITE_OK)
        return false;
    sqlite3_bind_text(s, 1, key->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, schedule, -1, SQLITE_TRANSIENT);
    bool found = next_good_row(t, s, out);
    if (found)
        keep_strings(t->str[1], out);
    sqlite3_finalize(s);
    return found;
}

int tunedb_foreach(TuneDb *t, bool all, const char *kernel, void (*fn)(void *ctx, const TuneRecord *r), void *ctx,
                   Diags *d)
{
    StrBuf q = {0};
    if (all)
        sb_printf(&q, "SELECT %s FROM measurement WHERE (?1 IS NULL OR kernel = ?1) ORDER BY id", cols);
    else
        /* the best valid row of each key: smallest median, a final row first on ties */
        sb_printf(&q,
                  "SELECT %s FROM measurement m WHERE (?1 IS NULL OR kernel = ?1) AND valid = 1 AND median_ms > 0"
                  " AND id = (SELECT id FROM measurement b WHERE b.key = m.key AND b.valid = 1 AND b.median_ms > 0"
                  " ORDER BY b.median_ms, b.final DESC, b.id LIMIT 1) ORDER BY created, id",
                  cols);
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(t->db, q.s, -1, &s, NULL);
    sb_free(&q);
    if (rc != SQLITE_OK) {
        fail(t, t->db, d, "cannot prepare a query");
        return -1;
    }
    if (kernel)
        sqlite3_bind_text(s, 1, kernel, -1, SQLITE_TRANSIENT);
    int n = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        TuneRecord r;
        const char *why = read_row(s, &r);
        if (why) {
            ignore_row(t, r.id, why);
            continue;
        }
        fn(ctx, &r);
        n++;
    }
    if (rc != SQLITE_DONE) {
        fail(t, t->db, d, "cannot read");
        n = -1;
    }
    sqlite3_finalize(s);
    return n;
}

int tunedb_count(TuneDb *t, const TuneKey *key)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(t->db, "SELECT count(*) FROM measurement WHERE key = ?1", -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 1, key->id, -1, SQLITE_TRANSIENT);
    int n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    return n;
}

char *tunedb_integrity(TuneDb *t)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(t->db, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK)
        return xstrdup(sqlite3_errmsg(t->db));
    char *r = xstrdup(sqlite3_step(s) == SQLITE_ROW ? col_text(s, 0) : sqlite3_errmsg(t->db));
    sqlite3_finalize(s);
    return r;
}

/* ---- the state of a search ---- */

static void host_name(char *out, size_t n)
{
    if (gethostname(out, n) != 0)
        snprintf(out, n, "?");
    out[n - 1] = 0;
}

bool tunedb_search_begin(TuneDb *t, const TuneKey *key, Diags *d)
{
    static const char sql[] =
        "INSERT INTO search(key, status, pid, host, started, updated) VALUES(?1, 'running', ?2, ?3, ?4, ?4)"
        " ON CONFLICT(key) DO UPDATE SET status = 'running', pid = excluded.pid, host = excluded.host,"
        " updated = excluded.updated,"
        " started = CASE WHEN search.status = 'final' THEN excluded.started ELSE search.started END";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(t->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail(t, t->db, d, "cannot prepare the search state");
    char host[64];
    host_name(host, sizeof host);
    sqlite3_bind_text(s, 1, key->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)getpid());
    sqlite3_bind_text(s, 3, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 4, (double)time(NULL));
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || fail(t, t->db, d, "cannot record that a search started");
}

bool tunedb_search_end(TuneDb *t, const TuneKey *key, TuneStatus status, Diags *d)
{
    if (status != TUNE_FINAL && status != TUNE_INTERRUPTED) {
        diag_plain(d, DIAG_ERROR, "tuning database %s: a search ends final or interrupted, not %s", t->path,
                   tune_status_name(status));
        return false;
    }
    static const char sql[] =
        "INSERT INTO search(key, status, pid, host, started, updated) VALUES(?1, ?2, ?3, ?4, ?5, ?5)"
        " ON CONFLICT(key) DO UPDATE SET status = excluded.status, pid = excluded.pid, host = excluded.host,"
        " updated = excluded.updated";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(t->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail(t, t->db, d, "cannot prepare the search state");
    char host[64];
    host_name(host, sizeof host);
    sqlite3_bind_text(s, 1, key->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, tune_status_name(status), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)getpid());
    sqlite3_bind_text(s, 4, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 5, (double)time(NULL));
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || fail(t, t->db, d, "cannot record the end of a search");
}

/* Whether measurement rows under key exist, and whether one of them is final. */
static void rows_under(TuneDb *t, const TuneKey *key, bool *any, bool *final)
{
    *any = *final = false;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(t->db, "SELECT count(*), coalesce(max(final = 1), 0) FROM measurement WHERE key = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(s, 1, key->id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW) {
        *any = sqlite3_column_int64(s, 0) > 0;
        *final = sqlite3_column_int(s, 1) == 1;
    }
    sqlite3_finalize(s);
}

/* Whether process pid of this host has ended: no such process, or a zombie that its
 * parent has not reaped yet (it runs no more code either). */
static bool process_gone(int64_t pid)
{
    if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return true;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false; /* no /proc: alive as far as kill() can tell */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

TuneStatus tunedb_search_status(TuneDb *t, const TuneKey *key, TuneSearch *out)
{
    TuneSearch x;
    memset(&x, 0, sizeof x);
    sqlite3_stmt *s;
    bool have = false;
    if (sqlite3_prepare_v2(t->db, "SELECT status, pid, host, started, updated, rowid FROM search WHERE key = ?1", -1,
                           &s, NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, key->id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(s) == SQLITE_ROW) {
            have = true;
            const char *st = col_text(s, 0);
            x.pid = sqlite3_column_int64(s, 1);
            copy_field(x.host, sizeof x.host, col_text(s, 2));
            x.started = sqlite3_column_double(s, 3);
            x.updated = sqlite3_column_double(s, 4);
            x.status = !strcmp(st, "running") ? TUNE_RUNNING
                       : !strcmp(st, "interrupted") ? TUNE_INTERRUPTED
                       : !strcmp(st, "final") ? TUNE_FINAL
                                              : TUNE_NONE;
            /* A state that is not one of the three, or not a plausible row, is
             * damage: never read it as final. */
            if (x.status == TUNE_NONE || sqlite3_column_type(s, 1) != SQLITE_INTEGER || !isfinite(x.started) ||
                !isfinite(x.updated) || x.updated < x.started) {
                char why[96];
                snprintf(why, sizeof why, "search state `%.20s` of key %s is damaged; read as interrupted", st,
                         key->id);
                ignore_row(t, -sqlite3_column_int64(s, 5), why);
                x.status = TUNE_INTERRUPTED;
            }
        }
        sqlite3_finalize(s);
    }
    if (!have) {
        bool any, fin;
        rows_under(t, key, &any, &fin);
        x.status = fin ? TUNE_FINAL : any ? TUNE_INTERRUPTED : TUNE_NONE;
    } else if (x.status == TUNE_RUNNING && x.pid != (int64_t)getpid()) {
        /* running elsewhere, or killed: a process of this host that is gone, or a
         * row from another host that has not moved for a day, will never end it */
        char host[64];
        host_name(host, sizeof host);
        bool gone = !strcmp(host, x.host) ? process_gone(x.pid) : (double)time(NULL) - x.updated > TUNEDB_STALE_S;
        if (gone)
            x.status = TUNE_INTERRUPTED;
    }
    if (out)
        *out = x;
    return x.status;
}

#else /* no SQLite */

struct TuneDb {
    int unused;
};

static void no_sqlite(Diags *d)
{
    diag_plain(d, DIAG_ERROR, "this perfc was built without SQLite: no tuning database "
                              "(install libsqlite3-dev and rebuild)");
}

TuneDb *tunedb_open(const char *path, Diags *d)
{
    (void)path;
    no_sqlite(d);
    return NULL;
}
void tunedb_close(TuneDb *t) { (void)t; }
bool tunedb_add(TuneDb *t, const TuneRecord *r, Diags *d)
{
    (void)t, (void)r;
    no_sqlite(d);
    return false;
}
/* Copies the row's strings into slots (freeing what they held) and points the row
 * at the copies, so they outlive the statement. */
static void keep_strings(char **slots, TuneRecord *r)
{
    const char **f[3] = {&r->schedule, &r->params, &r->base_call};
    for (int i = 0; i < 3; i++) {
        free(slots[i]);
        slots[i] = xstrdup(*f[i]);
        *f[i] = slots[i];
    }
}

bool tunedb_best(TuneDb *t, const TuneKey *key, TuneRecord *out)
{
    (void)t, (void)key, (void)out;
    return false;
}
bool tunedb_final_of(TuneDb *t, const TuneKey *key, const char *schedule, TuneRecord *out)
{
    (void)t;
    (void)key;
    (void)schedule;
    (void)out;
    return false;
}

int tunedb_foreach(TuneDb *t, bool all, const char *kernel, void (*fn)(void *ctx, const TuneRecord *r), void *ctx,
                   Diags *d)
{
    (void)t, (void)all, (void)kernel, (void)fn, (void)ctx;
    no_sqlite(d);
    return -1;
}
int tunedb_count(TuneDb *t, const TuneKey *key)
{
    (void)t, (void)key;
    return -1;
}
char *tunedb_integrity(TuneDb *t)
{
    (void)t;
    return xstrdup("no SQLite");
}
int tunedb_ignored(const TuneDb *t)
{
    (void)t;
    return 0;
}
bool tunedb_search_begin(TuneDb *t, const TuneKey *key, Diags *d)
{
    (void)t, (void)key;
    no_sqlite(d);
    return false;
}
bool tunedb_search_end(TuneDb *t, const TuneKey *key, TuneStatus status, Diags *d)
{
    (void)t, (void)key, (void)status;
    no_sqlite(d);
    return false;
}
/* Whether process pid of this host has ended: no such process, or a zombie that its
 * parent has not reaped yet (it runs no more code either). */
static bool process_gone(int64_t pid)
{
    if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return true;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false; /* no /proc: alive as far as kill() can tell */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

TuneStatus tunedb_search_status(TuneDb *t, const TuneKey *key, TuneSearch *out)
{
    (void)t, (void)key;
    if (out)
        memset(out, 0, sizeof *out);
    return TUNE_NONE;
}
#endif
