/* Progress of a run: what perfc is doing while it compiles, computes golden outputs,
 * times a kernel or tunes one, so a long run is never silent.
 *
 * The harness and the tuner only *report* (progress_emit with a ProgEvent at each
 * phase boundary, per timed repetition, per tuning candidate); whoever started the
 * run decides how to show it.  runtime/progress.c has the renderer the CLI uses: on a
 * terminal one status line on stderr rewritten in place (phase, done/total, best so
 * far and its ratio to the library, elapsed, estimated time left), cleared at the
 * end; elsewhere one plain line per phase or candidate.  Nothing goes to stdout, so
 * `--json` stays one object.  A NULL Progress is silence. */
#ifndef PERFC_RUNTIME_PROGRESS_H
#define PERFC_RUNTIME_PROGRESS_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

typedef enum ProgPhase {
    PROG_COMPILE,   /* the kernel's compilation */
    PROG_GOLDEN,    /* the golden reference of one input set */
    PROG_VALIDATE,  /* the kernel's run on one input set, checked */
    PROG_TIME,      /* timed repetitions of the kernel */
    PROG_BASELINE,  /* timed repetitions of the library */
    PROG_SPACE,     /* the tuner builds its search space (and fits its cost model) */
    PROG_SEARCH,    /* the tuner measured one more candidate */
    PROG_FINAL,     /* the tuner re-validates and times its winner */
    PROG_COUNT
} ProgPhase;

typedef enum ProgKind {
    PROG_BEGIN,     /* a phase starts */
    PROG_TICK,      /* within a phase (a repetition, a candidate): counts moved */
    PROG_END,       /* a phase ended */
    PROG_DONE,      /* the run is over and its report comes next: erase the status line */
    PROG_NOTE,      /* a message for the user in `what` (a candidate that failed): a line of its own */
} ProgKind;

typedef struct ProgEvent {
    ProgPhase phase;
    ProgKind kind;
    int done, total;    /* 0/0 when not counted (check c of n, candidate c of budget) */
    double best_ms;     /* tuning: the best median so far; <= 0 none yet */
    double ratio;       /* best so far against the library (library ms / best ms); 0 unknown */
    const char *lib;    /* the library of ratio ("openblas") */
    double eta_s;       /* estimated seconds left in this phase or search; < 0 unknown */
    const char *what;   /* a detail: "input set 2", the candidate's parameters; may be NULL */
    double value_ms;    /* the time this event reports (a repetition, a candidate), <= 0 none */
} ProgEvent;

typedef void (*ProgFn)(void *ctx, const ProgEvent *e);

typedef struct Progress {
    ProgFn fn;
    void *ctx;
} Progress;

/* Calls p->fn when p and p->fn are set. */
void progress_emit(const Progress *p, const ProgEvent *e);
const char *progress_phase_name(ProgPhase ph);

/* ---- the CLI's renderer ---- */
typedef struct ProgressTerm {
    FILE *f;            /* stderr */
    bool tty;           /* a status line rewritten in place, else plain lines */
    bool shown;         /* a status line is on the screen */
    double t0;          /* when the run started */
    double last;        /* when the line was last drawn (the line is redrawn at most 10 times a second) */
    ProgPhase phase;
} ProgressTerm;

/* Starts a renderer on f; tty < 0 asks isatty. */
void progress_term_init(ProgressTerm *t, FILE *f, int tty);
/* The ProgFn of the renderer (ctx: a ProgressTerm). */
void progress_term_fn(void *ctx, const ProgEvent *e);
/* Erases the status line (call before printing anything else on f, and at the end). */
void progress_term_clear(ProgressTerm *t);

/* ---- stopping a search ---- */
/* Installs a SIGINT handler that only sets *progress_stop_flag(): the tuner stops
 * between candidates, reports and stores its best so far.  A second Ctrl-C restores
 * the default action and re-raises, so it ends the process at once. */
void progress_catch_sigint(void);
volatile sig_atomic_t *progress_stop_flag(void);

#endif
