/* Writes an SVG through runtime/plot.c with hostile text in every label (markup,
 * quotes, ampersands, control characters) and both panels filled, for plot.sh to
 * check as XML and to render in a browser.  Usage: test_plot OUT.svg */
#include <stdio.h>
#include <string.h>

#include "runtime/plot.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_plot OUT.svg\n");
        return 2;
    }
    static const char nasty[] = "k<script>alert(1)</script>&amp;\"'\x01\x1b]";
    double t[40], v[40];
    for (int i = 0; i < 40; i++) {
        t[i] = 0.5 * i;
        v[i] = i % 7 == 3 ? 0 : 10.0 / (1 + i % 11) + 1; /* zeros: failed candidates, not drawn */
    }
    PlotSpec s;
    memset(&s, 0, sizeof s);
    s.title = nasty;
    s.peak_gflops = 200;
    s.peak_gbps = 20;
    s.peak_label = nasty;
    s.roof_note = nasty;
    s.pts[s.npts++] = (PlotPoint){nasty, 30, 120};
    s.pts[s.npts++] = (PlotPoint){"cblas_sgemm", 30, 160};
    s.pts[s.npts++] = (PlotPoint){"copy", 0.125, 2.4};
    s.series[s.nseries++] = (PlotSeries){nasty, t, v, 40};
    s.series[s.nseries++] = (PlotSeries){"second", t, v + 5, 35};
    s.time_title = nasty;
    s.time_xlabel = nasty;
    s.hline_ms = 2;
    s.hline_label = nasty;
    Diags d;
    diag_init(&d);
    bool ok = plot_svg_write(&s, argv[1], &d);
    diag_flush(&d, stderr);
    diag_free(&d);
    /* an unwritable path is one clear error, not a crash */
    diag_init(&d);
    bool bad = plot_svg_write(&s, "/nonexistent-dir/x.svg", &d);
    int rc = ok && !bad && d.text.s && strstr(d.text.s, "/nonexistent-dir/x.svg") ? 0 : 1;
    if (rc)
        fprintf(stderr, "test_plot: writing failed (%d) or an unwritable path was not reported (%d)\n", ok, !bad);
    diag_free(&d);
    return rc;
}
