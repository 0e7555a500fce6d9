/* Compile-only tests of the CUDA back end, run on every machine: each test kernel is
 * turned into CUDA C for every target (sm_80 sm_86 sm_89 sm_90 sm_90a), the text is
 * checked for what a reader and the runtime rely on (loop names kept, one comment
 * per staged buffer, barriers around shared memory, the launch table), NVRTC
 * compiles it when it is present, and ptxas assembles the PTX when the toolkit is
 * installed (its path is argv[1]; "" skips).  Kernels that cannot launch must be
 * refused with the numbers.  Needs no GPU or driver.
 *
 * Usage: test_cuda_compile [PTXAS] [OUTDIR]  (OUTDIR: keep the .cu/.ptx written) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cuda/cg_cuda.h"
#include "kernels.h"
#include "../lowered.h"

static int failures;

#define CHECK(c, ...)                                                        \
    do {                                                                     \
        if (!(c)) {                                                          \
            failures++;                                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

static const char *targets[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};

static bool have_nvrtc;
static const char *ptxas;
static const char *outdir;

static void write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static void compile_all(Kernel *k, const char **must_contain)
{
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        Diags d;
        diag_init(&d);
        CgCudaModule m;
        bool ok = tl_cuda_generate(k, targets[t], &m, &d);
        CHECK(ok, "%s %s: generate failed:\n%s", k->name, targets[t], d.text.s ? d.text.s : "");
        if (!ok) {
            diag_free(&d);
            continue;
        }
        CHECK(m.nlaunches >= 1, "%s: no launches", k->name);
        CHECK(strstr(m.src.s, "Launches, in order") != NULL, "%s: launch table missing", k->name);
        for (int i = 0; must_contain && must_contain[i]; i++)
            CHECK(strstr(m.src.s, must_contain[i]) != NULL, "%s: generated CUDA lacks \"%s\":\n%s", k->name,
                  must_contain[i], m.src.s);
        char path[512];
        if (outdir && t == 3) {
            snprintf(path, sizeof path, "%s/%s.cu", outdir, k->name);
            write_file(path, m.src.s, m.src.len);
        }
        if (have_nvrtc) {
            ok = cg_cuda_compile(&m, targets[t], &d);
            CHECK(ok, "%s %s: NVRTC failed:\n%s\n--- source ---\n%s", k->name, targets[t], d.text.s ? d.text.s : "",
                  m.src.s);
            if (ok) {
                CHECK(m.ptx && strstr(m.ptx, ".entry") != NULL, "%s: PTX has no entry", k->name);
                CHECK(m.cubin_len > 16 && memcmp(m.cubin, "\177ELF", 4) == 0, "%s: cubin is not ELF", k->name);
                for (int i = 0; i < m.nlaunches; i++)
                    CHECK(m.launches[i].regs > 0 && m.launches[i].spill_stores >= 0,
                          "%s %s: ptxas report not read (regs %d)", k->name, m.launches[i].name, m.launches[i].regs);
                if (ptxas && *ptxas) {
                    char dir[] = "/tmp/perfc_ptxXXXXXX";
                    const char *d0 = outdir ? outdir : mkdtemp(dir);
                    snprintf(path, sizeof path, "%s/%s_%s.ptx", d0, k->name, targets[t]);
                    write_file(path, m.ptx, m.ptx_len);
                    char cmd[1400];
                    /* ptxas writes a real file: given /dev/null it replaces the device
                     * node when run as root (seen on the shared development machine) */
                    snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o '%s.cubin'", ptxas, targets[t], path, path);
                    CHECK(system(cmd) == 0, "ptxas rejected %s", path);
                    char cub[1100];
                    snprintf(cub, sizeof cub, "%s.cubin", path);
                    unlink(cub);
                    if (!outdir) {
                        unlink(path);
                        rmdir(d0);
                    }
                }
            }
        }
        cg_cuda_module_free(&m);
        diag_free(&d);
    }
}

static void expect_refusal(Kernel *k, const char *words)
{
    Diags d;
    diag_init(&d);
    CgCudaModule m;
    bool ok = tl_cuda_generate(k, "sm_90", &m, &d);
    CHECK(!ok, "%s: a kernel that cannot launch was accepted", k->name);
    CHECK(d.text.s && strstr(d.text.s, words), "%s: refusal does not give the numbers (\"%s\"): %s", k->name, words,
          d.text.s ? d.text.s : "");
    if (ok) cg_cuda_module_free(&m);
    diag_free(&d);
}

