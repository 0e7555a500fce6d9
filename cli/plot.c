/* --plot FILE.svg: what goes into the picture of a run, of a tuning run, and of the
 * tuning database's history (`perfc tune --show --plot`).  runtime/plot.c draws;
 * runtime/peak.c supplies the machine's roofs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/peak.h"
#include "runtime/plot.h"
#include "tune/tune.h"

/* True when an input is f16 or bf16: the tensor-core roof applies on a GPU. */
static bool half_inputs(const char *dtypes)
{
    return dtypes && (strstr(dtypes, "f16") != NULL);
}

int cli_plot_run(Compilation *c, const RtResult *r, const TuneResult *tr)
{
    const Kernel *k = c->kernel;
    StrBuf title = {0}, shape = {0}, dt = {0};
    for (int i = 0; i < k->nparams; i++)
        sb_printf(&shape, "%s%s=%lld", i ? " " : "", k->params[i].name, (long long)k->params[i].value);
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->kind != BUF_TEMP)
            sb_printf(&dt, "%s:%s ", k->bufs[i]->name, dtype_name(k->bufs[i]->dtype));
    sb_printf(&title, "perfc %s  %s  -target %s  %s", tr ? "tune" : "run", c->ast->name, c->o->target,
              shape.s ? shape.s : "");

    PlotSpec s;
    memset(&s, 0, sizeof s);
    s.title = title.s;
    /* the roofs: measured on the CPU (kept in the tuning database), a data sheet on a GPU */
    char *db = c->o->db ? xstrdup(c->o->db) : tunedb_default_path();
    {
        Diags q;
        diag_init(&q);
        TuneDb *t = tunedb_open(db, &q); /* makes the folder and file the cache lives in */
        if (t)
            tunedb_close(t);
        diag_free(&q);
    }
    RtPeak peak;
    bool roofs = r->valid && r->work.bytes > 0 && r->work.flops > 0 &&
                 rt_peak(c->o->target, &r->machine, r->threads, db, &peak, &c->diags);
    char note[400], plabel[64];
    if (roofs) {
        bool gpu = target_is_gpu(c->target);
        bool half = gpu && half_inputs(dt.s) && peak.gflops_tc > 0;
        s.peak_gflops = half ? peak.gflops_tc : peak.gflops;
        snprintf(plabel, sizeof plabel, "%s", half ? "f16/bf16 tensor-core peak" : gpu ? "f32 peak" : "f32 FMA peak");
        if (!gpu && r->tol_dtype == DT_F64) {
            s.peak_gflops /= 2; /* one f64 lane per two f32 lanes */
            snprintf(plabel, sizeof plabel, "f64 peak (half the f32 FMA peak)");
        }
        s.peak_gbps = peak.gbps;
        s.peak_label = plabel;
        snprintf(note, sizeof note, "roofs: %s", peak.how);
        s.roof_note = note;
        double ai = r->work.flops / r->work.bytes;
        s.pts[s.npts++] = (PlotPoint){c->ast->name, ai, r->gflops};
        if (r->has_base && r->base_gflops > 0)
            s.pts[s.npts++] = (PlotPoint){r->base_call[0] ? r->base_call : r->base_name, ai, r->base_gflops};
    }
    double *t = NULL, *v = NULL;
    char tt[160];
    if (tr && tr->ntrace) {
        t = xmalloc(sizeof *t * (size_t)tr->ntrace);
        v = xmalloc(sizeof *v * (size_t)tr->ntrace);
        for (int i = 0; i < tr->ntrace; i++) {
            t[i] = tr->trace[i].t_s;
            v[i] = tr->trace[i].ms;
        }
        s.series[s.nseries++] = (PlotSeries){"candidates (best so far: line)", t, v, tr->ntrace};
        snprintf(tt, sizeof tt, "the search: %d measured in %.1f s%s", tr->measured, tr->search_s,
                 tr->interrupted ? ", interrupted" : tr->time_limited ? ", stopped by the time limit" : "");
        s.time_title = tt;
        s.time_xlabel = "seconds since the tuner started";
        s.hline_ms = tr->lib_ms > 0 ? tr->lib_ms : r->has_base ? r->base_time.median : 0;
        s.hline_label = r->base_call[0] ? r->base_call : c->o->compare;
    }
    int rc = 0;
    if (!s.npts && !s.nseries) {
        diag_plain(&c->diags, DIAG_WARNING, "--plot: nothing to draw (no valid timed run)");
    } else if (!plot_svg_write(&s, c->o->plot, &c->diags)) {
        rc = 1;
    }
    free(t);
    free(v);
    free(db);
    sb_free(&title);
    sb_free(&shape);
    sb_free(&dt);
    return rc;
}

