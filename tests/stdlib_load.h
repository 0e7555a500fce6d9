/* Test support: a .pdl file read and parsed, and one of its kernels lowered with
 * sizes given as text ("M=64 N=64 K=32"), and the .pdl files of a folder: the
 * steps every test that runs the stdlib kernels through the pipeline starts with.  Which schedules a test then
 * applies is its own business (a named GPU variant, every schedule of a target
 * class), so that stays in the tests. */
#ifndef PERFC_TESTS_STDLIB_LOAD_H
#define PERFC_TESTS_STDLIB_LOAD_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "passes/passes.h"

/* The program in path, parsed but not checked (a test may bind a dtype parameter
 * before sema_program); NULL with the errors in d. */
static inline Program *tl_read_program(Arena *a, const char *path, Diags *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_plain(d, DIAG_ERROR, "cannot read %s", path);
        return NULL;
    }
    StrBuf t = {0};
    int c;
    while ((c = fgetc(f)) != EOF)
        sb_putc(&t, (char)c);
    fclose(f);
    Source *src = arena_alloc(a, sizeof *src);
    src->path = arena_strdup(a, path);
    src->text = arena_strdup(a, t.s ? t.s : "");
    src->len = t.len;
    sb_free(&t);
    Program *p = parse_program(a, src, d);
    return d->nerrors ? NULL : p;
}

/* The value of NAME in sizes ("M=64 N=64"): the number after `NAME=` where NAME
 * starts a word; false when sizes does not name it. */
static inline bool tl_size_of(const char *sizes, const char *name, int64_t *v)
{
    size_t n = strlen(name);
    for (const char *at = strstr(sizes, name); at; at = strstr(at + 1, name))
        if ((at == sizes || at[-1] == ' ') && at[n] == '=') {
            *v = atoll(at + n + 1);
            return true;
        }
    return false;
}

/* Checked kernel ak lowered with the sizes named in sizes (the others take their
 * defaults, or stay symbolic); NULL with the errors in d. */
static inline Kernel *tl_lower_sized(const Program *p, const AstKernel *ak, const char *sizes, Diags *d)
{
    int64_t vals[32];
    bool bound[32];
    for (int i = 0; i < ak->nparams && i < 32; i++) {
        bool given = tl_size_of(sizes, ak->params[i].name, &vals[i]);
        bound[i] = given || ak->params[i].has_default;
        if (!given)
            vals[i] = ak->params[i].def;
    }
    return lower_kernel(p, ak, vals, bound, d);
}

static inline int tl_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the .pdl files in dir, sorted, at most cap (each freed by the
 * caller); -1 when dir cannot be opened. */
static inline int tl_list_pdl(const char *dir, char **files, int cap)
{
    DIR *dd = opendir(dir);
    if (!dd)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd)) && n < cap) {
        size_t len = strlen(de->d_name);
        if (len > 4 && !strcmp(de->d_name + len - 4, ".pdl"))
            files[n++] = xstrdup(de->d_name);
    }
    closedir(dd);
    qsort(files, (size_t)n, sizeof *files, tl_cmp_str);
    return n;
}

#endif
