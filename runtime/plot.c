/* The SVG writer (plot.h says what is drawn and why).
 *
 * One fixed-width picture, panels stacked: the roofline (log-log: FLOP per byte
 * against GFLOP/s, the bandwidth slope meeting the compute roof at the ridge point,
 * a point per kernel), then the time panel (seconds against milliseconds, log when
 * the times span more than a factor 20: a dot per measurement, the best so far as a
 * step line, the library as a dashed line).  Numbers are printed with %g, text
 * escaped, and the file is plain SVG 1.1 that any browser renders. */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { W = 1000, ML = 84, MR = 270, MT = 56, MB = 64, H_ROOF = 470, H_TIME = 420 };

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                                     "#e377c2", "#17becf"};

void svg_escape(const char *s, StrBuf *out)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': sb_puts(out, "&amp;"); break;
        case '<': sb_puts(out, "&lt;"); break;
        case '>': sb_puts(out, "&gt;"); break;
        case '"': sb_puts(out, "&quot;"); break;
        case '\'': sb_puts(out, "&apos;"); break;
        default:
            if (c >= 0x20 || c == '\t')
                sb_putc(out, (char)c); /* control characters are not allowed in XML 1.0 */
        }
    }
}

static void text(StrBuf *b, double x, double y, const char *anchor, int size, const char *extra, const char *s)
{
    sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\"%s%s>", x, y, size, anchor,
              extra ? " " : "", extra ? extra : "");
    svg_escape(s, b);
    sb_puts(b, "</text>\n");
}

/* A number for an axis: 0.001 ... 1e+06 as people write them. */
static void tick_label(double v, char *out, size_t n)
{
    if (v >= 1e5 || v < 1e-3)
        snprintf(out, n, "%.0e", v);
    else
        snprintf(out, n, "%g", v);
}

typedef struct Axis {
    double lo, hi;      /* data range */
    bool log;
    double p0, p1;      /* pixel range */
} Axis;

static double map(const Axis *a, double v)
{
    double f = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return a->p0 + f * (a->p1 - a->p0);
}

static void decades(double lo, double hi, Axis *a)
{
    if (!(lo > 0))
        lo = 1e-3;
    if (!(hi > lo))
        hi = lo * 10;
    a->lo = pow(10, floor(log10(lo)));
    a->hi = pow(10, ceil(log10(hi)));
    if (a->hi <= a->lo)
        a->hi = a->lo * 10;
    a->log = true;
}

/* Grid lines and tick labels; vertical axis when vert. */
static void grid(StrBuf *b, const Axis *a, bool vert, double x0, double x1, double y0, double y1)
{
    if (a->log) {
        for (double v = a->lo; v <= a->hi * 1.0001; v *= 10) {
            double p = map(a, v);
            char l[32];
            tick_label(v, l, sizeof l);
            if (vert) {
                sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, p, x1, p);
                text(b, x0 - 6, p + 4, "end", 12, NULL, l);
            } else {
                sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", p, y0, p, y1);
                text(b, p, y1 + 18, "middle", 12, NULL, l);
            }
        }
        return;
    }
    /* a step of 1, 2 or 5 times a power of ten, for at most ten ticks */
    double span = a->hi - a->lo, step = pow(10, floor(log10(span / 10)));
    while (span / step > 10)
        step *= span / (step * 2) > 10 ? 5 : 2;
    for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-6; v += step) {
        double p = map(a, v);
        char l[32];
        snprintf(l, sizeof l, "%g", fabs(v) < step * 1e-6 ? 0 : v);
        if (vert) {
            sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, p, x1, p);
            text(b, x0 - 6, p + 4, "end", 12, NULL, l);
        } else {
            sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", p, y0, p, y1);
            text(b, p, y1 + 18, "middle", 12, NULL, l);
        }
    }
}

static void frame(StrBuf *b, double x0, double y0, double x1, double y1)
{
    sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", x0,
              y0, x1 - x0, y1 - y0);
}

