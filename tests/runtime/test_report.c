/* The report: the JSON object has every field issue 3 names (and they mean what
 * they say), an invalid kernel shows no speed in either form, --compare says so
 * plainly when there is no library equivalent or no library at all, and targets
 * that cannot run here are usage errors. */
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n)
        abort();
    return s;
}

static RunOptions quick(void)
{
    RunOptions o;
    rt_options_init(&o);
    o.min_time_s = 0.005;
    o.max_reps = 20;
    return o;
}

/* Evaluates gemm with a planted kernel and returns both reports as text. */
static int evaluate(RtDevice *host, Cheat c, const Kernel *k, const char *compare, char **json, char **human)
{
    RtDevice *dev = rt_test_planted_device(host, c, 23, 17, 19);
    RunOptions o = quick();
    o.compare = compare;
    RtResult *r = calloc(1, sizeof *r);
    Diags d;
    diag_init(&d);
    int rc = rt_evaluate(dev, k, NULL, &o, r, &d);
    diag_flush(&d, stderr);
    FILE *jf = tmpfile(), *hf = tmpfile();
    rt_report_json(r, jf);
    rt_report_human(r, hf);
    *json = slurp(jf);
    *human = slurp(hf);
    fclose(jf);
    fclose(hf);
    diag_free(&d);
    free(r);
    free(dev);
    return rc;
}

static void check_json(const char *text, bool valid, bool baseline)
{
    const char *err;
    JVal *rep = json_parse(text, &err);
    CHECK(rep != NULL);
    const char *problem = rt_test_report_problem(rep, valid, baseline);
    if (problem)
        fprintf(stderr, "report problem: %s\n%s\n", problem, text);
    CHECK(problem == NULL);
    /* one object, one line */
    CHECK(strchr(text, '\n') == text + strlen(text) - 1);
    json_free(rep);
}

