/* Guard versioning in the LLVM back end (codegen/llvm/emit.c, emit_versioned): a
 * tile loop whose body holds split-tail guards is emitted as a guard-free fast
 * version, the guarded original, and a skip for tiles wholly past the edge.  This
 * runs stdlib/gemm.pdl with its CPU schedule (6 x 16 register tiles, blocks of 96
 * rows, 256-deep k blocks) at shapes where every case occurs: full tiles, a last
 * tile of one row or a few columns, row blocks of 31 rows whose tiles 6..15 are
 * empty, a k block cut short, and exact multiples (no guard at all), JIT-compiled
 * and compared with the f64 interpreter.  Then the ragged edges of a 4 x 64 tile
 * (tests/codegen/pdl/edge.pdl: the default contraction schedule's shape, B in
 * either order): last panels of every number of live registers, narrowed by
 * passes/cpu_edge.c and kept in registers under a lane mask by the back end. */
#include <stdio.h>
#include <string.h>

#include "cg_test.h"
#include "runtime/pool.h"

int main(void)
{
    /* The schedule's parallel loop calls the pool: let the JIT find it here. */
    void (*pf)(int64_t, void (*)(void *, int64_t, int64_t), void *) = perfc_parallel_for;
    void *addr;
    memcpy(&addr, &pf, sizeof addr);
    cg_llvm_add_symbol("perfc_parallel_for", addr);
    static const int64_t shapes[][3] = {
        {127, 40, 33}, {13, 35, 21}, {96, 32, 300}, {7, 17, 1}, {1, 1, 1}, {102, 50, 257}, {12, 32, 16},
    };
    const char *names[] = {"M", "N", "K"};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        Diags d;
        diag_init(&d);
        Kernel *k = cgt_lower_file(PERFC_SOURCE_DIR "/stdlib/gemm.pdl", "gemm", names, shapes[i], 3, 1, "host", &d);
        CHECK(k, "gemm %lldx%lldx%lld did not lower and schedule: %s", (long long)shapes[i][0],
              (long long)shapes[i][1], (long long)shapes[i][2], d.text.s ? d.text.s : "");
        if (k) {
            char what[64];
            snprintf(what, sizeof what, "gemm %lldx%lldx%lld", (long long)shapes[i][0], (long long)shapes[i][1],
                     (long long)shapes[i][2]);
            CHECK(cgt_jit_check(k, "host", 1000 + i, what, NULL), "%s: JIT differs from the interpreter", what);
            ir_free(k);
        }
        diag_free(&d);
    }
    /* N: one column past a panel, 17/33/49/63 columns (2, 3, 4 registers, the last
     * partial), whole panels; M: a last tile of 1-3 rows; K: a short k block */
    static const int64_t edges[][3] = {
        {37, 65, 20}, {5, 81, 33}, {6, 97, 16}, {9, 113, 7}, {6, 127, 40}, {4, 64, 16}, {3, 1, 5}, {2, 128, 17}, {7, 49, 3},
    };
    const char *kernels[] = {"mm", "mm_nt"};
    for (size_t j = 0; j < 2; j++)
        for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
            Diags d;
            diag_init(&d);
            char what[64];
            snprintf(what, sizeof what, "%s %lldx%lldx%lld", kernels[j], (long long)edges[i][0],
                     (long long)edges[i][1], (long long)edges[i][2]);
            Kernel *k = cgt_lower_file(PERFC_SOURCE_DIR "/tests/codegen/pdl/edge.pdl", kernels[j], names, edges[i], 3,
                                       1, "host", &d);
            CHECK(k, "%s did not lower and schedule: %s", what, d.text.s ? d.text.s : "");
            if (k) {
                CHECK(cgt_jit_check(k, "host", 2000 + i, what, NULL), "%s: JIT differs from the interpreter", what);
                ir_free(k);
            }
            diag_free(&d);
        }
    cgt_cleanup();
    if (cgt_failures)
        fprintf(stderr, "%d failure(s)\n", cgt_failures);
    return cgt_failures != 0;
}
