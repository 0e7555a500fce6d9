/* The harness with the GPU device plugged in (runtime/cuda_device.c): a right
 * kernel passes with a complete report and the cuBLAS baseline beside it, at a
 * small shape (interpreter reference) and a large one (dgemm reference), in f32 and
 * with f16 inputs; wrong loop nests compiled by the CUDA back end are rejected, which
 * shows the poison reaches device memory before every run; code for an older
 * architecture runs through its PTX and the report names it.  Exits 77 (skipped)
 * without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"
#include "runtime/cuda_driver.h"

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

static void run(const char *arch, Kernel *k, const Kernel *u, int want, bool baseline, const char *golden)
{
    RunOptions o;
    rt_options_init(&o);
    o.target = arch;
    o.min_time_s = 0.02;
    o.json = true;
    o.compare = "cublas";
    o.out = tmpfile();
    Diags d;
    diag_init(&d);
    int rc = rt_run(k, u, &o, &d);
    char *json = slurp(o.out);
    fclose(o.out);
    if (rc != want) {
        fprintf(stderr, "%s: status %d, wanted %d\n%s", k->name, rc, want, json);
        diag_flush(&d, stderr);
        rt_test_failures++;
    } else if (want == 0 || want == 2) {
        JVal *rep = json_parse(json, NULL);
        const char *problem = rt_test_report_problem(rep, want == 0, baseline);
        if (problem) {
            fprintf(stderr, "report problem: %s\n%s\n", problem, json);
            rt_test_failures++;
        } else {
            const JVal *facts = json_get(json_get(rep, "machine"), "facts");
            CHECK(json_get(facts, "gpu") != NULL);
            const JVal *code = json_get(facts, "code");
            CHECK(code && code->kind == JN_STR && strncmp(code->str, arch, strlen(arch)) == 0);
            const JVal *gn = json_get(rep, "golden");
            /* a trailing '*' in golden: a prefix (sample counts vary) */
            size_t glen = golden ? strlen(golden) : 0;
            bool prefix = glen && golden[glen - 1] == '*';
            if (golden && (!gn || gn->kind != JN_STR ||
                           (prefix ? strncmp(gn->str, golden, glen - 1) : strcmp(gn->str, golden)))) {
                fprintf(stderr, "%s: golden %s, wanted %s\n", k->name, gn && gn->kind == JN_STR ? gn->str : "?",
                        golden);
                rt_test_failures++;
            }
            fprintf(stderr, "ok: %s on %s: %s\n", k->name, arch, json);
        }
        json_free(rep);
    }
    free(json);
    diag_free(&d);
}

int main(void)
{
    Diags d;
    diag_init(&d);
    GpuDevice *g = gpu_open(0, &d);
    if (!g) {
        fprintf(stderr, "skipped: %s", d.text.s ? d.text.s : "no GPU\n");
        diag_free(&d);
        return 77;
    }
    char arch[16];
    snprintf(arch, sizeof arch, "%s", gpu_info(g)->arch);
    gpu_close(g);
    diag_free(&d);

    Kernel *right = rt_test_gemm(37, 29, 53, DT_F32, DT_F32, false, false, GEMM_OK);
    run(arch, right, NULL, 0, true, "interpreter-f64");
    Kernel *half = rt_test_gemm(64, 48, 80, DT_F16, DT_F32, false, true, GEMM_OK);
    run(arch, half, NULL, 0, true, "interpreter-f64");
    /* large: the reference is cuBLAS DGEMM on the GPU itself */
    Kernel *large = rt_test_gemm(512, 384, 1024, DT_F32, DT_F32, true, false, GEMM_OK);
    run(arch, large, NULL, 0, true, "cublas-dgemm");
    /* code for an older architecture runs on a newer GPU through its PTX, and the
     * report says so; on an sm_80 GPU, sm_90a code is refused with status 1 */
    if (strcmp(arch, "sm_80") != 0) {
        run("sm_80", right, NULL, 0, true, "interpreter-f64");
    } else {
        run("sm_90a", right, NULL, 1, false, NULL);
    }
    /* not a product, and too large for the interpreter: sampled elements on every
     * input set, and the f64 copy compiled for the GPU checks every element */
    Kernel *add = rt_test_add(30000000);
    run(arch, add, NULL, 0, false, "sampled-interpreter(*");
    ir_free(add);
    GemmVariant bad[] = {GEMM_K_FROM_1, GEMM_SKIP_LAST_ROW, GEMM_CONSTANT};
    for (int i = 0; i < 3; i++) {
        Kernel *k = rt_test_gemm(37, 29, 53, DT_F32, DT_F32, false, false, bad[i]);
        run(arch, k, right, 2, false, NULL);
        ir_free(k);
        /* and the same mistakes caught by the cuBLAS DGEMM reference */
        k = rt_test_gemm(512, 384, 1024, DT_F32, DT_F32, true, false, bad[i]);
        run(arch, k, large, 2, false, NULL);
        ir_free(k);
    }
    ir_free(right);
    ir_free(half);
    ir_free(large);
    if (rt_test_failures)
        fprintf(stderr, "%d failures\n", rt_test_failures);
    return rt_test_failures != 0;
}