static void test_unscheduled_mapping(void)
{
    /* GEMM: i and j parallel (one thread each), k serial in the thread */
    Kernel *k = kb_gemm(DT_F32, DT_F32, 1, 100, 37, 53);
    const char *g[] = {"i, j: one thread per iteration (3700 in all)", "for (idx_t k = 0; k < K; ++k)",
                       "C[i * N + j] += ", "A[i * K + k]", "constexpr idx_t M = 100;", NULL};
    compile_all(k, g);
    ir_free(k);
    /* softmax: four launches; the reductions keep c serial inside a thread per row */
    k = kb_softmax(7, 300);
    const char *s[] = {"softmax_0", "softmax_3", "r: one thread per iteration (7 in all)",
                       "r, c: one thread per iteration (2100 in all)", "fmaxf(m[r], X[r * C + c])", "expf(", NULL};
    compile_all(k, s);
    ir_free(k);
}

/* Occupancy arithmetic (occupancy.c) on launches described by hand: the flash kernel
 * of 256 threads and 97 KB of shared memory holds two blocks an sm_90a SM by memory,
 * one at 138 registers; 128 registers give the second (a cut under a sixth).  At 255
 * registers the cut to 128 is too deep to ask for; a launch that shared memory
 * already holds to one block asks for nothing. */
static void test_occupancy(void)
{
    const Target *h = target_find("sm_90a"), *a = target_find("sm_80");
    CgLaunch L = {.block = {128, 2, 1}, .shared_bytes = 99392, .static_smem = 1024, .regs = 138};
    CHECK(cg_cuda_blocks_sm(&L, h, 0) == 2, "sm_90a: %d blocks by shared memory, not 2", cg_cuda_blocks_sm(&L, h, 0));
    CHECK(cg_cuda_blocks_sm(&L, h, 138) == 1, "138 registers: %d blocks, not 1", cg_cuda_blocks_sm(&L, h, 138));
    CHECK(cg_cuda_blocks_sm(&L, h, 128) == 2, "128 registers: %d blocks, not 2", cg_cuda_blocks_sm(&L, h, 128));
    CHECK(cg_cuda_min_blocks(&L, h) == 2, "138 registers: asks for %d blocks, not 2", cg_cuda_min_blocks(&L, h));
    L.regs = 122;
    CHECK(cg_cuda_min_blocks(&L, h) == 0, "122 registers already fit two blocks");
    L.regs = 255;
    CHECK(cg_cuda_min_blocks(&L, h) == 0, "255 -> 128 registers is no modest cut");
    L.regs = 200;
    L.shared_bytes = 160 * 1024;
    CHECK(cg_cuda_blocks_sm(&L, h, 0) == 1 && cg_cuda_min_blocks(&L, h) == 0, "one block by shared memory");
    /* sm_80's smaller shared memory: blocks of 128 threads and 40 KB fit four by
     * memory; 150 registers leave three, and 128 (under a sixth less) give four;
     * from 160 the cut is too deep */
    CgLaunch M = {.block = {128, 1, 1}, .shared_bytes = 40 * 1024, .static_smem = 0, .regs = 150};
    CHECK(cg_cuda_blocks_sm(&M, a, 0) == 4, "sm_80: %d blocks by shared memory, not 4", cg_cuda_blocks_sm(&M, a, 0));
    CHECK(cg_cuda_blocks_sm(&M, a, 150) == 3, "sm_80, 150 registers: %d blocks, not 3", cg_cuda_blocks_sm(&M, a, 150));
    CHECK(cg_cuda_min_blocks(&M, a) == 4, "sm_80, 150 registers: asks for %d blocks, not 4", cg_cuda_min_blocks(&M, a));
    M.regs = 160;
    CHECK(cg_cuda_min_blocks(&M, a) == 0, "sm_80, 160 registers: asks for %d blocks, not none", cg_cuda_min_blocks(&M, a));
}

