/* Diagnostics: formatting with the source line and a caret under the span.
 * Long lines (a 1 MB line of garbage) are shown as a window around the column so a
 * diagnostic never floods the terminal; bytes that are not printable ASCII are shown
 * as '?' so a message about binary input stays readable. */
#include "diag.h"

#include <stdio.h>
#include <string.h>

enum { WINDOW = 100 };

void diag_init(Diags *d)
{
    memset(d, 0, sizeof *d);
    d->max_errors = 20;
}

void diag_free(Diags *d)
{
    sb_free(&d->text);
}

bool diag_too_many(const Diags *d)
{
    return d->nerrors >= (d->max_errors ? d->max_errors : 20);
}

static const char *level_name(DiagLevel l)
{
    switch (l) {
    case DIAG_ERROR: return "error";
    case DIAG_WARNING: return "warning";
    default: return "note";
    }
}

static void show_line(StrBuf *b, Span sp)
{
    const char *t = sp.src->text;
    int start = sp.off, end = sp.off;
    while (start > 0 && t[start - 1] != '\n')
        start--;
    while ((size_t)end < sp.src->len && t[end] != '\n')
        end++;
    int from = start, to = end;
    if (sp.off - from > WINDOW / 2)
        from = sp.off - WINDOW / 2;
    if (to - from > WINDOW)
        to = from + WINDOW;
    sb_puts(b, "  ");
    if (from > start)
        sb_puts(b, "...");
    for (int i = from; i < to; i++) {
        unsigned char c = (unsigned char)t[i];
        sb_putc(b, c == '\t' ? '\t' : (c >= 32 && c < 127) ? (char)c : '?');
    }
    if (to < end)
        sb_puts(b, "...");
    sb_puts(b, "\n  ");
    if (from > start)
        sb_puts(b, "   ");
    for (int i = from; i < sp.off && i < to; i++)
        sb_putc(b, t[i] == '\t' ? '\t' : ' ');
    sb_putc(b, '^');
    int len = sp.len;
    if (sp.off + len > end)
        len = end - sp.off;
    for (int i = 1; i < len && sp.off + i < to; i++)
        sb_putc(b, '~');
    sb_putc(b, '\n');
}

void diag_vreport(Diags *d, DiagLevel lvl, Span sp, const char *fmt, va_list ap)
{
    if (lvl == DIAG_ERROR || (lvl == DIAG_WARNING && d->werror)) {
        if (diag_too_many(d)) {
            d->nerrors++;
            return;
        }
        d->nerrors++;
    } else if (lvl == DIAG_WARNING) {
        d->nwarnings++;
    }
    if (sp.src)
        sb_printf(&d->text, "%s:%d:%d: ", sp.src->path, sp.line, sp.col);
    else
        sb_puts(&d->text, "perfc: ");
    sb_printf(&d->text, "%s: ", level_name(lvl));
    sb_vprintf(&d->text, fmt, ap);
    sb_putc(&d->text, '\n');
    if (sp.src && (size_t)sp.off <= sp.src->len)
        show_line(&d->text, sp);
}

void diag_report(Diags *d, DiagLevel lvl, Span sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(d, lvl, sp, fmt, ap);
    va_end(ap);
}

void diag_plain(Diags *d, DiagLevel lvl, const char *fmt, ...)
{
    Span none = {0};
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(d, lvl, none, fmt, ap);
    va_end(ap);
}

void diag_flush(Diags *d, FILE *f)
{
    if (d->text.len)
        fwrite(d->text.s, 1, d->text.len, f);
    if (d->nerrors > (d->max_errors ? d->max_errors : 20))
        fprintf(f, "perfc: note: %d more errors not shown\n",
                d->nerrors - (d->max_errors ? d->max_errors : 20));
    d->text.len = 0;
    if (d->text.s)
        d->text.s[0] = 0;
}

Span span_join(Span a, Span b)
{
    if (!a.src)
        return b;
    if (!b.src || b.src != a.src)
        return a;
    Span r = a;
    int end = b.off + b.len > a.off + a.len ? b.off + b.len : a.off + a.len;
    r.len = end - a.off;
    return r;
}

Span span_at(const Source *src, int off, int len)
{
    Span sp = {src, off, len, 1, 1};
    for (int i = 0; i < off && (size_t)i < src->len; i++) {
        if (src->text[i] == '\n') {
            sp.line++;
            sp.col = 1;
        } else {
            sp.col++;
        }
    }
    return sp;
}
