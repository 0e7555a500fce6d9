/* The interpreter's check elimination against itself.  ir_interp skips the range
 * check of every access its own interval analysis proves in range; a wrong proof
 * would read or write the wrong element silently.  ir_interp_checked runs the same
 * kernel with every access checked.  For each stdlib kernel, unscheduled and with
 * the file's CPU and GPU schedules, at small (and ragged) sizes, both must give the
 * same outputs bit for bit, and report the same success.  A kernel that does leave
 * a buffer must fail in both modes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "../stdlib_load.h"

static int failures, runs;
#define CHECK(c, ...)                                              \
    do {                                                           \
        if (!(c)) {                                                \
            failures++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                          \
            fputc('\n', stderr);                                   \
        }                                                          \
    } while (0)

static Program *parse_file(Arena *a, const char *path, Diags *d)
{
    Program *p = tl_read_program(a, path, d);
    return p && sema_program(p, d) ? p : NULL;
}

/* Kernel ak lowered with sizes ("M=33 N=17"), and the file's schedules for target
 * applied (NULL: none).  NULL when the schedule does not fit these sizes. */
static Kernel *load(const Program *p, const AstKernel *ak, const char *sizes, const char *target, Diags *d)
{
    Kernel *k = tl_lower_sized(p, ak, sizes, d);
    if (!k || !target)
        return k;
    const AstSchedule *s[8];
    int ns = 0;
    for (int i = 0; i < p->nschedules && ns < 8; i++)
        if (!strcmp(p->schedules[i]->kernel, ak->name) && schedule_matches_target(p->schedules[i]->target, target_find(target)))
            s[ns++] = p->schedules[i];
    PipelineOpts po = {0};
    po.schedules = s;
    po.nschedules = ns;
    if (ns == 0 || !pipeline_run(k, &po, d)) {
        ir_free(k);
        return NULL;
    }
    return k;
}

/* Runs k in both modes on the same seeded inputs; true when both ran. */
static bool compare(Kernel *k, const char *what)
{
    Diags d1, d2;
    diag_init(&d1);
    diag_init(&d2);
    double **a = ir_alloc_buffers(k, 7), **b = ir_alloc_buffers(k, 7);
    CHECK(a && b, "%s: buffers", what);
    bool r1 = false, r2 = false;
    if (a && b) {
        r1 = ir_interp(k, a, &d1);
        r2 = ir_interp_checked(k, b, &d2);
        CHECK(r1 == r2, "%s: ir_interp %s, ir_interp_checked %s", what, r1 ? "ran" : "failed", r2 ? "ran" : "failed");
        for (int i = 0; r1 && r2 && i < k->nbufs; i++) {
            if (k->bufs[i]->kind != BUF_OUT)
                continue;
            int64_t n = ir_buffer_elems(k, k->bufs[i]), bad = 0;
            for (int64_t j = 0; j < n; j++)
                bad += memcmp(&a[i][j], &b[i][j], sizeof(double)) != 0;
            CHECK(bad == 0, "%s: %lld of %lld elements of %s differ", what, (long long)bad, (long long)n,
                  k->bufs[i]->name);
        }
        runs++;
    }
    if (a)
        ir_free_buffers(k, a);
    if (b)
        ir_free_buffers(k, b);
    diag_free(&d1);
    diag_free(&d2);
    return r1 && r2;
}

static const struct {
    const char *file, *sizes[2];
} files[] = {
    {"gemm.pdl", {" M=64 N=64 K=32", " M=33 N=17 K=9"}},
    {"gemm_nt.pdl", {" M=64 N=64 K=32", " M=33 N=17 K=9"}},
    {"gemm_tn.pdl", {" M=64 N=64 K=32", " M=33 N=17 K=9"}},
    {"gemm_bias_relu.pdl", {" M=64 N=64 K=32", " M=33 N=17 K=9"}},
    {"batched_gemm.pdl", {" B=2 M=64 N=64 K=32", " B=3 M=13 N=7 K=5"}},
    {"conv2d.pdl", {" N=1 C=3 H=11 W=13 K=4 R=3 S=3 U=2 P=1", " N=1 C=2 H=8 W=8 K=8 R=3 S=3 U=1 P=1"}},
    {"depthwise_conv2d.pdl", {" N=2 C=4 H=11 W=13 R=3 S=3 U=1 P=1", " N=1 C=3 H=7 W=5 R=3 S=3 U=2 P=0"}},
    {"softmax.pdl", {" R=4 C=256", " R=3 C=1000"}},
    {"layernorm.pdl", {" R=4 C=256", " R=3 C=777"}},
    {"attention.pdl", {" B=1 H=2 S=64 D=16", " B=1 H=1 S=37 D=8"}},
    {"attention_causal.pdl", {" B=1 H=2 S=64 D=16", " B=1 H=1 S=37 D=8"}},
};

static void stdlib_kernels(const char *dir)
{
    static const char *const targets[] = {NULL, "x86_64-avx512", "sm_90a"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[f].file);
        Arena *ar = arena_new();
        Diags d;
        diag_init(&d);
        Program *p = parse_file(ar, path, &d);
        CHECK(p, "%s does not parse", path);
        for (int ki = 0; p && ki < p->nkernels; ki++)
            for (int si = 0; si < 2; si++)
                for (int t = 0; t < 3; t++) {
                    Diags dl;
                    diag_init(&dl);
                    Kernel *k = load(p, p->kernels[ki], files[f].sizes[si], targets[t], &dl);
                    diag_free(&dl);
                    if (!k) {
                        CHECK(targets[t], "%s%s: does not lower", p->kernels[ki]->name, files[f].sizes[si]);
                        continue; /* a schedule that does not fit these sizes */
                    }
                    char what[256];
                    snprintf(what, sizeof what, "%s%s (%s)", p->kernels[ki]->name, files[f].sizes[si],
                             targets[t] ? targets[t] : "unscheduled");
                    CHECK(compare(k, what), "%s: the interpreter failed", what);
                    ir_free(k);
                }
        diag_free(&d);
        arena_free(ar);
    }
}

/* Y[i] = X[i + 1] over i < N reads X[N], one past its end: both modes must stop. */
static void out_of_range(void)
{
    static const Span nowhere;
    Kernel *k = ir_kernel_new("oob", nowhere);
    Param *n = ir_add_param(k, "N");
    n->bound = true;
    n->value = 8;
    Buffer *X = ir_add_buffer(k, "X", DT_F32, BUF_IN, 1, nowhere);
    Buffer *Y = ir_add_buffer(k, "Y", DT_F32, BUF_OUT, 1, nowhere);
    X->shape[0] = ir_param(k, 0);
    Y->shape[0] = ir_param(k, 0);
    Var *i = ir_new_var(k, "i");
    Node *l = ir_loop(k, i, ir_int(k, 0), ir_param(k, 0), nowhere);
    Expr *xi[1] = {ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1))};
    Expr *yi[1] = {ir_var(k, i)};
    ir_list_push(&l->u.loop.body, ir_stmt(k, Y, yi, SOP_ASSIGN, ir_load(k, X, xi), nowhere), l);
    ir_list_push(&k->body, l, NULL);
    CHECK(!compare(k, "oob"), "a read past the end of X ran");
    ir_free(k);
}

int main(int argc, char **argv)
{
    stdlib_kernels(argc > 1 ? argv[1] : "stdlib");
    out_of_range();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok: %d kernels, both modes identical\n", runs);
    return 0;
}
