/* The dojo's measurement cache: a table of its own, `dojo_measurement`, in the
 * tuning database file (runtime/tunedb.c keeps the autotuner's `measurement` table
 * there, which this file never reads or writes, so nothing the tuner relies on
 * changes).  A row is one finished measurement of one scheduled kernel, keyed by a
 * hash of the printed IR's fingerprint, the target, the bound sizes, the device's
 * one-line name, the thread count and the perfc version; the same IR reached by two
 * different move orders shares its row.  Same durability rules as the tuner's table:
 * WAL, one INSERT per transaction, a busy timeout for several players on one file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dojo.h"
#include "runtime/tunedb.h"

#ifdef PERFC_HAVE_SQLITE
#include <sqlite3.h>

struct DojoCache {
    sqlite3 *db;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS dojo_measurement("
    " id INTEGER PRIMARY KEY, key TEXT NOT NULL, kernel TEXT NOT NULL, fingerprint TEXT NOT NULL,"
    " shape TEXT NOT NULL, target TEXT NOT NULL, device TEXT NOT NULL, threads INTEGER NOT NULL,"
    " version TEXT NOT NULL, valid INTEGER NOT NULL, reason TEXT, median_ms REAL, min_ms REAL, max_ms REAL,"
    " gflops REAL, rel_error REAL, reps INTEGER, lib_call TEXT, lib_ms REAL, created REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS dojo_measurement_key ON dojo_measurement(key);";

DojoCache *dojo_cache_open(const char *path, StrBuf *err)
{
    /* tunedb_open makes the folders, sets WAL and creates the tuner's schema, so a
     * file first made by the dojo is a proper tuning database too */
    Diags d;
    diag_init(&d);
    TuneDb *t = tunedb_open(path, &d);
    if (!t) {
        sb_puts(err, d.text.s ? d.text.s : "cannot open the tuning database\n");
        diag_free(&d);
        return NULL;
    }
    tunedb_close(t);
    diag_free(&d);
    DojoCache *c = xcalloc(1, sizeof *c);
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
        sb_printf(err, "tuning database %s: %s\n", path, sqlite3_errmsg(c->db));
        dojo_cache_close(c);
        return NULL;
    }
    sqlite3_busy_timeout(c->db, 30000);
    char *e = NULL;
    for (int attempt = 0;; attempt++) {
        if (sqlite3_exec(c->db, schema, NULL, NULL, &e) == SQLITE_OK)
            break;
        int code = sqlite3_errcode(c->db) & 0xff;
        if (attempt < 3000 && (code == SQLITE_BUSY || code == SQLITE_LOCKED)) {
            sqlite3_free(e);
            e = NULL;
            sqlite3_sleep(10);
            continue;
        }
        sb_printf(err, "tuning database %s: %s\n", path, e ? e : "cannot create the dojo table");
        sqlite3_free(e);
        dojo_cache_close(c);
        return NULL;
    }
    return c;
}

void dojo_cache_close(DojoCache *c)
{
    if (!c)
        return;
    sqlite3_close(c->db);
    free(c);
}

bool dojo_cache_get(DojoCache *c, const char *key, DojoMeasure *m)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT valid, reason, median_ms, min_ms, max_ms, gflops, rel_error, reps, lib_call, lib_ms FROM "
                           "dojo_measurement WHERE key = ?1 ORDER BY id DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    bool hit = sqlite3_step(s) == SQLITE_ROW;
    if (hit) {
        m->valid = sqlite3_column_int(s, 0) != 0;
        const unsigned char *r = sqlite3_column_text(s, 1);
        snprintf(m->reason, sizeof m->reason, "%s", r ? (const char *)r : "");
        m->median_ms = sqlite3_column_double(s, 2);
        m->min_ms = sqlite3_column_double(s, 3);
        m->max_ms = sqlite3_column_double(s, 4);
        m->gflops = sqlite3_column_double(s, 5);
        m->rel_error = sqlite3_column_double(s, 6);
        m->reps = sqlite3_column_int(s, 7);
        const unsigned char *lc = sqlite3_column_text(s, 8);
        snprintf(m->lib_call, sizeof m->lib_call, "%s", lc ? (const char *)lc : "");
        m->lib_ms = sqlite3_column_double(s, 9);
    }
    sqlite3_finalize(s);
    return hit;
}

bool dojo_cache_put(DojoCache *c, const char *key, const char *kernel, const char *fingerprint, const char *shape,
                    const char *target, const char *device, int threads, const DojoMeasure *m)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->db,
                           "INSERT INTO dojo_measurement(key, kernel, fingerprint, shape, target, device, threads, "
                           "version, valid, reason, median_ms, min_ms, max_ms, gflops, rel_error, reps, lib_call, lib_ms, "
                           "created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                           "?17, ?18, ?19)",
                           -1, &s, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, kernel, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, fingerprint, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, shape, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, target, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, device, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 7, threads);
    sqlite3_bind_text(s, 8, PERFC_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 9, m->valid);
    sqlite3_bind_text(s, 10, m->valid ? NULL : m->reason, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 11, m->median_ms);
    sqlite3_bind_double(s, 12, m->min_ms);
    sqlite3_bind_double(s, 13, m->max_ms);
    sqlite3_bind_double(s, 14, m->gflops);
    sqlite3_bind_double(s, 15, m->rel_error);
    sqlite3_bind_int(s, 16, m->reps);
    sqlite3_bind_text(s, 17, m->lib_call[0] ? m->lib_call : NULL, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 18, m->lib_ms);
    sqlite3_bind_double(s, 19, (double)time(NULL));
    bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_finalize(s);
    return ok;
}

#else /* no SQLite: the game is played without a cache */

DojoCache *dojo_cache_open(const char *path, StrBuf *err)
{
    sb_printf(err, "this perfc was built without SQLite: no measurement cache (%s)\n", path);
    return NULL;
}
void dojo_cache_close(DojoCache *c) { (void)c; }
bool dojo_cache_get(DojoCache *c, const char *key, DojoMeasure *m) { return false; }
bool dojo_cache_put(DojoCache *c, const char *key, const char *kernel, const char *fingerprint, const char *shape,
                    const char *target, const char *device, int threads, const DojoMeasure *m)
{
    return false;
}
#endif
