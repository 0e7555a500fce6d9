/* `perfc dojo`: kernel optimisation as a game played move by move over a JSON-lines
 * protocol (docs/dojo.md).  Three layers, each in its own file:
 *
 *   dojo_json.c     a small strict JSON reader (bounded depth and size) and the writer
 *                   helpers the replies are built with
 *   dojo_game.c  one game: reset, the state and its features, legal moves, step,
 *                   undo, measure (through the harness, cached in the tuning database),
 *                   the moves as a schedule
 *   dojo_cache.c    the measurement cache: a table of its own in the tuning database
 *   dojo_hints.c    the autotuner's schedule templates as moves (`hints`)
 *   dojo_proto.c    the protocol on a stream (stdin/stdout or a Unix socket), the
 *                   episode recorder and --replay
 *   dojo_agents.c   random, greedy and beam-search players, written against the same
 *                   session calls the protocol makes, so the protocol is shown enough
 */
#ifndef PERFC_CLI_DOJO_H
#define PERFC_CLI_DOJO_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "runtime/runtime.h"

/* ---- dojo_json.c ---- */

typedef enum { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } JvKind;

typedef struct Jv {
    JvKind kind;
    bool b;
    double num;
    bool is_int;          /* a number written without fraction or exponent that fits i64 */
    int64_t i;
    char *str;            /* STR: NUL-terminated, may not hold a NUL (refused) */
    int n;                /* ARR/OBJ items */
    char **keys;          /* OBJ */
    struct Jv **items;
} Jv;

enum {
    DOJO_MAX_LINE = 1 << 20, /* a request line longer than this is refused */
    DOJO_MAX_DEPTH = 32,     /* nesting of arrays and objects */
};

/* Parses one complete JSON text of len bytes.  NULL with a message (and the byte
 * offset) in err on any deviation from RFC 8259: trailing data, bad escapes, lone
 * surrogates, control characters in strings, leading zeros, NUL bytes, duplicate
 * keys, nesting deeper than DOJO_MAX_DEPTH. */
Jv *jv_parse(const char *text, size_t len, char *err, size_t errlen);
void jv_free(Jv *v);
const Jv *jv_get(const Jv *obj, const char *key);
/* Typed look-ups: false when absent; *bad set when present with the wrong type. */
const char *jv_str(const Jv *obj, const char *key, bool *bad);

/* Writer: appends to a StrBuf; `first` tracks the comma of an object or array. */
void jw_key(StrBuf *b, const char *key, bool *first);
void jw_num(StrBuf *b, double v); /* null when not finite */

/* ---- dojo_game.c ---- */

typedef struct DojoResetArgs {
    const char *file;        /* a .pdl path, or */
    const char *source;      /* PDL text */
    const char *kernel;      /* NULL: the first */
    const char *target;      /* NULL: host */
    const char *names[MAX_DEFINES];
    int64_t values[MAX_DEFINES];
    int nsizes;
    uint64_t seed;           /* measurement inputs and agents' randomness */
    bool seed_given;
    bool schedule;           /* start from the file's schedule for the target (default: unscheduled) */
    int threads;             /* 0: every core */
    bool auto_measure;       /* step measures the new state at once */
    const char *compare;     /* "openblas"/"cublas"/"none"; NULL: the target's library for GEMM-family kernels */
} DojoResetArgs;

typedef struct DojoMeasure {
    bool valid;
    bool cached;             /* times from the cache; validity proven again now */
    char reason[512];        /* why not valid */
    double median_ms, min_ms, max_ms, gflops, rel_error;
    int reps;
    double base_ms;          /* the unscheduled kernel */
    double lib_ms;           /* the library, 0 when there is none */
    char lib_call[32];
    double speedup;          /* base_ms / median_ms: the reward */
    double vs_library;       /* lib_ms / median_ms, 0 when there is none */
    char fingerprint[24];
} DojoMeasure;

typedef struct DojoSession DojoSession;

/* A session holds at most one game; db_path NULL: the default tuning database;
 * no_db: measure without the cache. */
DojoSession *dojo_new(const char *db_path, bool no_db);
void dojo_free(DojoSession *s);
/* Starts a game.  False with the error text in err (the old game is then gone). */
bool dojo_reset(DojoSession *s, const DojoResetArgs *a, StrBuf *err);
bool dojo_active(const DojoSession *s);
/* The state object (printed IR, features, fingerprint, moves so far). */
void dojo_state_json(DojoSession *s, StrBuf *out, bool with_ir);
const char *dojo_fingerprint(DojoSession *s);
/* The legal moves of the current state: their number; text of move i. */
int dojo_nactions(DojoSession *s);
const char *dojo_action_text(DojoSession *s, int i);
void dojo_actions_json(DojoSession *s, StrBuf *out);
/* Plays move id (>= 0) or the text of a move.  Returns false when the request is
 * not a move at all (parse error, several statements, unknown id: err); *legal false
 * when the transformation refused it (reason in err), the state unchanged. */
bool dojo_step(DojoSession *s, int id, const char *text, bool *legal, StrBuf *err);
int dojo_depth(const DojoSession *s);
/* A wall-time deadline (now_seconds()) for the built-in agents: past it a GPU state's
 * listing of moves stops checking them through the CUDA emitter and offers those it
 * has checked; 0 (the default) for none. */