int main(int argc, char **argv)
{
    ptxas = argc > 1 ? argv[1] : NULL;
    outdir = argc > 2 ? argv[2] : NULL;
    char why[512];
    have_nvrtc = cg_nvrtc_available(why, sizeof why);
    if (!have_nvrtc)
        printf("note: %s; checking the generated CUDA C only\n", why);
    if (ptxas && *ptxas && access(ptxas, X_OK) != 0)
        ptxas = NULL;
    if (!ptxas || !*ptxas)
        printf("note: no ptxas; PTX is not assembled separately\n");

    test_unscheduled_mapping();
    test_occupancy();

    Kernel *k = kb_gemm(DT_F16, DT_F32, 1, 64, 48, 40);
    const char *h[] = {"const pf_half *__restrict__ A", "pf_h2f(A[i * K + k])", NULL};
    compile_all(k, h);
    ir_free(k);
    k = kb_gemm(DT_BF16, DT_BF16, 1, 33, 17, 9);
    const char *bf[] = {"pf_b2f(", "pf_f2b(", NULL};
    compile_all(k, bf);
    ir_free(k);
    k = kb_gemm(DT_F32, DT_F32, 3, 20, 30, 10);
    const char *bg[] = {"b, i, j: one thread per iteration (1800 in all)", "C[(b * M + i) * N + j]", NULL};
    compile_all(k, bg);
    ir_free(k);
    k = kb_conv(19, 23);
    const char *cv[] = {"pf_pickf(pf_in(", "pf_clamp(", ", 0.0f)", NULL};
    compile_all(k, cv);
    ir_free(k);
    k = kb_eltwise(1000);
    const char *el[] = {"pf_fdiv(", "pf_fmod(", "tanhf(", "erff(", "rsqrtf(", "pf_f2h(", "pf_f2b(", NULL};
    compile_all(k, el);
    ir_free(k);
    k = kb_tiled_gemm(130, 70, 45);
    const char *tg[] = {"blockIdx.y", "threadIdx.x", "__syncthreads();", "#pragma unroll",
                        "/* As: f32[64][17] staged in shared memory", "/* acc: f32[4][4], per-thread",
                        "float (*As)[17] = reinterpret_cast<float (*)[17]>(pf_smem + 0);", NULL};
    compile_all(k, tg);
    ir_free(k);

    /* a prefetch (a CPU schedule's hint) is a comment on the GPU; the mapping and
     * every walk of the emitter pass over it */
    k = kb_softmax(7, 300);
    {
        Node *l = k->body.v[1], *lc = l->u.loop.body.v[0];
        Expr *idx[2] = {ir_bin(k, IE_ADD, ir_var(k, l->u.loop.var), ir_int(k, 1)), ir_var(k, lc->u.loop.var)};
        int64_t ext[2] = {1, 16};
        ir_list_insert(&lc->u.loop.body, 0, ir_prefetch(k, k->bufs[0], idx, ext, (Span){0}), lc);
    }
    const char *pf[] = {"/* prefetch X: a CPU hint, no code here */", "expf(", NULL};
    compile_all(k, pf);
    ir_free(k);

    k = kb_too_much_shared();
    expect_refusal(k, "307200 bytes of shared memory; sm_90 allows at most 232448");
    ir_free(k);
    k = kb_too_many_threads();
    expect_refusal(k, "2048 threads per block; sm_90 allows at most 1024");
    ir_free(k);
    /* loop bindings the back end cannot translate, refused by pass gpu-map at the loop */
    k = kb_tiled_gemm(64, 64, 16);
    k->body.v[0]->u.loop.kind = LOOP_BLOCK_X;
    expect_refusal(k, "are bound to block.x");
    ir_free(k);
    k = kb_tiled_gemm(64, 64, 16);
    k->body.v[0]->u.loop.body.v[0]->u.loop.body.v[0]->u.loop.kind = LOOP_THREAD_X;
    expect_refusal(k, "is bound to thread.x inside another loop bound to it");
    ir_free(k);

    /* an unknown target and an unbound size are user errors, not crashes */
    k = kb_gemm(DT_F32, DT_F32, 1, 8, 8, 8);
    Diags d;
    diag_init(&d);
    CgCudaModule m;
    CHECK(!tl_cuda_generate(k, "sm_70", &m, &d) && strstr(d.text.s, "sm_80 sm_86"), "sm_70 accepted");
    k->params[0].bound = false;
    CHECK(!tl_cuda_generate(k, "sm_80", &m, &d) && strstr(d.text.s, "-D M=VALUE"), "unbound M accepted");
    diag_free(&d);
    ir_free(k);

    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("cuda compile tests passed (%s)\n", have_nvrtc ? (ptxas ? "NVRTC and ptxas" : "NVRTC") : "source only");
    return 0;
}