static void roofline(StrBuf *b, const PlotSpec *s, double top)
{
    double x0 = ML, x1 = W - MR, y0 = top + MT, y1 = top + H_ROOF - MB;
    double ridge = s->peak_gflops / s->peak_gbps;
    double ailo = ridge, aihi = ridge, glo = s->peak_gflops;
    for (int i = 0; i < s->npts; i++) {
        if (s->pts[i].ai > 0) {
            ailo = fmin(ailo, s->pts[i].ai);
            aihi = fmax(aihi, s->pts[i].ai);
        }
        if (s->pts[i].gflops > 0)
            glo = fmin(glo, s->pts[i].gflops);
    }
    Axis ax = {.p0 = x0, .p1 = x1}, ay = {.p0 = y1, .p1 = y0};
    decades(ailo / 4, aihi * 4, &ax);
    decades(fmin(glo / 3, s->peak_gbps * ax.lo), s->peak_gflops * 2, &ay);
    if (ay.lo < s->peak_gflops * 1e-5) /* keep the interesting part visible */
        ay.lo = pow(10, floor(log10(fmin(glo / 3, s->peak_gflops * 1e-3))));
    grid(b, &ax, false, x0, x1, y0, y1);
    grid(b, &ay, true, x0, x1, y0, y1);
    frame(b, x0, y0, x1, y1);
    sb_printf(b, "<clipPath id=\"roofclip\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n",
              x0, y0, x1 - x0, y1 - y0);
    /* the roof: bandwidth * intensity up to the ridge, then the peak */
    sb_printf(b, "<polyline clip-path=\"url(#roofclip)\" fill=\"none\" stroke=\"#444\" stroke-width=\"2.5\" "
                 "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
              map(&ax, ax.lo), map(&ay, fmax(s->peak_gbps * ax.lo, ay.lo * 1e-3)), map(&ax, ridge),
              map(&ay, s->peak_gflops), map(&ax, ax.hi), map(&ay, s->peak_gflops));
    char l[160];
    snprintf(l, sizeof l, "%s %.4g GFLOP/s", s->peak_label ? s->peak_label : "peak", s->peak_gflops);
    text(b, x1 - 6, map(&ay, s->peak_gflops) - 6, "end", 12, "fill=\"#444\"", l);
    snprintf(l, sizeof l, "memory %.4g GB/s", s->peak_gbps);
    double lx = fmax(ax.lo * 1.5, ridge / 30);
    text(b, map(&ax, lx) + 4, map(&ay, s->peak_gbps * lx) - 8, "start", 12, "fill=\"#444\"", l);
    for (int i = 0; i < s->npts; i++) {
        const PlotPoint *p = &s->pts[i];
        if (!(p->ai > 0) || !(p->gflops > 0))
            continue;
        const char *c = colors[i % 8];
        double px = map(&ax, p->ai), py = map(&ay, p->gflops);
        sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"#000\" stroke-width=\"0.8\"/>\n",
                  px, py, c);
        text(b, px + 9, py + 4, "start", 12, NULL, p->label ? p->label : "");
        /* legend with the numbers */
        double ly = y0 + 18 + 50 * i;
        sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>\n", x1 + 16, ly - 4, c);
        text(b, x1 + 26, ly, "start", 12, NULL, p->label ? p->label : "");
        double roof = fmin(s->peak_gflops, s->peak_gbps * p->ai);
        snprintf(l, sizeof l, "%.4g GFLOP/s at %.3g FLOP/B", p->gflops, p->ai);
        text(b, x1 + 26, ly + 15, "start", 11, "fill=\"#555\"", l);
        snprintf(l, sizeof l, "%.0f%% of the roof there", 100 * p->gflops / roof);
        text(b, x1 + 26, ly + 29, "start", 11, "fill=\"#555\"", l);
    }
    text(b, (x0 + x1) / 2, y1 + 40, "middle", 13, NULL, "arithmetic intensity (FLOP per byte of inputs and outputs)");
    sb_printf(b, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">"
                 "GFLOP/s</text>\n", x0 - 58, (y0 + y1) / 2);
    if (s->roof_note)
        text(b, x0, top + MT - 10, "start", 11, "fill=\"#555\"", s->roof_note);
}