void dojo_set_deadline(DojoSession *s, double t);
const char *dojo_move(const DojoSession *s, int i);
/* Takes back the last move; false when there is none. */
bool dojo_undo(DojoSession *s);
/* Validates and times the current kernel (and, once per game, the unscheduled one
 * and the library).  still_there (may be NULL) is asked before anything is written
 * to the cache: a client gone mid-measurement leaves nothing behind.  Exit status
 * of the harness (0 valid, 2 invalid, 1/3 errors in err). */
int dojo_measure(DojoSession *s, DojoMeasure *m, bool (*still_there)(void *), void *ctx, StrBuf *err);
void dojo_measure_json(const DojoMeasure *m, StrBuf *out);
/* The cost model's view of the current state (docs/dojo.md, `predict`): the tuner's
 * features of the kernel as it would be measured, its work (executions of the main
 * statement), and, once this game has 20 valid measurements (the tuner's minimum), the time
 * a LASSO fitted on them predicts.  No measurement; false (err) when the moves do not
 * compile through the pipeline. */
enum { DOJO_MAX_FEAT = 32 };
typedef struct DojoPredict {
    int nfeat;
    double f[DOJO_MAX_FEAT];
    double work;
    int rows;                /* valid measurements the model learns from */
    bool fitted;
    double predicted_ms, cv_r2;
} DojoPredict;
bool dojo_predict(DojoSession *s, DojoPredict *p, StrBuf *err);
const char *dojo_feature_name(int i);
/* Starting points (docs/dojo.md, `hints`): the autotuner's schedule templates for
 * the kernel and target, each as the moves that play it from the start of the
 * game, at chosen values of its parameters (by default the first candidates). */
enum { DOJO_HINT_PARAMS = 16, DOJO_HINT_VALUES = 16 };
typedef struct DojoHintParam {
    char name[32];
    int nvalues;
    char values[DOJO_HINT_VALUES][48]; /* as schedule text: "8", "j1o" */
    int chosen;                        /* index of the value the moves use */
} DojoHintParam;
typedef struct DojoHint {
    int tindex;              /* the template's index in the tuner's space */
    char origin[160];        /* the template, as the tuner names it */
    DojoHintParam params[DOJO_HINT_PARAMS];
    int nparams;
    char **moves;            /* canonical move texts, in order */
    int n;
} DojoHint;
/* The hints at their defaults: only those whose every move plays, in order, from the
 * start (checked here as `step` plays text, the session left as it was); computed
 * once per game, owned by the session until the next reset.  Returns their number;
 * *dropped (may be NULL): templates that did not play. */
int dojo_hints(DojoSession *s, const DojoHint **out, int *dropped);
/* Hint i (0 <= i < dojo_hints' number) with parameter p at its value choice[p]
 * (one per parameter, in order) into *out (free with dojo_hints_free_moves).  False
 * with the reason in err when the template refuses the choices or a move does not
 * play from the start. */
bool dojo_hint_at(DojoSession *s, int i, const int *choice, DojoHint *out, StrBuf *err);
/* dojo_hints.c: the templates' moves at their defaults, unchecked (c: the game's
 * compilation), *out malloc'd; and one template's moves at other choices. */
int dojo_hint_candidates(Compilation *c, DojoHint **out);
bool dojo_hint_instance(Compilation *c, DojoHint *h, const int *choice, StrBuf *err);
void dojo_hints_free_moves(DojoHint *h);
/* The moves as a schedule block (pasteable into the .pdl). */
void dojo_schedule_text(DojoSession *s, StrBuf *out);
bool dojo_auto_measure(const DojoSession *s);
uint64_t dojo_seed(const DojoSession *s);
int dojo_measurements(const DojoSession *s); /* harness runs this game */
/* Records every reset, step, undo and measurement of s to f as JSON lines (the
 * episode format of docs/dojo.md); NULL stops. */
void dojo_record_to(DojoSession *s, FILE *f);
/* Writes the `end` line of the current episode (final fingerprint and schedule). */
void dojo_record_end(DojoSession *s);

/* ---- dojo_cache.c: (fingerprint, target, sizes, device, threads, version) -> times ---- */

typedef struct DojoCache DojoCache;
DojoCache *dojo_cache_open(const char *path, StrBuf *err);
void dojo_cache_close(DojoCache *c);
bool dojo_cache_get(DojoCache *c, const char *key, DojoMeasure *m);
bool dojo_cache_put(DojoCache *c, const char *key, const char *kernel, const char *fingerprint, const char *shape,
                    const char *target, const char *device, int threads, const DojoMeasure *m);

/* ---- dojo_agents.c ---- */

typedef struct DojoAgentOpts {
    const char *agent;       /* random, greedy, beam */
    int budget;              /* measured steps */
    double time_s;           /* wall-time budget in seconds, 0: none (checked between measurements) */
    int steps;               /* random: moves */
    int width, depth;        /* beam */
    bool no_hints;           /* beam: start from the unscheduled kernel only, not also from `hints` */
    bool quiet;
} DojoAgentOpts;
/* Plays a game already reset in s.  Prints progress on stderr and the result on stdout. */
int dojo_run_agent(DojoSession *s, const DojoAgentOpts *o);

/* ---- dojo_proto.c ---- */
int cli_dojo_main(int argc, char **argv);

#endif
