/* libFuzzer target for the PDL front end: lexer, parser, checker and AST printer
 * on arbitrary bytes.  The lexer relies on a NUL sentinel, so the input is copied
 * into a NUL-terminated buffer, exactly as read_file hands a file to the parser.
 * The same bytes are also parsed as a -s schedule string, the other entry point
 * that takes user text.  Any crash, sanitizer report, leak or hang is a bug in the
 * front end: bad input must only ever produce diagnostics.  Built and run by
 * scripts/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = xmalloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;

    Source src = {"fuzz.pdl", text, size};
    Arena *a = arena_new();
    Diags d;
    diag_init(&d);
    Program *p = parse_program(a, &src, &d);
    if (d.nerrors == 0) {
        sema_program(p, &d);
        /* The printer walks what sema filled in, checked or not. */
        StrBuf b = {0};
        ast_print_program(p, &b);
        sb_free(&b);
    }
    diag_free(&d);

    Source ssrc = {"<-s>", text, size};
    diag_init(&d);
    parse_schedule_text(a, &ssrc, &d);
    diag_free(&d);

    arena_free(a);
    free(text);
    return 0;
}
