/* The machine's roofs (peak.h says what and why).
 *
 * The FMA loop: each thread runs 12 independent vector accumulators (two FMA
 * pipes of four cycles' latency need at least eight in flight; twelve leave a
 * margin) for a fixed number of iterations.  The
 * widest ISA the CPU reports is used through GCC/Clang target attributes, so perfc
 * itself needs no -march; twenty short runs, the best counts (on a shared machine
 * one of them finds the cores free).  The copy: each thread memcpy's its share of a
 * 64 MiB buffer (at least twice the last-level cache) into another, best of eight,
 * counting the bytes read and written. */
#include "peak.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ---- the FMA loop ---- */

enum { FMA_ITERS = 1 << 22 };

#if defined(__x86_64__)
/* Twelve named accumulators, not an array: at -O2 an array may stay in memory and
 * the loop would time store-to-load forwarding instead of the FMA units. */
#define FMA12(op, V)                                                                                     \
    V a0 = set(0), a1 = set(1), a2 = set(2), a3 = set(3), a4 = set(4), a5 = set(5), a6 = set(6),         \
      a7 = set(7), a8 = set(8), a9 = set(9), a10 = set(10), a11 = set(11), m = set(0.999999f), c = set(1e-7f); \
    for (long it = 0; it < iters; it++) {                                                                \
        a0 = op(a0, m, c); a1 = op(a1, m, c); a2 = op(a2, m, c); a3 = op(a3, m, c);                      \
        a4 = op(a4, m, c); a5 = op(a5, m, c); a6 = op(a6, m, c); a7 = op(a7, m, c);                      \
        a8 = op(a8, m, c); a9 = op(a9, m, c); a10 = op(a10, m, c); a11 = op(a11, m, c);                  \
    }                                                                                                    \
    V s = add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))), add(add(a8, a9), add(a10, a11)));

__attribute__((target("avx512f"))) static float fma512(long iters)
{
#define set(x) _mm512_set1_ps(x)
#define add _mm512_add_ps
    FMA12(_mm512_fmadd_ps, __m512)
#undef set
#undef add
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma256(long iters)
{
#define set(x) _mm256_set1_ps(x)
#define add _mm256_add_ps
    FMA12(_mm256_fmadd_ps, __m256)
#undef set
#undef add
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}
#endif

static float fma_scalar(long iters)
{
#define set(x) ((float)(x))
#define add(x, y) ((x) + (y))
    FMA12(fmaf, float)
#undef set
#undef add
    return s;
}

typedef struct Job {
    int lanes;          /* 16, 8 or 1 */
    long iters;
    float sink;
    const char *src;
    char *dst;
    size_t bytes;
} Job;

static void *fma_job(void *arg)
{
    Job *j = arg;
#if defined(__x86_64__)
    if (j->lanes == 16) {
        j->sink = fma512(j->iters);
        return NULL;
    }
    if (j->lanes == 8) {
        j->sink = fma256(j->iters);
        return NULL;
    }
#endif
    j->sink = fma_scalar(j->iters);
    return NULL;
}

static void *copy_job(void *arg)
{
    Job *j = arg;
    memcpy(j->dst, j->src, j->bytes);
    return NULL;
}

/* Runs fn on n threads at once; returns the wall time in seconds. */
static double on_threads(void *(*fn)(void *), Job *jobs, int n)
{
    pthread_t th[256];
    int started = 0;
    double t0 = now_seconds();
    for (int i = 1; i < n && i < 256; i++)
        if (pthread_create(&th[started], NULL, fn, &jobs[i]) == 0)
            started++;
    fn(&jobs[0]);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return now_seconds() - t0;
}

void rt_peak_measure_cpu(int threads, RtPeak *p)
{
    memset(p, 0, sizeof *p);
    if (threads <= 0)
        threads = rt_cpu_count();
    if (threads > 256)
        threads = 256;
    int lanes = 1;
    const char *isa = "scalar";
#if defined(__x86_64__)
    if (rt_cpu_has("avx512f"))
        lanes = 16, isa = "AVX-512";
    else if (rt_cpu_has("avx2") && rt_cpu_has("fma"))
        lanes = 8, isa = "AVX2";
#endif
    Job *jobs = xcalloc((size_t)threads, sizeof *jobs);
    /* short runs, the best of many: on a shared machine one of them finds the cores free */
    long iters = lanes == 1 ? FMA_ITERS / 32 : FMA_ITERS / 16;
    double best = 1e30;
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < threads; i++)
            jobs[i] = (Job){.lanes = lanes, .iters = iters};
        best = fmin(best, on_threads(fma_job, jobs, threads));
    }
    p->gflops = 2.0 * 12 * lanes * (double)iters * threads / best * 1e-9;

    size_t total = (size_t)64 << 20;
    int64_t llc = rt_llc_bytes();
    while ((int64_t)total < 2 * llc)
        total *= 2;
    char *src = xmalloc(total), *dst = xmalloc(total);
    memset(src, 1, total);
    memset(dst, 0, total); /* touch every page before timing */
    size_t share = total / (size_t)threads & ~(size_t)63;
    best = 1e30;
    for (int rep = 0; rep < 8; rep++) {
        for (int i = 0; i < threads; i++)
            jobs[i] = (Job){.src = src + share * (size_t)i, .dst = dst + share * (size_t)i, .bytes = share};
        best = fmin(best, on_threads(copy_job, jobs, threads));
    }
    p->gbps = 2.0 * (double)share * threads / best * 1e-9;
    free(src);
    free(dst);
    free(jobs);
    snprintf(p->how, sizeof p->how,
             "measured: f32 FMA loop (%s, %d thread%s), copy of %zu MiB (read + write bytes)", isa, threads,
             threads == 1 ? "" : "s", total >> 20);
}

