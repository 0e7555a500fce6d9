/* A small persistent pthread pool for perfc_parallel_for (see pool.h).
 *
 * Self-contained on purpose: the cross-target tests compile this file with Debian's
 * aarch64 and riscv64 gcc and link it to kernels emitted by perfc, so it includes
 * nothing from the rest of the project.
 *
 * Hand-off: the submitter publishes the job, bumps `generation` and broadcasts;
 * workers notice the new generation by spinning for a while and otherwise sleep on a
 * condition variable.  Every worker decrements `remaining` once per job, when its
 * chunk is done or at once if a smaller thread count leaves it without one; the
 * submitter runs chunk 0 and then waits for zero before the next job may start.
 *
 * It is also the one runtime file generated CPU code links with, so it holds the
 * other call such code makes: perfc_amx_permit, before AMX tiles are used. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* syscall() */
#endif
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#endif

#define POOL_MAX_THREADS 256
/* Spin iterations before a worker or the submitter sleeps: a few tens of
 * microseconds, about the cost of the futex wake-up it saves. */
#define POOL_SPIN 4000
/* Parallel bodies put their private (MEM_LOCAL) buffers on the stack. */
#define POOL_STACK_BYTES ((size_t)64 << 20)

typedef void (*PoolFn)(void *, int64_t, int64_t);

static pthread_mutex_t submit_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;        /* guards the sleeps */
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static atomic_uint_fast64_t generation;
static atomic_int remaining;
static atomic_int requested;   /* perfc_pool_set_threads; 0 = default */
static int nworkers;           /* started worker threads (submit_lock held to change) */
/* The generation current when worker i was created: its first job is the next one. */
static uint_fast64_t start_gen[POOL_MAX_THREADS];

/* The current job: written by the submitter before the generation bump (release),
 * read by workers after they observe it (acquire). */
static PoolFn job_fn;
static void *job_ctx;
static int64_t job_n;
static int job_parts;

/* Set for the whole life of a worker, and on the submitting thread while its job
 * runs: a parallel loop inside a parallel loop then runs serially. */
static _Thread_local bool in_pool;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int default_threads(void)
{
    const char *env = getenv("PERFC_NUM_THREADS");
    if (env && *env) {
        int n = atoi(env);
        if (n > 0)
            return n < POOL_MAX_THREADS ? n : POOL_MAX_THREADS;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    if (c < 1)
        c = 1;
    return c < POOL_MAX_THREADS ? (int)c : POOL_MAX_THREADS;
}

int perfc_pool_threads(void)
{
    int n = atomic_load(&requested);
    return n > 0 ? n : default_threads();
}

void perfc_pool_set_threads(int n)
{
    if (n > POOL_MAX_THREADS)
        n = POOL_MAX_THREADS;
    atomic_store(&requested, n > 0 ? n : 0);
}

/* Chunk p of `parts` over 0..n: sizes differ by at most one. */
static void chunk(int64_t n, int parts, int p, int64_t *lo, int64_t *hi)
{
    int64_t q = n / parts, r = n % parts;
    *lo = q * p + (p < r ? p : r);
    *hi = *lo + q + (p < r ? 1 : 0);
}

static void *worker_main(void *arg)
{
    int me = (int)(intptr_t)arg; /* runs chunk me + 1 */
    in_pool = true;
    uint_fast64_t seen = start_gen[me];
    for (;;) {
        uint_fast64_t g = atomic_load_explicit(&generation, memory_order_acquire);
        for (int i = 0; i < POOL_SPIN && g == seen; i++) {
            cpu_relax();
            g = atomic_load_explicit(&generation, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&lock);
            while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen)
                pthread_cond_wait(&wake_cv, &lock);
            pthread_mutex_unlock(&lock);
        }
        seen = g;
        if (me + 1 < job_parts) {
            int64_t lo, hi;
            chunk(job_n, job_parts, me + 1, &lo, &hi);
            job_fn(job_ctx, lo, hi);
        }
        if (atomic_fetch_sub_explicit(&remaining, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&lock);
            pthread_cond_broadcast(&done_cv);
            pthread_mutex_unlock(&lock);
        }
    }
    return NULL;
}

/* Starts workers up to `want` (submit_lock held).  Returns how many exist. */
static int start_workers(int want)
{
    if (want > POOL_MAX_THREADS - 1)
        want = POOL_MAX_THREADS - 1;
    if (nworkers >= want)
        return nworkers;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, POOL_STACK_BYTES);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (nworkers < want) {
        pthread_t t;
        /* The new thread may first run after the coming job is published, so it
         * is told which generation it has already seen rather than reading it. */
        start_gen[nworkers] = atomic_load(&generation);
        if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)nworkers) != 0)
            break; /* fewer threads is still correct */
        nworkers++;
    }
    pthread_attr_destroy(&attr);
    return nworkers;
}

void perfc_parallel_for(int64_t n, PoolFn fn, void *ctx)
{
    if (n <= 0)
        return;
    int threads = perfc_pool_threads();
    if (in_pool || threads <= 1 || n == 1) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&submit_lock);
    int parts = threads;
    if ((int64_t)parts > n)
        parts = (int)n;
    int have = start_workers(parts - 1);
    if (parts > have + 1)
        parts = have + 1;
    if (parts <= 1) {
        pthread_mutex_unlock(&submit_lock);
        fn(ctx, 0, n);
        return;
    }
    job_fn = fn;
    job_ctx = ctx;
    job_n = n;
    job_parts = parts;
    /* Every worker acknowledges every job, even one without a chunk for it, so
     * none can still be reading this job's fields when the next is written. */
    atomic_store_explicit(&remaining, have, memory_order_relaxed);
    pthread_mutex_lock(&lock);
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
    pthread_cond_broadcast(&wake_cv);
    pthread_mutex_unlock(&lock);

    in_pool = true;
    int64_t lo, hi;
    chunk(n, parts, 0, &lo, &hi);
    fn(ctx, lo, hi);
    in_pool = false;

    for (int i = 0; i < POOL_SPIN && atomic_load_explicit(&remaining, memory_order_acquire); i++)
        cpu_relax();
    if (atomic_load_explicit(&remaining, memory_order_acquire)) {
        pthread_mutex_lock(&lock);
        while (atomic_load_explicit(&remaining, memory_order_acquire))
            pthread_cond_wait(&done_cv, &lock);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_unlock(&submit_lock);
}

void perfc_amx_permit(void)
{
    static atomic_int granted; /* 0 not asked, 1 granted */
    if (atomic_load_explicit(&granted, memory_order_acquire))
        return;
#if defined(__linux__) && defined(__x86_64__)
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) {
        fprintf(stderr, "perfc: this kernel uses AMX tiles and the system refused them (arch_prctl "
                        "ARCH_REQ_XCOMP_PERM needs Linux 5.16 or later); compile it for a target without "
                        "AMX, such as -target x86_64-avx512bf16\n");
        abort();
    }
#endif
    atomic_store_explicit(&granted, 1, memory_order_release);
}
