/* What the back end emits for each CPU target, checked in the text and the bytes:
 * a GEMM whose j loop is a 16-lane vector loop must use zmm registers on
 * x86_64-avx512, ymm on x86_64-avx2, SVE z registers on aarch64-sve, vle32.v on
 * riscv64-v, NEON on aarch64; FMA instructions where the target has them and none on
 * baseline x86-64; objects must be ELF for the right machine, RISC-V ones with the
 * double-float ABI flag (lp64d); the LLVM text must carry noalias, the target CPU
 * and SVE's vscale_range; a parallel loop must call perfc_parallel_for; a prefetch
 * becomes prefetcht0 / prefetchw once per cache line, not per vector lane. */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "cg_test.h"
#include "../lowered.h"

static Kernel *vec_gemm(bool par)
{
    const int64_t M = 8, N = 64, K = 32, W = 16;
    Kernel *k = ir_kernel_new("vgemm", (Span){0});
    Buffer *A = cgt_buf(k, "A", DT_F32, BUF_IN, M, K), *B = cgt_buf(k, "B", DT_F32, BUF_IN, K, N);
    Buffer *C = cgt_buf(k, "C", DT_F32, BUF_OUT, M, N);
    Var *i = ir_new_var(k, "i"), *jo = ir_new_var(k, "jo"), *ji = ir_new_var(k, "ji"), *kk = ir_new_var(k, "k");
    Node *li = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, M), par ? LOOP_PARALLEL : LOOP_SERIAL);
    Node *ljo = cgt_loop(k, li, jo, cgt_i(k, 0), cgt_i(k, N / W), LOOP_SERIAL);
    Node *lji = cgt_loop(k, ljo, ji, cgt_i(k, 0), cgt_i(k, W), LOOP_VECTOR);
    Expr *j = cgt_add(k, cgt_mul(k, cgt_v(k, jo), cgt_i(k, W)), cgt_v(k, ji));
    cgt_push(k, lji, cgt_st(k, C, cgt_v(k, i), j, SOP_ASSIGN, ir_flt(k, 0, DT_F32)));
    Node *lk = cgt_loop(k, lji, kk, cgt_i(k, 0), cgt_i(k, K), LOOP_SERIAL);
    Expr *prod = ir_bin(k, IE_MUL, cgt_ld(k, A, cgt_v(k, i), cgt_v(k, kk)), cgt_ld(k, B, cgt_v(k, kk), j));
    cgt_push(k, lk, cgt_st(k, C, cgt_v(k, i), j, SOP_ADD, prod));
    return k;
}

/* Y[r, c] = X[r, c] * 2 in rows of 64, 16-lane vectors, with prefetches (schedule
 * `prefetch`): the next row of X at the head of each vector block (`at_vector`:
 * inside the vector loop instead, one element per lane), and Y's block of this
 * row for writing. */
static Kernel *pf_kernel(bool at_vector)
{
    const int64_t R = 8, C = 1024, W = 16;
    Kernel *k = ir_kernel_new("pfk", (Span){0});
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, R, C), *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, R, C);
    Var *r = ir_new_var(k, "r"), *co = ir_new_var(k, "co"), *ci = ir_new_var(k, "ci");
    Node *lr = cgt_loop(k, NULL, r, cgt_i(k, 0), cgt_i(k, R), LOOP_SERIAL);
    Node *lco = cgt_loop(k, lr, co, cgt_i(k, 0), cgt_i(k, C / W), LOOP_SERIAL);
    Expr *c0 = cgt_mul(k, cgt_v(k, co), cgt_i(k, W));
    Expr *xi[2] = {cgt_add(k, cgt_v(k, r), cgt_i(k, 1)), ir_clone_expr(k, c0)};
    Expr *yi[2] = {cgt_v(k, r), ir_clone_expr(k, c0)};
    int64_t box[2] = {1, W}, one[2] = {1, 1};
    Node *ly = ir_prefetch(k, Y, yi, box, (Span){0});
    ly->u.pf.write = true;
    Node *lci = NULL;
    if (at_vector) {
        lci = cgt_loop(k, lco, ci, cgt_i(k, 0), cgt_i(k, W), LOOP_VECTOR);
        xi[1] = cgt_add(k, ir_clone_expr(k, c0), cgt_v(k, ci));
        cgt_push(k, lci, ir_prefetch(k, X, xi, one, (Span){0}));
    } else {
        cgt_push(k, lco, ir_prefetch(k, X, xi, box, (Span){0}));
        cgt_push(k, lco, ly);
        lci = cgt_loop(k, lco, ci, cgt_i(k, 0), cgt_i(k, W), LOOP_VECTOR);
    }
    Expr *c = cgt_add(k, c0, cgt_v(k, ci));
    Expr *v = ir_bin(k, IE_MUL, cgt_ld(k, X, cgt_v(k, r), ir_clone_expr(k, c)), ir_flt(k, 2, DT_F32));
    cgt_push(k, lci, cgt_st(k, Y, cgt_v(k, r), c, SOP_ASSIGN, v));
    return k;
}

static int count(const char *text, const char *word)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
        n++;
    return n;
}

static bool matches(const char *text, const char *pattern)
{
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB | REG_NEWLINE) != 0)
        die("bad regex %s", pattern);
    bool m = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

static bool emit(const Kernel *k, const char *target, CgEmitKind kind, StrBuf *out)
{
    Diags d;
    diag_init(&d);
    bool ok = tl_llvm_emit(k, target, kind, out, &d);
    diag_flush(&d, stderr);
    CHECK(ok && d.nwarnings == 0, "-emit %d for %s", (int)kind, target);
    diag_free(&d);
    return ok;
}

