/* The thread pool alone (runtime/pool.c, linked in directly as the cross drivers
 * do): every index of 0..n runs exactly once for many n and thread counts, chunks
 * are contiguous and disjoint, nested calls run serially and complete, and several
 * application threads may submit at once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pool.h"

static int failures;
#define CHECK(c, ...)                                      \
    do {                                                   \
        if (!(c)) {                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fputc('\n', stderr);                           \
            failures++;                                    \
        }                                                  \
    } while (0)

typedef struct Cover {
    int64_t n;
    atomic_int *hits;
    atomic_int calls;
} Cover;

static void cover(void *ctx, int64_t lo, int64_t hi)
{
    Cover *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    for (int64_t i = lo; i < hi; i++)
        atomic_fetch_add(&c->hits[i], 1);
}

static void check_cover(int64_t n, int threads)
{
    perfc_pool_set_threads(threads);
    Cover c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.hits = calloc((size_t)(n > 0 ? n : 1), sizeof *c.hits);
    perfc_parallel_for(n, cover, &c);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++)
        wrong += atomic_load(&c.hits[i]) != 1;
    CHECK(wrong == 0, "n=%lld threads=%d: %lld indices not run exactly once", (long long)n, threads, (long long)wrong);
    int calls = atomic_load(&c.calls);
    int maxcalls = threads < 1 ? 1 << 20 : threads;
    CHECK(n <= 0 ? calls == 0 : calls >= 1 && calls <= maxcalls && calls <= n, "n=%lld threads=%d: %d chunks",
          (long long)n, threads, calls);
    free(c.hits);
}

/* A parallel loop whose body is a parallel loop: the inner one runs serially on
 * whichever thread runs the outer chunk, and everything completes. */
typedef struct Nest {
    atomic_int *hits; /* [outer * 100 + inner] */
} Nest;

typedef struct Inner {
    Nest *n;
    int64_t outer;
} Inner;

static void inner_body(void *ctx, int64_t lo, int64_t hi)
{
    Inner *in = ctx;
    for (int64_t i = lo; i < hi; i++)
        atomic_fetch_add(&in->n->hits[in->outer * 100 + i], 1);
}

static void outer_body(void *ctx, int64_t lo, int64_t hi)
{
    for (int64_t o = lo; o < hi; o++) {
        Inner in = {ctx, o};
        perfc_parallel_for(100, inner_body, &in);
    }
}

static void *submitter(void *arg)
{
    (void)arg;
    for (int r = 0; r < 200; r++)
        check_cover(37 + r % 5, 0);
    return NULL;
}

int main(void)
{
    static const int64_t ns[] = {0, -3, 1, 2, 3, 7, 64, 1000, 100003};
    static const int ts[] = {1, 2, 3, 4, 8, 0};
    for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (int rep = 0; rep < 20; rep++)
                check_cover(ns[i], ts[t]);

    perfc_pool_set_threads(4);
    CHECK(perfc_pool_threads() == 4, "set_threads(4) -> %d", perfc_pool_threads());
    Nest n;
    n.hits = calloc(50 * 100, sizeof *n.hits);
    perfc_parallel_for(50, outer_body, &n);
    int wrong = 0;
    for (int i = 0; i < 5000; i++)
        wrong += atomic_load(&n.hits[i]) != 1;
    CHECK(wrong == 0, "nested: %d of 5000 indices wrong", wrong);
    free(n.hits);

    /* Three application threads submitting at once: jobs are serialised. */
    perfc_pool_set_threads(0);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, submitter, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK(perfc_pool_threads() >= 1, "default thread count");
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("pool tests passed (default %d threads)\n", perfc_pool_threads());
    return failures ? 1 : 0;
}
