/* Progress events and the CLI's way of showing them (progress.h says what and why).
 *
 * On a terminal the renderer keeps one status line on stderr and rewrites it with
 * "\r" + erase-line, at most ten times a second (a kernel timed in microseconds
 * would otherwise spend its time drawing); the line is cut to the terminal's width
 * so it never wraps (a wrapped line cannot be rewritten in place).  Off a terminal
 * (a log, a pipe, CI) it writes one plain line per phase start and per tuning
 * candidate, and nothing per repetition. */
#include "progress.h"

#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../lang/util.h"

void progress_emit(const Progress *p, const ProgEvent *e)
{
    if (p && p->fn)
        p->fn(p->ctx, e);
}

const char *progress_phase_name(ProgPhase ph)
{
    static const char *names[PROG_COUNT] = {"compile", "golden", "validate", "time",
                                            "baseline", "space", "tune", "final"};
    return ph < PROG_COUNT ? names[ph] : "?";
}

void progress_term_init(ProgressTerm *t, FILE *f, int tty)
{
    memset(t, 0, sizeof *t);
    t->f = f;
    t->tty = tty < 0 ? isatty(fileno(f)) : tty != 0;
    t->t0 = now_seconds();
    t->last = -1;
}

static void clock_text(double s, char *out, size_t n)
{
    if (s < 0)
        s = 0;
    long v = (long)(s + 0.5);
    if (v >= 3600)
        snprintf(out, n, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
    else
        snprintf(out, n, "%ld:%02ld", v / 60, v % 60);
}

/* The text of an event, without line ending. */
static void event_text(const ProgressTerm *t, const ProgEvent *e, char *out, size_t n)
{
    StrBuf b = {0};
    sb_printf(&b, "perfc: %s", progress_phase_name(e->phase));
    if (e->total > 0)
        sb_printf(&b, " %d/%d", e->done, e->total);
    if (e->what && *e->what)
        sb_printf(&b, " %s", e->what);
    if (e->value_ms > 0)
        sb_printf(&b, ": %.4g ms", e->value_ms);
    if (e->best_ms > 0) {
        sb_printf(&b, "  best %.4g ms", e->best_ms);
        if (e->ratio > 0)
            sb_printf(&b, " (%.2fx %s)", e->ratio, e->lib ? e->lib : "library");
    }
    /* a terminal reads m:ss; a log gets seconds to a tenth, which a script can read */
    char el[24], eta[24];
    double now = now_seconds() - t->t0;
    if (t->tty)
        clock_text(now, el, sizeof el);
    else
        snprintf(el, sizeof el, "%.1f s", now);
    sb_printf(&b, "  %s elapsed", el);
    if (e->eta_s >= 0) {
        if (t->tty)
            clock_text(e->eta_s, eta, sizeof eta);
        else
            snprintf(eta, sizeof eta, "%.0f s", e->eta_s);
        sb_printf(&b, ", ETA %s", eta);
    }
    snprintf(out, n, "%s", b.s ? b.s : "");
    sb_free(&b);
}

static int term_width(FILE *f)
{
    struct winsize w;
    if (ioctl(fileno(f), TIOCGWINSZ, &w) == 0 && w.ws_col >= 20)
        return w.ws_col;
    return 80;
}

void progress_term_fn(void *ctx, const ProgEvent *e)
{
    ProgressTerm *t = ctx;
    char line[512];
    if (e->kind == PROG_DONE) {
        progress_term_clear(t);
        return;
    }
    if (e->kind == PROG_NOTE) {
        /* above the status line, which the next event redraws */
        progress_term_clear(t);
        fprintf(t->f, "perfc: %s%s", e->what ? e->what : "", e->what && strchr(e->what, '\n') ? "" : "\n");
        fflush(t->f);
        return;
    }
    if (!t->tty) {
        /* a line per phase start and per candidate; repetitions and ends are noise */
        bool cand = e->phase == PROG_SEARCH && e->kind == PROG_TICK;
        if (e->kind != PROG_BEGIN && !cand)
            return;
        if (e->kind == PROG_BEGIN && e->phase == t->phase && e->phase != PROG_GOLDEN && e->phase != PROG_VALIDATE &&
            t->last >= 0)
            return; /* the same phase again (the timing loop of the same kernel) */
        event_text(t, e, line, sizeof line);
        fprintf(t->f, "%s\n", line);
        fflush(t->f);
        t->phase = e->phase;
        t->last = now_seconds();
        return;
    }
    double now = now_seconds();
    /* phase changes always show; ticks at most ten times a second */
    if (e->kind == PROG_TICK && e->phase != PROG_SEARCH && t->last >= 0 && now - t->last < 0.1)
        return;
    if (e->kind == PROG_END)
        return; /* the next phase's start replaces the line; the caller clears at the end */
    event_text(t, e, line, sizeof line);
    int w = term_width(t->f) - 1;
    if ((int)strlen(line) > w)
        line[w] = 0;
    fprintf(t->f, "\r\033[K%s", line);
    fflush(t->f);
    t->shown = true;
    t->last = now;
    t->phase = e->phase;
}

void progress_term_clear(ProgressTerm *t)
{
    if (t->tty && t->shown) {
        fputs("\r\033[K", t->f);
        fflush(t->f);
    }
    t->shown = false;
}

/* ---- Ctrl-C ---- */

static volatile sig_atomic_t stop_flag;

volatile sig_atomic_t *progress_stop_flag(void) { return &stop_flag; }

static void on_sigint(int sig)
{
    if (stop_flag) {
        /* the second Ctrl-C: the default action, now */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_flag = 1;
}

void progress_catch_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}
