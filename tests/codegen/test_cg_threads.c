/* cg_llvm_jit and cg_llvm_emit from several threads at once, as the autotuner will
 * call them: each thread compiles, runs and checks its own kernels (stdlib GEMM,
 * softmax and conv2d at different shapes, and assembly for a cross target), while
 * the others do the same.  Any shared state in the back end shows up here as a
 * crash, an LLVM assertion or a wrong result. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cg_test.h"
#include "runtime/pool.h"
#include "../lowered.h"

enum { THREADS = 4, ROUNDS = 3 };

typedef struct Job {
    int id;
    int failures;
} Job;

static void *worker(void *arg)
{
    Job *job = arg;
    static const char *const files[] = {"gemm.pdl", "softmax.pdl", "conv2d.pdl", "layernorm.pdl"};
    for (int r = 0; r < ROUNDS; r++) {
        const char *file = files[(job->id + r) % 4];
        char path[512], what[600];
        snprintf(path, sizeof path, "%s/stdlib/%s", PERFC_SOURCE_DIR, file);
        const char *names[] = {"M", "N", "K", "R", "C"};
        int64_t vals[] = {5 + job->id, 7 + r, 3 + job->id, 3 + r, 9 + job->id};
        Diags d;
        diag_init(&d);
        Kernel *k = cgt_lower_file(path, NULL, names, vals, 5, 3, NULL, &d);
        diag_flush(&d, stderr);
        diag_free(&d);
        if (!k) {
            job->failures++;
            continue;
        }
        snprintf(what, sizeof what, "thread %d round %d: %s", job->id, r, file);
        if (!cgt_jit_check(k, "host", (uint64_t)(job->id * 100 + r), what, NULL))
            job->failures++;
        StrBuf asm_text = {0};
        diag_init(&d);
        const char *cross = job->id % 2 ? "aarch64-sve" : "riscv64-v";
        if (!tl_llvm_emit(k, cross, CG_EMIT_ASM, &asm_text, &d) || asm_text.len == 0) {
            diag_flush(&d, stderr);
            fprintf(stderr, "%s: -emit asm for %s failed\n", what, cross);
            job->failures++;
        }
        diag_free(&d);
        sb_free(&asm_text);
        ir_free(k);
    }
    return NULL;
}

int main(void)
{
    void (*pf)(int64_t, void (*)(void *, int64_t, int64_t), void *) = perfc_parallel_for;
    void *addr;
    memcpy(&addr, &pf, sizeof addr);
    cg_llvm_add_symbol("perfc_parallel_for", addr);
    pthread_t th[THREADS];
    Job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (Job){i, 0};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += jobs[i].failures;
    }
    cgt_cleanup();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("%d threads x %d compilations: all correct\n", THREADS, ROUNDS);
    return failures ? 1 : 0;
}