/* ---- GPUs: the data sheet ---- */

static const struct {
    const char *name;   /* a substring of the device's name */
    double f32, tc, gbps;
} sheet[] = {
    /* dense f16/bf16 tensor-core TFLOP/s (no sparsity), f32 CUDA-core TFLOP/s, GB/s */
    {"H200", 66.9e3, 989.4e3, 4800},   {"H100 PCIe", 51.2e3, 756.5e3, 2000},
    {"H100", 66.9e3, 989.4e3, 3350},   {"A100", 19.5e3, 312e3, 2039},
    {"L40S", 91.6e3, 362e3, 864},      {"RTX 4090", 82.6e3, 330e3, 1008},
    {"A10", 31.2e3, 125e3, 600},
};

static bool gpu_sheet(const RtMachine *m, RtPeak *p)
{
    for (size_t i = 0; i < sizeof sheet / sizeof sheet[0]; i++)
        if (strstr(m->device, sheet[i].name)) {
            p->gflops = sheet[i].f32;
            p->gflops_tc = sheet[i].tc;
            p->gbps = sheet[i].gbps;
            snprintf(p->how, sizeof p->how, "data sheet of the %s (not measured): %.0f TFLOP/s f32, %.0f TFLOP/s "
                                            "dense f16/bf16 tensor cores, %.0f GB/s",
                     sheet[i].name, sheet[i].f32 / 1e3, sheet[i].tc / 1e3, sheet[i].gbps);
            return true;
        }
    return false;
}

/* ---- the cache in the tuning database ---- */

#ifdef PERFC_HAVE_SQLITE
#include <sqlite3.h>

static sqlite3 *peak_db(const char *path)
{
    sqlite3 *db = NULL;
    if (!path || sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 30000);
    if (sqlite3_exec(db,
                     "CREATE TABLE IF NOT EXISTS machine_peak(device TEXT NOT NULL, threads INTEGER NOT NULL,"
                     " gflops REAL, gbps REAL, how TEXT, created REAL, PRIMARY KEY(device, threads))",
                     NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static bool cache_get(sqlite3 *db, const char *device, int threads, RtPeak *p)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT gflops, gbps, how FROM machine_peak WHERE device = ?1 AND threads = ?2", -1,
                           &s, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, threads);
    bool ok = sqlite3_step(s) == SQLITE_ROW;
    if (ok) {
        p->gflops = sqlite3_column_double(s, 0);
        p->gbps = sqlite3_column_double(s, 1);
        const unsigned char *h = sqlite3_column_text(s, 2);
        snprintf(p->how, sizeof p->how, "%s (kept in the tuning database)", h ? (const char *)h : "");
        ok = p->gflops > 0 && p->gbps > 0;
    }
    sqlite3_finalize(s);
    return ok;
}

static void cache_put(sqlite3 *db, const char *device, int threads, const RtPeak *p)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO machine_peak VALUES(?1, ?2, ?3, ?4, ?5, ?6)", -1, &s,
                           NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, threads);
    sqlite3_bind_double(s, 3, p->gflops);
    sqlite3_bind_double(s, 4, p->gbps);
    sqlite3_bind_text(s, 5, p->how, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 6, (double)time(NULL));
    sqlite3_step(s);
    sqlite3_finalize(s);
}
#endif

bool rt_peak(const char *target, const RtMachine *m, int threads, const char *db_path, RtPeak *p, Diags *d)
{
    memset(p, 0, sizeof *p);
    if (target_is_gpu(target_find(target))) {
        if (gpu_sheet(m, p))
            return true;
        diag_plain(d, DIAG_ERROR, "--plot: no data sheet for the GPU '%s', so no roofline can be drawn", m->device);
        return false;
    }
    if (threads <= 0)
        threads = rt_cpu_count();
#ifdef PERFC_HAVE_SQLITE
    sqlite3 *db = peak_db(db_path);
    if (db && cache_get(db, m->device, threads, p)) {
        sqlite3_close(db);
        return true;
    }
    rt_peak_measure_cpu(threads, p);
    if (db) {
        cache_put(db, m->device, threads, p);
        sqlite3_close(db);
    }
#else
    (void)db_path;
    rt_peak_measure_cpu(threads, p);
#endif
    return true;
}
