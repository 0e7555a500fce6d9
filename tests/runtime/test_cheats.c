/* A planted cheat must be caught (docs/harness.md): each protection of the harness is
 * broken on purpose here and the harness must reject the kernel, for the right
 * reason, with exit status 2 and no time.
 *
 * Two kinds of wrong kernel: C functions behind the host device (they can do what
 * no IR can, such as keep state between calls) and, when LLVM is present, wrong
 * loop nests written as IR and JIT-compiled like any kernel. */
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static RunOptions quick(void)
{
    RunOptions o;
    rt_options_init(&o);
    o.min_time_s = 0.005;
    o.max_reps = 20;
    o.seed = 7;
    return o;
}

static void expect(const char *what, int rc, const RtResult *r, int want_rc, const char *const *words, Diags *d)
{
    bool ok = rc == want_rc;
    if (want_rc == 2) {
        ok &= !r->valid && r->time.reps == 0 && r->gflops == 0 && r->gbps == 0;
        for (int i = 0; words && words[i]; i++)
            ok &= strstr(r->reason, words[i]) != NULL;
    } else if (want_rc == 0) {
        ok &= r->valid && r->time.reps >= 1 && r->gflops > 0 && r->checks >= 2;
    }
    if (!ok) {
        fprintf(stderr, "%s: status %d (wanted %d), valid %d, reps %d, reason: %s\n", what, rc, want_rc, r->valid,
                r->time.reps, r->reason);
        diag_flush(d, stderr);
        rt_test_failures++;
    } else {
        fprintf(stderr, "ok: %-34s %s\n", what, want_rc ? r->reason : "accepted");
    }
}

static void planted(RtDevice *host, const Kernel *gemm, Cheat c, int checks, const char *const *words)
{
    const int64_t M = 23, N = 17, K = 19;
    RtDevice *dev = rt_test_planted_device(host, c, M, N, K);
    RunOptions o = quick();
    o.checks = checks;
    RtResult r;
    Diags d;
    diag_init(&d);
    int rc = rt_evaluate(dev, gemm, NULL, &o, &r, &d);
    char what[96];
    snprintf(what, sizeof what, "planted %s%s", rt_test_cheat_name(c), checks == 1 ? " (checks=1)" : "");
    expect(what, rc, &r, c == CHEAT_NONE ? 0 : 2, words, &d);
    diag_free(&d);
    free(dev);
}

int main(void)
{
    Diags d;
    diag_init(&d);
    RtDevice *host = rt_host_open(&d);
    Kernel *gemm = rt_test_gemm(23, 17, 19, DT_F32, DT_F32, false, false, GEMM_OK);

    static const char *const rel[] = {"relative error", NULL};
    static const char *const tail[] = {"NaN or Inf", "C[22, 0]", NULL};
    static const char *const stale[] = {"NaN or Inf", "input set 2", NULL};
    static const char *const first[] = {"relative error", "input set 2", NULL};
    static const char *const lazy[] = {"NaN or Inf", "timed repetition", NULL};
    static const char *const inf[] = {"NaN or Inf", "C[11, 8]", NULL};

    planted(host, gemm, CHEAT_NONE, 2, NULL);
    planted(host, gemm, CHEAT_OFF_BY_ONE, 2, rel);
    planted(host, gemm, CHEAT_SKIP_TAIL, 2, tail);
    planted(host, gemm, CHEAT_CONSTANT, 2, rel);
    planted(host, gemm, CHEAT_STALE, 2, stale);
    planted(host, gemm, CHEAT_FIRST_INPUTS, 2, first);
    /* fewer than two input sets is not allowed: the replay is still caught */
    planted(host, gemm, CHEAT_FIRST_INPUTS, 1, first);
    planted(host, gemm, CHEAT_LAZY_TIMED, 2, lazy);
    planted(host, gemm, CHEAT_INF, 2, inf);

#ifdef PERFC_HAVE_LLVM
    /* wrong loop nests, compiled by the real back end */
    static const struct {
        GemmVariant v;
        const char *name;
        int rc;
        const char *word;
    } ir[] = {
        {GEMM_OK, "IR gemm", 0, NULL},
        {GEMM_SEPARATE_INIT, "IR gemm, init in its own nest", 0, NULL},
        {GEMM_K_FROM_1, "IR off-by-one (k from 1)", 2, "relative error"},
        {GEMM_SKIP_LAST_ROW, "IR skipped tail (i to M-1)", 2, "NaN or Inf"},
        {GEMM_CONSTANT, "IR constant output", 2, "relative error"},
    };
    for (size_t i = 0; i < sizeof ir / sizeof ir[0]; i++) {
        Kernel *k = rt_test_gemm(23, 17, 19, DT_F32, DT_F32, false, false, ir[i].v);
        RunOptions o = quick();
        RtResult r;
        Diags kd;
        diag_init(&kd);
        const char *words[2] = {ir[i].word, NULL};
        int rc = rt_evaluate(host, k, gemm, &o, &r, &kd);
        expect(ir[i].name, rc, &r, ir[i].rc, words, &kd);
        diag_free(&kd);
        ir_free(k);
    }
    /* A tuner keeps each input set's reference across its candidates (RtRefCache).
     * With the sampled golden the first evaluation computes the full f64 copy on
     * every set, cross-checked with the samples; later candidates are compared
     * with the kept values on every element, and each wrong nest is still caught. */
    {
        RtRefCache *refs = rt_refcache_new(gemm);
        for (size_t i = 0; i < sizeof ir / sizeof ir[0]; i++) {
            Kernel *k = rt_test_gemm(23, 17, 19, DT_F32, DT_F32, false, false, ir[i].v);
            RunOptions o = quick();
            o.refs = refs;
            o.golden_kind = RT_GOLDEN_SAMPLED + 1;
            RtResult r;
            Diags kd;
            diag_init(&kd);
            const char *words[2] = {ir[i].word, NULL};
            int rc = rt_evaluate(host, k, gemm, &o, &r, &kd);
            char what[96];
            snprintf(what, sizeof what, "%s, kept sampled reference", ir[i].name);
            expect(what, rc, &r, ir[i].rc, words, &kd);
            diag_free(&kd);
            ir_free(k);
        }
        /* the first evaluation computed both sets; every later one reused what it
         * checked: both sets when right, the first alone when caught there */
        int hits = rt_refcache_hits(refs), want = 0;
        for (size_t i = 1; i < sizeof ir / sizeof ir[0]; i++)
            want += ir[i].rc == 0 ? 2 : 1;
        if (hits != want) {
            fprintf(stderr, "kept sampled reference: %d input sets reused, wanted %d\n", hits, want);
            rt_test_failures++;
        }
        rt_refcache_free(refs);
    }
#else
    fprintf(stderr, "note: no LLVM: the IR-level cheats are not compiled\n");
#endif

    ir_free(gemm);
    host->close(host);
    diag_free(&d);
    if (rt_test_failures)
        fprintf(stderr, "%d failures\n", rt_test_failures);
    return rt_test_failures != 0;
}
