/* Small shared utilities for every perfc module: the arena allocator that owns all
 * nodes of one compilation, growable arrays, string helpers, a seeded random
 * generator and the one die() for internal bugs.  Out-of-memory is fatal (as in
 * QBE's pools): a compiler that half-allocates an AST is worse than one that stops. */
#ifndef PERFC_LANG_UTIL_H
#define PERFC_LANG_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* set by CMake from project(perfc VERSION ...); the fallback serves other builds */
#ifndef PERFC_VERSION
#define PERFC_VERSION "0.1.0"
#endif

/* ---- fatal errors (internal bugs only; user errors go through Diags) ---- */
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* ---- arena: one per compilation, freed in one call ---- */
typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);          /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t arena_bytes(const Arena *a);             /* bytes handed out so far */

/* ---- growable array of pointers, arena- or heap-backed ---- */
typedef struct PtrVec {
    void **v;
    int n, cap;
} PtrVec;
void vec_push(PtrVec *vec, void *p);            /* heap-backed; free with vec_free */
void vec_free(PtrVec *vec);

/* ---- growable string ---- */
typedef struct StrBuf {
    char *s;
    size_t len, cap;
} StrBuf;
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_free(StrBuf *b);
/* s as a JSON string literal (quotes, escapes; NULL gives null): the one JSON string
 * writer of the tree (the run report's --json and the dojo protocol use it). */
void sb_json_str(StrBuf *b, const char *s);

/* ---- files ---- */
/* Reads a whole file; NULL and errno set on failure. The buffer is NUL-terminated
 * (the lexer's sentinel) and *len excludes that NUL. */
char *read_file(const char *path, size_t *len);
/* read_file with a limit: NULL with errno EFBIG once the file holds more than max
 * bytes (checked while reading, so /dev/zero and endless pipes stop), EISDIR for a
 * directory.  FIFOs are opened without waiting for a writer. */
char *read_file_max(const char *path, size_t max, size_t *len);

/* ---- seeded random numbers (xoshiro256**): reproducible inputs everywhere ---- */
typedef struct Rng {
    uint64_t s[4];
} Rng;
void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
double rng_uniform(Rng *r, double lo, double hi);  /* in [lo, hi) */

/* ---- time ---- */
double now_seconds(void);                        /* monotonic clock */

#endif