/* ---- perfc tune --show --plot: the database's history ---- */

typedef struct Hist {
    struct {
        char key[24];
        char label[480];
        double t0;
        double *t, *v;
        int n, cap;
    } s[PLOT_MAX_SERIES];
    int n, skipped_keys;
} Hist;

static void hist_row(void *ctx, const TuneRecord *r)
{
    Hist *h = ctx;
    if (r->final)
        return; /* the winner's re-timing is not a search step */
    int i = 0;
    while (i < h->n && strcmp(h->s[i].key, r->key.id))
        i++;
    if (i == h->n) {
        if (h->n == PLOT_MAX_SERIES) {
            h->skipped_keys++;
            return;
        }
        h->n++;
        memset(&h->s[i], 0, sizeof h->s[i]);
        snprintf(h->s[i].key, sizeof h->s[i].key, "%s", r->key.id);
        snprintf(h->s[i].label, sizeof h->s[i].label, "%s %s %s t%d", r->key.kernel, r->key.shape, r->key.target,
                 r->key.threads);
        h->s[i].t0 = r->created;
    }
    if (h->s[i].n == h->s[i].cap) {
        h->s[i].cap = h->s[i].cap ? 2 * h->s[i].cap : 64;
        h->s[i].t = xrealloc(h->s[i].t, sizeof(double) * (size_t)h->s[i].cap);
        h->s[i].v = xrealloc(h->s[i].v, sizeof(double) * (size_t)h->s[i].cap);
    }
    h->s[i].t[h->s[i].n] = r->created - h->s[i].t0;
    h->s[i].v[h->s[i].n++] = r->valid ? r->median_ms : 0;
}

int cli_plot_history(TuneDb *db, const char *kernel, const char *path, Diags *d)
{
    Hist h;
    memset(&h, 0, sizeof h);
    int n = tunedb_foreach(db, true, kernel, hist_row, &h, d);
    int rc = 0;
    if (n < 0) {
        rc = 1;
    } else if (h.n == 0) {
        diag_plain(d, DIAG_ERROR, "--plot: no measurements%s%s to draw", kernel ? " of kernel " : "",
                   kernel ? kernel : "");
        rc = 1;
    } else {
        PlotSpec s;
        memset(&s, 0, sizeof s);
        StrBuf title = {0};
        sb_printf(&title, "perfc tuning database: %s", kernel ? kernel : "every kernel");
        if (h.skipped_keys)
            sb_printf(&title, " (the first %d keys of %d)", PLOT_MAX_SERIES, PLOT_MAX_SERIES + h.skipped_keys);
        s.title = title.s;
        for (int i = 0; i < h.n; i++)
            s.series[s.nseries++] = (PlotSeries){h.s[i].label, h.s[i].t, h.s[i].v, h.s[i].n};
        s.time_title = "every measurement of each key, by the time it was recorded";
        s.time_xlabel = "seconds since the key's first measurement (recorded to the second)";
        if (!plot_svg_write(&s, path, d))
            rc = 1;
        sb_free(&title);
    }
    for (int i = 0; i < h.n; i++) {
        free(h.s[i].t);
        free(h.s[i].v);
    }
    return rc;
}