static void timeplot(StrBuf *b, const PlotSpec *s, double top)
{
    double x0 = ML, x1 = W - MR, y0 = top + MT, y1 = top + H_TIME - MB;
    double tmax = 0, vlo = 0, vhi = 0;
    for (int k = 0; k < s->nseries; k++)
        for (int i = 0; i < s->series[k].n; i++) {
            double t = s->series[k].t[i], v = s->series[k].v[i];
            tmax = fmax(tmax, t);
            if (v > 0) {
                vlo = vlo > 0 ? fmin(vlo, v) : v;
                vhi = fmax(vhi, v);
            }
        }
    if (s->hline_ms > 0) {
        vlo = vlo > 0 ? fmin(vlo, s->hline_ms) : s->hline_ms;
        vhi = fmax(vhi, s->hline_ms);
    }
    if (!(vlo > 0)) {
        vlo = 1;
        vhi = 10;
    }
    Axis ax = {.lo = 0, .hi = tmax > 0 ? tmax * 1.05 : 1, .p0 = x0, .p1 = x1};
    Axis ay = {.p0 = y1, .p1 = y0};
    if (vhi / vlo > 20) {
        decades(vlo, vhi, &ay);
    } else {
        double pad = (vhi - vlo) * 0.1 + vhi * 0.02;
        ay.lo = fmax(0, vlo - pad);
        ay.hi = vhi + pad;
    }
    grid(b, &ax, false, x0, x1, y0, y1);
    grid(b, &ay, true, x0, x1, y0, y1);
    frame(b, x0, y0, x1, y1);
    if (s->hline_ms > 0) {
        double py = map(&ay, s->hline_ms);
        sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-dasharray=\"6,4\"/>\n",
                  x0, py, x1, py);
        char l[96];
        snprintf(l, sizeof l, "%s %.4g ms", s->hline_label ? s->hline_label : "library", s->hline_ms);
        text(b, x1 - 6, py - 6, "end", 12, NULL, l);
    }
    for (int k = 0; k < s->nseries; k++) {
        const PlotSeries *se = &s->series[k];
        const char *c = colors[k % 8];
        double best = 0;
        StrBuf path = {0};
        for (int i = 0; i < se->n; i++) {
            double t = se->t[i], v = se->v[i];
            if (v > 0)
                sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" fill-opacity=\"0.45\"/>\n",
                          map(&ax, t), map(&ay, v), c);
            if (v > 0 && (best <= 0 || v < best)) {
                /* the step: flat at the old best until now, then down */
                if (best > 0)
                    sb_printf(&path, " %.1f,%.1f", map(&ax, t), map(&ay, best));
                best = v;
                sb_printf(&path, " %.1f,%.1f", map(&ax, t), map(&ay, best));
            }
        }
        if (best > 0) {
            sb_printf(&path, " %.1f,%.1f", map(&ax, ax.hi / 1.05), map(&ay, best));
            sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", c, path.s);
        }
        sb_free(&path);
        double ly = y0 + 18 + 36 * k;
        sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"4\" fill=\"%s\"/>\n", x1 + 10, ly - 6, c);
        text(b, x1 + 26, ly, "start", 12, NULL, se->label ? se->label : "");
        char l[96];
        snprintf(l, sizeof l, "best %.4g ms of %d measured", best, se->n);
        text(b, x1 + 26, ly + 15, "start", 11, "fill=\"#555\"", l);
    }
    text(b, (x0 + x1) / 2, y1 + 40, "middle", 13, NULL, s->time_xlabel ? s->time_xlabel : "seconds");
    sb_printf(b, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">"
                 "median ms (best so far: line)</text>\n", x0 - 58, (y0 + y1) / 2);
    if (s->time_title)
        text(b, x0, top + MT - 10, "start", 13, "font-weight=\"bold\"", s->time_title);
}

void plot_svg(const PlotSpec *s, StrBuf *b)
{
    bool roof = s->peak_gflops > 0 && s->peak_gbps > 0;
    int h = 40 + (roof ? H_ROOF : 0) + (s->nseries ? H_TIME : 0);
    sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
              W, h, W, h);
    sb_printf(b, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, h);
    text(b, W / 2.0, 26, "middle", 16, "font-weight=\"bold\"", s->title ? s->title : "perfc");
    double top = 40;
    if (roof) {
        roofline(b, s, top - 10);
        top += H_ROOF;
    }
    if (s->nseries)
        timeplot(b, s, top - 10);
    sb_puts(b, "</svg>\n");
}

bool plot_svg_write(const PlotSpec *s, const char *path, Diags *d)
{
    StrBuf b = {0};
    plot_svg(s, &b);
    FILE *f = fopen(path, "w");
    bool ok = f && fwrite(b.s, 1, b.len, f) == b.len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        diag_plain(d, DIAG_ERROR, "--plot: cannot write %s: %s", path, strerror(errno));
    sb_free(&b);
    return ok;
}
