/* SVG pictures of a run, written by perfc itself (no library): a roofline of the
 * machine with the kernel's and the library's points, and time series (a search's
 * candidates and best so far; the tuning database's history).  runtime/plot.c draws;
 * cli/plot.c decides what goes into a picture.  The output is one standalone SVG
 * file that a browser shows; every piece of text in it is escaped (kernel names and
 * parameters are user text). */
#ifndef PERFC_RUNTIME_PLOT_H
#define PERFC_RUNTIME_PLOT_H

#include <stdbool.h>

#include "../lang/diag.h"
#include "../lang/util.h"

enum { PLOT_MAX_POINTS = 6, PLOT_MAX_SERIES = 8 };

typedef struct PlotPoint {
    const char *label;
    double ai;          /* arithmetic intensity, FLOP per byte */
    double gflops;
} PlotPoint;

typedef struct PlotSeries {
    const char *label;
    const double *t;    /* x: seconds */
    const double *v;    /* y: milliseconds; <= 0 marks a failed or invalid point (not drawn) */
    int n;
} PlotSeries;

typedef struct PlotSpec {
    const char *title;
    /* the roofline panel (drawn when peak_gflops > 0) */
    double peak_gflops, peak_gbps;
    const char *peak_label;   /* "f32 FMA peak" */
    const char *roof_note;    /* how the roofs were obtained */
    PlotPoint pts[PLOT_MAX_POINTS];
    int npts;
    /* the time panel (drawn when nseries > 0): each series as dots with its best so
     * far as a step line */
    PlotSeries series[PLOT_MAX_SERIES];
    int nseries;
    const char *time_title;
    const char *time_xlabel;
    double hline_ms;          /* a horizontal reference (the library), 0: none */
    const char *hline_label;
} PlotSpec;

/* Appends text with &, <, >, " and ' escaped, and control characters dropped. */
void svg_escape(const char *s, StrBuf *out);
/* The picture as SVG text. */
void plot_svg(const PlotSpec *s, StrBuf *out);
/* Writes it to path; false with a diagnostic naming the file. */
bool plot_svg_write(const PlotSpec *s, const char *path, Diags *d);

#endif