int main(void)
{
    Diags d;
    diag_init(&d);
    RtDevice *host = rt_host_open(&d);
    Kernel *gemm = rt_test_gemm(23, 17, 19, DT_F32, DT_F32, false, false, GEMM_OK);
    char *json, *human;

    /* a valid kernel, with the baseline when OpenBLAS is there */
    const char *cmp = rt_blas_available() ? "openblas" : NULL;
    CHECK(evaluate(host, CHEAT_NONE, gemm, cmp, &json, &human) == 0);
    check_json(json, true, cmp != NULL);
    {
        JVal *rep = json_parse(json, NULL);
        const JVal *shape = json_get(rep, "shape");
        CHECK(json_get(shape, "M") && json_get(shape, "M")->num == 23);
        CHECK(json_get(rep, "flops")->num == 2.0 * 23 * 17 * 19);
        CHECK(!strcmp(json_get(rep, "dtype")->str, "f32"));
        CHECK(!strcmp(json_get(rep, "kernel")->str, "gemm"));
        CHECK(!strcmp(json_get(rep, "golden")->str, "interpreter-f64"));
        CHECK(json_get(rep, "tolerance")->num >= 1e-5);
        if (cmp) {
            const JVal *b = json_get(rep, "baseline");
            CHECK(!strcmp(json_get(b, "call")->str, "cblas_sgemm"));
            double ratio = json_get(rep, "vs_baseline")->num;
            double want = json_get(rep, "gflops")->num / json_get(b, "gflops")->num;
            CHECK(ratio > 0 && ratio < want * 1.0001 && ratio > want * 0.9999);
        }
        json_free(rep);
    }
    CHECK(strstr(human, "GFLOP/s") && strstr(human, "median") && strstr(human, "valid      yes"));
    free(json);
    free(human);

    /* an invalid kernel: status 2, and not one speed anywhere */
    CHECK(evaluate(host, CHEAT_OFF_BY_ONE, gemm, cmp, &json, &human) == 2);
    check_json(json, false, false);
    CHECK(strstr(human, "valid      NO") != NULL);
    CHECK(!strstr(human, "GFLOP/s") && !strstr(human, "median") && !strstr(human, "GB/s"));
    free(json);
    free(human);

    /* not a product: the baseline says so instead of inventing one */
    if (rt_blas_available()) {
        Kernel *add = rt_test_add(1000);
        RunOptions o = quick();
        o.compare = "openblas";
        RtResult r;
        int rc = rt_evaluate(host, add, NULL, &o, &r, &d);
#ifdef PERFC_HAVE_LLVM
        CHECK(rc == 0 && r.valid && !r.has_base && strstr(r.base_note, "no OpenBLAS equivalent"));
        FILE *jf = tmpfile();
        rt_report_json(&r, jf);
        json = slurp(jf);
        fclose(jf);
        JVal *rep = json_parse(json, NULL);
        const JVal *b = json_get(rep, "baseline");
        CHECK(b && b->kind == JN_OBJ && json_get(b, "note")->kind == JN_STR);
        CHECK(json_get(rep, "vs_baseline")->kind == JN_NULL);
        json_free(rep);
        free(json);
#else
        CHECK(rc == 1); /* nothing can compile it */
#endif
        ir_free(add);
    } else {
        RunOptions o = quick();
        o.compare = "openblas";
        RtResult r;
        Diags bd;
        diag_init(&bd);
        CHECK(rt_evaluate(host, gemm, NULL, &o, &r, &bd) == 1);
        CHECK(bd.text.s && strstr(bd.text.s, "without OpenBLAS"));
        diag_free(&bd);
    }

    /* the library alone (what a GPU tuner does while its candidates compile): the
     * baseline is timed and checked, nothing is compiled, and the input sets and
     * references it computed are reused by the next evaluation of the kernel */
    if (rt_blas_available()) {
        RtRefCache *refs = rt_refcache_new(gemm);
        RunOptions o = quick();
        o.compare = "openblas";
        o.baseline_only = true;
        o.refs = refs;
        RtResult r;
        Diags bd;
        diag_init(&bd);
        int rc = rt_evaluate(host, gemm, gemm, &o, &r, &bd);
        diag_flush(&bd, stderr);
        CHECK(rc == 0 && r.has_base && r.base_time.median > 0 && r.base_time.reps >= 3 && !r.valid);
        CHECK(r.compile_ms == 0 && r.time.reps == 0 && rt_refcache_hits(refs) == 0);
#ifdef PERFC_HAVE_LLVM
        o.baseline_only = false;
        o.compare = NULL;
        rc = rt_evaluate(host, gemm, NULL, &o, &r, &bd);
        CHECK(rc == 0 && r.valid && rt_refcache_hits(refs) == 2);
#endif
        /* a kernel with no library equivalent: a note, and no work done */
        Kernel *add = rt_test_add(1000);
        o.baseline_only = true;
        o.compare = "openblas";
        o.refs = NULL;
        rc = rt_evaluate(host, add, add, &o, &r, &bd);
        CHECK(rc == 0 && !r.has_base && strstr(r.base_note, "not a matrix product"));
        /* a baseline alone without a library to time is refused */
        o.compare = NULL;
        CHECK(rt_evaluate(host, add, add, &o, &r, &bd) == 1 && strstr(bd.text.s, "baseline alone"));
        ir_free(add);
        diag_free(&bd);
        rt_refcache_free(refs);
    }

    /* libraries that do not belong to the device, or do not exist */
    {
        RunOptions o = quick();
        RtResult r;
        Diags bd;
        diag_init(&bd);
        o.compare = "cublas";
        CHECK(rt_evaluate(host, gemm, NULL, &o, &r, &bd) == 1);
        o.compare = "mkl";
        CHECK(rt_evaluate(host, gemm, NULL, &o, &r, &bd) == 1);
        CHECK(bd.text.s && strstr(bd.text.s, "needs a GPU target") && strstr(bd.text.s, "unknown library"));
        diag_free(&bd);
    }

    /* targets this machine cannot run */
    {
        Diags bd;
        diag_init(&bd);
        int rc = 0;
#if defined(__x86_64__)
        CHECK(rt_device_open("aarch64-sve", &rc, &bd) == NULL && rc == 1);
        if (!rt_cpu_has("avx512f"))
            CHECK(rt_device_open("x86_64-avx512", &rc, &bd) == NULL && rc == 1);
#endif
        CHECK(rt_device_open("vax", &rc, &bd) == NULL && rc == 1);
        RtDevice *h2 = rt_device_open("host", &rc, &bd);
        CHECK(h2 && !strcmp(h2->name, "cpu"));
        if (h2)
            h2->close(h2);
        diag_free(&bd);
    }

#ifdef PERFC_HAVE_LLVM
    /* the whole path the CLI takes: rt_run with a JIT-compiled kernel */
    {
        RunOptions o = quick();
        o.json = true;
        o.compare = cmp;
        o.out = tmpfile();
        Diags rd;
        diag_init(&rd);
        int rc = rt_run(gemm, NULL, &o, &rd);
        diag_flush(&rd, stderr);
        CHECK(rc == 0);
        json = slurp(o.out);
        check_json(json, true, cmp != NULL);
        free(json);
        fclose(o.out);
        diag_free(&rd);
    }
#endif

    ir_free(gemm);
    host->close(host);
    diag_free(&d);
    if (rt_test_failures)
        fprintf(stderr, "%d failures\n", rt_test_failures);
    return rt_test_failures != 0;
}
