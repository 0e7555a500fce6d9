/* The tuning database: every measurement the autotuner makes, kept in SQLite.
 *
 * One row per measured candidate, under a key that names exactly what was tuned:
 * the kernel's fingerprint (a hash of its checked AST as ast_print_kernel prints
 * it), the bound sizes, the dtypes, the target, the device's one-line name, the
 * thread count and the perfc version.  A second tuning run with the same key reuses
 * the best valid row at once.  The file is opened in WAL mode and every row is
 * committed in its own transaction, so a tuner killed with SIGKILL loses nothing it
 * finished and leaves a database that opens and passes integrity_check; several
 * tuners (processes) may write one file at once (busy timeout).
 *
 * Beside the measurements, one row per key says where the search under that key
 * stands (tunedb_search_*): a later run serves a stored answer only when the
 * search that produced it finished (`final`); one that was interrupted is resumed.
 * Every row read back is checked (ranges, types, the key's hash); a row that fails
 * is ignored with a warning on stderr, never used.
 *
 * Built without SQLite (PERFC_HAVE_SQLITE unset) every call fails with a
 * diagnostic that says so, and tuning still works without memory. */
#ifndef PERFC_RUNTIME_TUNEDB_H
#define PERFC_RUNTIME_TUNEDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lang/diag.h"

typedef struct TuneKey {
    char id[24];          /* hex hash of every field below: the lookup key */
    char kernel[64];
    char fingerprint[24]; /* hex hash of the checked kernel's canonical text */
    char shape[256];      /* "M=512 N=512 K=512" */
    char dtypes[256];     /* "A:f32 B:f32 C:f32" */
    char target[32];
    char device[384];
    char version[16];
    int threads;
} TuneKey;

/* FNV-1a, 64 bits, continuing from h (start with TUNEDB_HASH0). */
#define TUNEDB_HASH0 0xcbf29ce484222325ull
uint64_t tunedb_hash(const void *p, size_t n, uint64_t h);
/* Fills k->id from the other fields. */
void tunekey_finish(TuneKey *k);

typedef struct TuneRecord {
    int64_t id;
    TuneKey key;
    const char *schedule; /* the concrete schedule (schedule_print), pasteable */
    const char *params;   /* "TI=4 TJ=64" */
    double median_ms, min_ms, max_ms, gflops, compile_ms;
    bool valid;
    double rel_error;
    int status;           /* rt_evaluate's exit status */
    bool final;           /* the winner's re-validation on fresh inputs */
    double created;       /* Unix time */
    int reps;             /* timed repetitions behind median/min/max */
    /* The library baseline timed beside the winner in the same run (final rows with
     * --compare only; base_call empty otherwise): what a warm answer reports. */
    const char *base_call; /* "cblas_sgemm" */
    double base_median_ms, base_min_ms, base_max_ms, base_gflops;
    int base_reps;
    /* The cost model's features of the scheduled candidate ("w=WORK f0 f1 ...",
     * tune/model.h); empty in rows written before it existed.  Handed out by
     * tunedb_foreach only. */
    const char *features;
} TuneRecord;

typedef struct TuneDb TuneDb;

/* "$XDG_CACHE_HOME/perfc/tune.db", else "$HOME/.cache/perfc/tune.db"; malloc'd. */
char *tunedb_default_path(void);
/* Opens (creating the folders, the file and the schema as needed). NULL with a
 * diagnostic on failure. */
TuneDb *tunedb_open(const char *path, Diags *d);
void tunedb_close(TuneDb *db);
/* Appends one measurement in its own transaction. */
bool tunedb_add(TuneDb *db, const TuneRecord *r, Diags *d);
/* The best valid row under key: the fastest final row (a completed search's winner,
 * re-timed at its end; the CPU tuner may choose it over a faster single reading,
 * tune/search.c retime_contenders), else the row of smallest median.  Strings in
 * *out stay valid until the next call on db.  False when there is none. */
bool tunedb_best(TuneDb *db, const TuneKey *key, TuneRecord *out);
/* The latest final row under key for exactly this schedule (the winner as re-timed
 * at the end of its search, with the baseline when one was asked for).  Same
 * lifetime rule as tunedb_best; false when there is none. */
bool tunedb_final_of(TuneDb *db, const TuneKey *key, const char *schedule, TuneRecord *out);
/* Calls fn for every row (all=true) or for the best valid row of each key
 * (all=false), optionally only for one kernel name; newest keys last. */
int tunedb_foreach(TuneDb *db, bool all, const char *kernel, void (*fn)(void *ctx, const TuneRecord *r),
                   void *ctx, Diags *d);
/* Rows under key (valid or not). */
int tunedb_count(TuneDb *db, const TuneKey *key);
/* "ok" from PRAGMA integrity_check, else its first line; malloc'd. */
char *tunedb_integrity(TuneDb *db);
/* Rows ignored so far by this handle because they failed the checks on reading
 * (each is warned about once, on stderr). */
int tunedb_ignored(const TuneDb *db);

/* ---- the state of a search ----
 *
 * A search writes `running` when it starts (tunedb_search_begin) and `final` only
 * once it has completed and its winner has been re-validated (tunedb_search_end
 * with TUNE_FINAL).  A search that stops early on purpose (Ctrl-C, a time limit
 * that keeps the best so far) ends with TUNE_INTERRUPTED: its rows are the best so
 * far, not an answer.  A search killed outright (SIGKILL, a crash, a power cut)
 * never writes its end: its `running` row names a process of this host that no
 * longer exists (or a row older than TUNEDB_STALE_S from elsewhere), and reads as
 * interrupted.  The tuner serves a stored winner only under TUNE_FINAL; under
 * TUNE_INTERRUPTED it resumes the search, reusing the measured rows.  A database
 * written before search states existed has no such row: a key with a final
 * measurement row reads as final (only a finished search wrote one), any other key
 * with rows as interrupted. */
typedef enum TuneStatus { TUNE_NONE, TUNE_RUNNING, TUNE_INTERRUPTED, TUNE_FINAL } TuneStatus;
enum { TUNEDB_STALE_S = 24 * 3600 };

typedef struct TuneSearch {
    TuneStatus status;
    int64_t pid;        /* the process that wrote it */
    char host[64];      /* its host name */
    double started;     /* Unix time the search (or its first part) started */
    double updated;     /* Unix time of the last status change */
} TuneSearch;

/* "none", "running", "interrupted", "final". */
const char *tune_status_name(TuneStatus s);
/* Marks the search under key as running in this process (keeping the first start
 * time of a search that is resumed). */
bool tunedb_search_begin(TuneDb *db, const TuneKey *key, Diags *d);
/* Ends the search under key: TUNE_FINAL or TUNE_INTERRUPTED. */
bool tunedb_search_end(TuneDb *db, const TuneKey *key, TuneStatus status, Diags *d);
/* Where the search under key stands (see above); out may be NULL. */
TuneStatus tunedb_search_status(TuneDb *db, const TuneKey *key, TuneSearch *out);

#endif
