/* Masks as loop bounds (passes/mask_bounds.c) against the interpreter: each kernel
 * of tests/codegen/pdl/masks.pdl (triangular, banded, skewed with floor and
 * ceiling divisions, strided by a modulus, causal attention) is lowered with its
 * guards, and for those with a CPU schedule scheduled, the pipeline stopped before
 * mask-bounds; the interpreter runs that kernel as it is, while the JIT compiles
 * it through the CPU lowering, which bounds its loops first.  Odd sizes, sizes of
 * 1 (every row but one empty) and sizes where a bound falls outside the loop. */
#include <stdio.h>
#include <string.h>

#include "cg_test.h"
#include "runtime/pool.h"

typedef struct Case {
    const char *kernel;
    int n;
    const char *names[3];
    int64_t vals[3];
} Case;

int main(void)
{
    void (*pf)(int64_t, void (*)(void *, int64_t, int64_t), void *) = perfc_parallel_for;
    void *addr;
    memcpy(&addr, &pf, sizeof addr);
    cg_llvm_add_symbol("perfc_parallel_for", addr);
    static const Case cases[] = {
        {"tril", 3, {"M", "N", "K"}, {13, 7, 9}},        {"tril", 3, {"M", "N", "K"}, {5, 3, 17}},
        {"tril", 3, {"M", "N", "K"}, {1, 1, 1}},         {"triu_korder", 2, {"M", "N"}, {11, 5}},
        {"triu_korder", 2, {"M", "N"}, {1, 3}},          {"tril_tiled", 3, {"M", "N", "K"}, {21, 3, 19}},
        {"tril_tiled", 3, {"M", "N", "K"}, {6, 2, 40}},  {"band", 2, {"N", "W"}, {13, 2}},
        {"band", 2, {"N", "W"}, {3, 5}},                 {"skew", 1, {"N"}, {11}},
        {"skew", 1, {"N"}, {2}},                         {"tconv_s2", 2, {"N", "R"}, {9, 5}},
        {"tconv_s2", 2, {"N", "R"}, {4, 1}},             {"stride3", 1, {"N"}, {17}},
        {"stride3", 1, {"N"}, {2}},                      {"causal", 2, {"S", "D"}, {13, 5}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const Case *c = &cases[i];
        char what[96];
        int at = snprintf(what, sizeof what, "%s", c->kernel);
        for (int p = 0; p < c->n; p++)
            at += snprintf(what + at, sizeof what - (size_t)at, " %s=%lld", c->names[p], (long long)c->vals[p]);
        Diags d;
        diag_init(&d);
        Kernel *k = cgt_lower_file_stop(PERFC_SOURCE_DIR "/tests/codegen/pdl/masks.pdl", c->kernel, c->names, c->vals,
                                        c->n, -1, "host", "schedule", &d);
        CHECK(k, "%s did not lower and schedule: %s", what, d.text.s ? d.text.s : "");
        if (k) {
            CHECK(cgt_jit_check(k, "host", 7000 + i, what, NULL), "%s: JIT differs from the interpreter", what);
            ir_free(k);
        }
        diag_free(&d);
    }
    cgt_cleanup();
    if (cgt_failures)
        fprintf(stderr, "%d failure(s)\n", cgt_failures);
    return cgt_failures != 0;
}
