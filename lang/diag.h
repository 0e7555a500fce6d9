/* Source files, spans and diagnostics.
 *
 * Every AST and IR node carries a Span.  Library code never prints or exits on bad
 * input: it records the message in a Diags context and returns; the caller (the
 * CLI, a test, the C API) decides where the text goes.  The text format follows
 * cproc and chibicc:
 *
 *   file:line:col: error: message
 *     source line
 *         ^~~~
 */
#ifndef PERFC_LANG_DIAG_H
#define PERFC_LANG_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util.h"

typedef struct Source {
    const char *path;  /* as given by the user, or "<-s>" for a schedule string */
    const char *text;  /* NUL-terminated */
    size_t len;
} Source;

typedef struct Span {
    const Source *src; /* NULL for synthesised nodes */
    int off, len;      /* byte offset and length in src->text */
    int line, col;     /* 1-based; col counts bytes */
} Span;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct Diags {
    StrBuf text;       /* everything reported, formatted */
    int nerrors, nwarnings;
    int max_errors;    /* stop recording after this many errors (0: 20) */
    bool werror;       /* warnings count as errors */
} Diags;

void diag_init(Diags *d);
void diag_free(Diags *d);
void diag_report(Diags *d, DiagLevel lvl, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_vreport(Diags *d, DiagLevel lvl, Span sp, const char *fmt, va_list ap);
#define diag_error(d, sp, ...) diag_report((d), DIAG_ERROR, (sp), __VA_ARGS__)
#define diag_warning(d, sp, ...) diag_report((d), DIAG_WARNING, (sp), __VA_ARGS__)
#define diag_note(d, sp, ...) diag_report((d), DIAG_NOTE, (sp), __VA_ARGS__)
/* An error with no place in a source (a bad -D on the command line, a missing file). */
void diag_plain(Diags *d, DiagLevel lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool diag_too_many(const Diags *d);
/* Writes the recorded text to f and clears it (counts are kept). */
void diag_flush(Diags *d, FILE *f);

/* The span covering a and b (a first). */
Span span_join(Span a, Span b);
/* Computes line and col of byte offset off in src. */
Span span_at(const Source *src, int off, int len);

#endif