static const struct {
    const char *target;
    const char *want;     /* must occur in the assembly */
    const char *fma;      /* FMA instruction, or NULL: must have none ("vfmadd") */
    int machine;          /* ELF e_machine */
} cases[] = {
    {"x86_64", "mulps\t[^\n]*xmm", NULL, 62},
    {"x86_64-avx2", "vmovups[^\n]*ymm|vfmadd[0-9a-z]*\t[^\n]*ymm", "vfmadd", 62},
    {"x86_64-avx512", "vfmadd[0-9a-z]*\t[^\n]*zmm", "vfmadd", 62},
    {"aarch64", "fmla\tv[0-9]+\\.4s", "fmla", 183},
    {"aarch64-sve", "z[0-9]+\\.s", "fmla|fmad", 183},
    {"riscv64", "fmadd\\.s", "fmadd", 243},
    {"riscv64-v", "vle32\\.v", "vfmacc|vfmadd", 243},
};

int main(void)
{
    Kernel *k = vec_gemm(false);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *t = cases[c].target;
        StrBuf s = {0};
        if (emit(k, t, CG_EMIT_ASM, &s)) {
            CHECK(matches(s.s, cases[c].want), "%s: no /%s/ in the assembly", t, cases[c].want);
            if (cases[c].fma)
                CHECK(matches(s.s, cases[c].fma), "%s: no FMA (/%s/) in the assembly", t, cases[c].fma);
            else
                CHECK(!matches(s.s, "vfmadd|fma"), "%s: FMA on a target without it", t);
        }
        sb_free(&s);
        StrBuf o = {0};
        if (emit(k, t, CG_EMIT_OBJ, &o)) {
            const unsigned char *b = (const unsigned char *)o.s;
            CHECK(o.len > 64 && !memcmp(b, "\177ELF", 4) && b[4] == 2 /* 64-bit */, "%s: not an ELF64 object", t);
            int machine = o.len > 20 ? b[18] | b[19] << 8 : -1;
            CHECK(machine == cases[c].machine, "%s: e_machine %d, expected %d", t, machine, cases[c].machine);
            if (cases[c].machine == 243) {
                unsigned flags = o.len > 52 ? (unsigned)(b[48] | b[49] << 8 | b[50] << 16 | (unsigned)b[51] << 24) : 0;
                CHECK((flags & 0x6) == 0x4, "%s: e_flags %#x: not the double-float ABI (lp64d)", t, flags);
            }
        }
        sb_free(&o);
    }

    StrBuf ll = {0};
    if (emit(k, "aarch64-sve", CG_EMIT_LLVM, &ll)) {
        CHECK(matches(ll.s, "vscale_range\\(2,16\\)"), "aarch64-sve: no vscale_range in the LLVM IR");
        CHECK(matches(ll.s, "\\+sve"), "aarch64-sve: no +sve feature in the LLVM IR");
        CHECK(matches(ll.s, "define void @vgemm\\(ptr"), "the entry point is not `void vgemm(ptr)`");
        CHECK(matches(ll.s, "noalias"), "no noalias facts survive in the optimised IR");
    }
    sb_free(&ll);
    ll = (StrBuf){0};
    if (emit(k, "riscv64-v", CG_EMIT_LLVM, &ll))
        CHECK(matches(ll.s, "\"target-abi\", !\"lp64d\""), "riscv64-v: no target-abi module flag");
    sb_free(&ll);
    ir_free(k);

    k = vec_gemm(true);
    StrBuf s = {0};
    if (emit(k, "x86_64-avx2", CG_EMIT_ASM, &s))
        CHECK(matches(s.s, "perfc_parallel_for"), "a parallel loop does not call perfc_parallel_for");
    sb_free(&s);
    ir_free(k);

    /* Prefetches: one per 64-byte line of the box, not one per lane; read and write
     * kinds; every target compiles them (AArch64 prfm, RISC-V drops them). */
    for (int at_vector = 0; at_vector < 2; at_vector++) {
        k = pf_kernel(at_vector);
        s = (StrBuf){0};
        if (emit(k, "x86_64-avx2", CG_EMIT_ASM, &s)) {
            int rd = count(s.s, "prefetcht0"), wr = count(s.s, "prefetchw"), st = count(s.s, "vmovups\t%ymm");
            CHECK(rd >= 1, "prefetch%s: no prefetcht0 in the assembly", at_vector ? " in a vector loop" : "");
            /* a 16-lane f32 block is one line and two ymm stores: per-lane prefetching
             * would give 8 prefetches per store */
            CHECK(rd <= st, "prefetch%s: %d prefetcht0 for %d vector stores (one per lane?)",
                  at_vector ? " in a vector loop" : "", rd, st);
            (void)wr; /* Haswell has no PREFETCHW (Broadwell added it) */
        }
        sb_free(&s);
        s = (StrBuf){0};
        if (!at_vector && emit(k, "x86_64-avx512", CG_EMIT_ASM, &s))
            CHECK(count(s.s, "prefetchw") >= 1, "prefetch for write: no prefetchw on x86_64-avx512");
        sb_free(&s);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            s = (StrBuf){0};
            emit(k, cases[c].target, CG_EMIT_ASM, &s);
            sb_free(&s);
        }
        ir_free(k);
    }

    if (cgt_failures)
        fprintf(stderr, "%d failure(s)\n", cgt_failures);
    else
        printf("assembly and objects for all CPU targets as expected\n");
    return cgt_failures ? 1 : 0;
}
