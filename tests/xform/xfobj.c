/* Implementation of xfobj.h: the JIT and emitted objects against the interpreter.
 *
 * The runner is C generated per batch: each case's inputs as byte arrays, its
 * buffers allocated as the harness allocates them (CG_BUF_ALIGN-aligned; outputs
 * and global temporaries filled with all-ones bytes, NaN in every float format),
 * one call, and the outputs printed in hex.  Each case runs in a child process with
 * an alarm, so a crash or a hang fails that case and not the batch. */
#include "xfobj.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/llvm/cg_llvm.h"
#include "runtime/pool.h"
#include "runtime/runtime.h"
#include "../lowered.h"

const XoTarget xo_targets[] = {
    {"host", "host", "cc", NULL, NULL},
    {"aarch64", "aarch64", "aarch64-linux-gnu-gcc", "qemu-aarch64", "max,sve=off"},
    {"aarch64-sve (256-bit)", "aarch64-sve", "aarch64-linux-gnu-gcc", "qemu-aarch64", "max,sve-default-vector-length=32"},
    {"riscv64", "riscv64", "riscv64-linux-gnu-gcc", "qemu-riscv64", "rv64"},
    {"riscv64-v (VLEN 128)", "riscv64-v", "riscv64-linux-gnu-gcc", "qemu-riscv64", "rv64,v=true,vext_spec=v1.0,vlen=128"},
};
const int xo_ntargets = sizeof xo_targets / sizeof xo_targets[0];

static bool have(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

bool xo_available(int t)
{
    static int known[16]; /* 0 unknown, 1 yes, 2 no */
    if (!known[t])
        known[t] = have(xo_targets[t].cc) && (!xo_targets[t].qemu || have(xo_targets[t].qemu)) ? 1 : 2;
    return known[t] == 1;
}

/* The buffer of ref that k's buffer b stands for (inputs and outputs keep their
 * names through every transformation); -1 for k's own temporaries. */
static int ref_index(const Kernel *ref, const Buffer *b)
{
    if (b->kind == BUF_TEMP)
        return -1;
    for (int i = 0; i < ref->nbufs; i++)
        if (!strcmp(ref->bufs[i]->name, b->name))
            return i;
    return -1;
}

XoCase *xo_case_new(Kernel *k, const Kernel *ref, uint64_t seed, int id, char *why, size_t cap)
{
    double **rb = ir_alloc_buffers(ref, seed);
    if (!rb) {
        snprintf(why, cap, "cannot allocate the reference's buffers");
        ir_free(k);
        return NULL;
    }
    XoCase *c = calloc(1, sizeof *c);
    c->k = k;
    c->ref = ref;
    c->in = calloc((size_t)k->nbufs + 1, sizeof *c->in);
    c->bytes = calloc((size_t)k->nbufs + 1, sizeof *c->bytes);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        int64_t n = ir_buffer_elems(k, b);
        c->bytes[i] = (size_t)n * (size_t)dtype_bytes(b->dtype);
        int r = ref_index(ref, b);
        if (b->kind == BUF_IN && r >= 0) {
            c->in[i] = calloc(1, c->bytes[i] + 1);
            rt_to_native(b->dtype, rb[r], c->in[i], n);
        }
    }
    Diags d;
    diag_init(&d);
    bool ok = ir_interp(ref, rb, &d);
    if (!ok)
        snprintf(why, cap, "the reference run failed: %s", d.text.s ? d.text.s : "");
    diag_free(&d);
    if (ok) {
        for (int i = 0; i < ref->nbufs; i++)
            if (ref->bufs[i]->kind == BUF_OUT)
                c->nout += ir_buffer_elems(ref, ref->bufs[i]);
        c->want = malloc(sizeof(double) * (size_t)(c->nout + 1));
        int64_t at = 0;
        for (int i = 0; i < ref->nbufs; i++)
            if (ref->bufs[i]->kind == BUF_OUT) {
                int64_t n = ir_buffer_elems(ref, ref->bufs[i]);
                memcpy(c->want + at, rb[i], sizeof(double) * (size_t)n);
                at += n;
            }
        RtWork w;
        Diags d2;
        diag_init(&d2);
        DType t = rt_tolerance_dtype(ref);
        int64_t len = rt_analyse(ref, &w, &d2) ? w.reduce_len : 1;
        diag_free(&d2);
        c->tol = rt_tolerance(t, len);
        snprintf(c->tol_why, sizeof c->tol_why, "%s, reduction length %lld", dtype_name(t), (long long)len);
        char sym[64];
        snprintf(sym, sizeof sym, "xo_case%d", id);
        k->name = arena_strdup(k->arena, sym);
    }
    ir_free_buffers(ref, rb);
    if (!ok) {
        xo_case_free(c);
        return NULL;
    }
    return c;
}

void xo_case_free(XoCase *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->k->nbufs; i++)
        free(c->in[i]);
    free(c->in);
    free(c->bytes);
    free(c->want);
    free(c->base);
    ir_free(c->k);
    free(c);
}

/* The interpreter's values of output buffer r of ref (its index). */
static const double *want_of(const XoCase *c, int r)
{
    int64_t at = 0;
    for (int i = 0; i < r; i++)
        if (c->ref->bufs[i]->kind == BUF_OUT)
            at += ir_buffer_elems(c->ref, c->ref->bufs[i]);
    return c->want + at;
}

/* The relative error of n values of output buffer r of ref against the interpreter
 * (the Frobenius norm of the difference over that of the answer), the interpreter's
 * own non-finite values left out; *worst_at the element furthest off. */
static double rel_error(const XoCase *c, int r, const double *got, int64_t n, int64_t *worst_at)
{
    const double *want = want_of(c, r);
    double num = 0, den = 0, worst = -1;
    *worst_at = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(want[j]))
            continue;
        double diff = got[j] - want[j];
        num += diff * diff;
        den += want[j] * want[j];
        if (fabs(diff) > worst) {
            worst = fabs(diff);
            *worst_at = j;
        }
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Runs JIT-compiled kernel j of k (c->k or the reference) on the case's inputs, which
 * the buffers of k find by name; the other buffers filled with NaN patterns.  The
 * buffers, to read the outputs from and free with free_bufs. */
static void **run_jit(const XoCase *c, const Kernel *k, JitKernel *j)
{
    void **mem = calloc((size_t)k->nbufs + 1, sizeof *mem);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind == BUF_TEMP && b->mem == MEM_LOCAL)
            continue;
        size_t n = (size_t)ir_buffer_elems(k, b) * (size_t)dtype_bytes(b->dtype);
        size_t bytes = (n + CG_BUF_ALIGN) / CG_BUF_ALIGN * CG_BUF_ALIGN;
        mem[i] = aligned_alloc(CG_BUF_ALIGN, bytes);
        memset(mem[i], 0xff, bytes);
        for (int kb = 0; kb < c->k->nbufs; kb++)
            if (c->in[kb] && !strcmp(c->k->bufs[kb]->name, b->name))
                memcpy(mem[i], c->in[kb], n);
    }
    cg_jit_run(j, mem);
    return mem;
}

static void free_bufs(const Kernel *k, void **mem)
{
    for (int i = 0; i < k->nbufs; i++)
        free(mem[i]);
    free(mem);
}

/* The error of the unscheduled kernel itself, JIT-compiled, on the case's inputs,
 * for output buffer r of ref.  A sum whose terms cancel (a 13-term dot product
 * ending near 0.005 from terms near 1, then a relu) can miss the tolerance as
 * written, before any move; a move is judged against that, not against the
 * tolerance alone. */
static double baseline_error(XoCase *c, int r)
{
    const Kernel *ref = c->ref;
    if (!c->base) {
        c->base = malloc(sizeof(double) * (size_t)(ref->nbufs + 1));
        for (int i = 0; i < ref->nbufs; i++)
            c->base[i] = -1;
    }
    if (c->base[r] >= 0)
        return c->base[r];
    c->base[r] = INFINITY;
    Kernel *rk = ir_clone_kernel(ref);
    static int serial; /* a symbol of its own, as each case's */
    char sym[64];
    snprintf(sym, sizeof sym, "xo_baseline%d", serial++);
    rk->name = arena_strdup(rk->arena, sym);
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(rk, "host", &d);
    diag_free(&d);
    if (!j) {
        ir_free(rk);
        return c->base[r];
    }
    void **mem = run_jit(c, rk, j);
    for (int i = 0; i < rk->nbufs; i++)
        if (rk->bufs[i]->kind == BUF_OUT) {
            int64_t n = ir_buffer_elems(rk, rk->bufs[i]), at;
            double *got = malloc(sizeof(double) * (size_t)(n + 1));
            rt_from_native(rk->bufs[i]->dtype, mem[i], got, n);
            c->base[i] = rel_error(c, i, got, n, &at);
            free(got);
        }
    free_bufs(rk, mem);
    cg_jit_free(j);
    ir_free(rk);
    return c->base[r];
}

/* Compares output buffer `ob` of the case (k's buffer index) given as doubles with
 * the interpreter's; appends to why and returns false on a mismatch: an error over
 * the tolerance and over twice the unscheduled kernel's own (baseline_error). */
static bool check_output(XoCase *c, int ob, const double *got, const char *where)
{
    /* the first failure of a case is the one reported */
    char scratch[sizeof c->why];
    char *why = c->failed ? scratch : c->why;
    const Kernel *k = c->k;
    const Buffer *b = k->bufs[ob];
    int r = ref_index(c->ref, b);
    const double *want = want_of(c, r);
    int64_t n = ir_buffer_elems(k, b), worst_at;
    for (int64_t j = 0; j < n; j++)
        if (isfinite(want[j]) && !isfinite(got[j])) { /* the interpreter's own non-finite values are left out */
            snprintf(why, sizeof c->why, "%s: %s[%lld] is %g, expected %.9g (not written, or not finite)", where,
                     b->name, (long long)j, got[j], want[j]);
            return false;
        }
    double e = rel_error(c, r, got, n, &worst_at);
    if (!(e <= c->tol) && isfinite(e) && e <= 2 * baseline_error(c, r))
        return true; /* no worse than the kernel as written */
    if (!(e <= c->tol)) {
        snprintf(why, sizeof c->why, "%s: %s relative error %.3g > tolerance %.3g (%s); worst %s[%lld] = %.9g, expected %.9g",
                 where, b->name, e, c->tol, c->tol_why, b->name, (long long)worst_at, got[worst_at], want[worst_at]);
        return false;
    }
    return true;
}

bool xo_jit(XoCase *c)
{
    static bool registered;
    if (!registered) {
        cg_llvm_add_symbol("perfc_parallel_for", (void *)perfc_parallel_for);
        registered = true;
    }
    Kernel *k = c->k;
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(k, "host", &d);
    if (!j) {
        snprintf(c->why, sizeof c->why, "JIT failed: %s", d.text.s ? d.text.s : "");
        diag_free(&d);
        c->failed |= 1u << 31;
        return false;
    }
    diag_free(&d);
    void **mem = run_jit(c, k, j);
    bool ok = true;
    for (int i = 0; i < k->nbufs && ok; i++)
        if (k->bufs[i]->kind == BUF_OUT) {
            int64_t n = ir_buffer_elems(k, k->bufs[i]);
            double *got = malloc(sizeof(double) * (size_t)(n + 1));
            rt_from_native(k->bufs[i]->dtype, mem[i], got, n);
            ok = check_output(c, i, got, "JIT (host)");
            free(got);
        }
    free_bufs(k, mem);
    cg_jit_free(j);
    if (!ok)
        c->failed |= 1u << 31;
    return ok;
}

/* ---- objects ---- */

static bool write_runner(const char *path, XoCase **cases, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fprintf(f, "/* generated by the transformation property test */\n"
               "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
               "#include <sys/wait.h>\n#include <unistd.h>\n\n"
               "static void dump(int c, int b, const unsigned char *p, size_t n)\n{\n"
               "    printf(\"%%d %%d \", c, b);\n    for (size_t i = 0; i < n; i++)\n"
               "        printf(\"%%02x\", p[i]);\n    printf(\"\\n\");\n}\n\n"
               "static void *buf(size_t n)\n{\n    void *p = aligned_alloc(%d, (n + %d) / %d * %d);\n"
               "    if (!p) abort();\n    memset(p, 0xff, (n + %d) / %d * %d);\n    return p;\n}\n\n",
            CG_BUF_ALIGN, CG_BUF_ALIGN, CG_BUF_ALIGN, CG_BUF_ALIGN, CG_BUF_ALIGN, CG_BUF_ALIGN, CG_BUF_ALIGN);
    for (int i = 0; i < n; i++) {
        const Kernel *k = cases[i]->k;
        fprintf(f, "extern void %s(void **bufs);\n", k->name);
        for (int b = 0; b < k->nbufs; b++) {
            if (!cases[i]->in[b])
                continue;
            const unsigned char *p = cases[i]->in[b];
            size_t nb = cases[i]->bytes[b];
            fprintf(f, "static const unsigned char in%d_%d[%zu] = {", i, b, nb ? nb : 1);
            for (size_t e = 0; e < nb; e++)
                fprintf(f, "%s%u", e == 0 ? "" : e % 40 ? "," : ",\n", p[e]);
            fprintf(f, "%s};\n", nb ? "" : "0");
        }
        fprintf(f, "static void run%d(void)\n{\n    void *b[%d] = {0};\n", i, k->nbufs + 1);
        for (int b = 0; b < k->nbufs; b++) {
            const Buffer *bb = k->bufs[b];
            if (bb->kind == BUF_TEMP && bb->mem == MEM_LOCAL)
                continue;
            fprintf(f, "    b[%d] = buf(%zu);\n", b, cases[i]->bytes[b]);
            if (cases[i]->in[b])
                fprintf(f, "    memcpy(b[%d], in%d_%d, %zu);\n", b, i, b, cases[i]->bytes[b]);
        }
        fprintf(f, "    %s(b);\n", k->name);
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b]->kind == BUF_OUT)
                fprintf(f, "    dump(%d, %d, b[%d], %zu);\n", i, b, b, cases[i]->bytes[b]);
        fprintf(f, "}\n\n");
    }
    fprintf(f, "static void (*const runs[])(void) = {");
    for (int i = 0; i < n; i++)
        fprintf(f, "%srun%d", i ? ", " : "", i);
    fprintf(f, "};\n\n"
               "int main(void)\n{\n"
               "    for (int i = 0; i < %d; i++) {\n"
               "        fflush(stdout);\n"
               "        pid_t p = fork();\n"
               "        if (p == 0) {\n"
               "            alarm(60);\n"
               "            runs[i]();\n"
               "            fflush(stdout);\n"
               "            _exit(0);\n"
               "        }\n"
               "        int st = 0;\n"
               "        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)\n"
               "            printf(\"%%d crashed %%d\\n\", i, WIFSIGNALED(st) ? WTERMSIG(st) : -1);\n"
               "    }\n"
               "    return 0;\n}\n",
            n);
    return fclose(f) == 0;
}

static int hexval(int ch) { return ch >= 'a' ? ch - 'a' + 10 : ch - '0'; }

static void fail_case(XoCase *c, int t, const char *fmt, const char *arg)
{
    if (!c->failed) {
        char msg[1100];
        snprintf(msg, sizeof msg, fmt, arg);
        snprintf(c->why, sizeof c->why, "object for %s: %s", xo_targets[t].name, msg);
    }
    c->failed |= 1u << t;
}

int xo_run_objects(int t, XoCase **cases, int n, const char *dir)
{
    const XoTarget *tg = &xo_targets[t];
    StrBuf objs = {0};
    bool *emitted = calloc((size_t)n + 1, sizeof *emitted);
    int nemitted = 0;
    XoCase **ok = calloc((size_t)n + 1, sizeof *ok);
    for (int i = 0; i < n; i++) {
        StrBuf o = {0};
        Diags d;
        diag_init(&d);
        bool e = tl_llvm_emit(cases[i]->k, tg->target, CG_EMIT_OBJ, &o, &d);
        if (!e) {
            fail_case(cases[i], t, "-emit obj failed: %s", d.text.s ? d.text.s : "");
        } else {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s-%d.o", dir, cases[i]->k->name, t);
            FILE *f = fopen(path, "wb");
            if (f && fwrite(o.s, 1, o.len, f) == o.len && fclose(f) == 0) {
                sb_printf(&objs, " %s", path);
                emitted[i] = true;
                ok[nemitted++] = cases[i];
            } else {
                if (f)
                    fclose(f);
                fail_case(cases[i], t, "cannot write %s", path);
            }
        }
        diag_free(&d);
        sb_free(&o);
    }
    char src[1024], exe[1024];
    snprintf(src, sizeof src, "%s/runner-%d.c", dir, t);
    snprintf(exe, sizeof exe, "%s/runner-%d", dir, t);
    if (nemitted && write_runner(src, ok, nemitted)) {
        StrBuf cmd = {0};
        sb_printf(&cmd, "%s -std=gnu11 -O1 %s -o %s %s%s %s/runtime/pool.c -lm -lpthread", tg->cc,
                  tg->qemu ? "-static" : "", exe, src, objs.s, PERFC_SOURCE_DIR);
        int st = system(cmd.s);
        sb_free(&cmd);
        if (st != 0) {
            for (int i = 0; i < nemitted; i++)
                fail_case(ok[i], t, "the runner did not link (%s)", src);
        } else {
            StrBuf run = {0};
            if (tg->qemu)
                sb_printf(&run, "%s -cpu %s %s", tg->qemu, tg->cpu, exe);
            else
                sb_printf(&run, "%s", exe);
            FILE *p = popen(run.s, "r");
            bool *seen = calloc((size_t)nemitted + 1, sizeof *seen);
            size_t cap = 1 << 16, len;
            char *line = malloc(cap);
            int ch = 0;
            while (p && ch != EOF) {
                len = 0;
                while ((ch = fgetc(p)) != EOF && ch != '\n') {
                    if (len + 1 >= cap)
                        line = realloc(line, cap *= 2);
                    line[len++] = (char)ch;
                }
                line[len] = 0;
                int ci, b, off, sig;
                if (sscanf(line, "%d crashed %d", &ci, &sig) == 2 && ci >= 0 && ci < nemitted) {
                    char s[32];
                    snprintf(s, sizeof s, "%d", sig);
                    fail_case(ok[ci], t, "the kernel crashed or hung (signal %s)", s);
                    seen[ci] = true;
                    continue;
                }
                if (sscanf(line, "%d %d %n", &ci, &b, &off) != 2 || ci < 0 || ci >= nemitted)
                    continue;
                XoCase *c = ok[ci];
                if (b < 0 || b >= c->k->nbufs || c->k->bufs[b]->kind != BUF_OUT)
                    continue;
                seen[ci] = true;
                if (strlen(line + off) != 2 * c->bytes[b]) {
                    fail_case(c, t, "output %s truncated", c->k->bufs[b]->name);
                    continue;
                }
                int64_t elems = ir_buffer_elems(c->k, c->k->bufs[b]);
                unsigned char *raw = malloc(c->bytes[b] + 1);
                for (size_t e = 0; e < c->bytes[b]; e++)
                    raw[e] = (unsigned char)(hexval(line[off + 2 * e]) << 4 | hexval(line[off + 2 * e + 1]));
                double *got = malloc(sizeof(double) * (size_t)(elems + 1));
                rt_from_native(c->k->bufs[b]->dtype, raw, got, elems);
                char where[128];
                snprintf(where, sizeof where, "object for %s", tg->name);
                if (!(c->failed & (1u << t)) && !check_output(c, b, got, where))
                    c->failed |= 1u << t;
                free(got);
                free(raw);
            }
            int pst = p ? pclose(p) : -1;
            for (int i = 0; i < nemitted; i++)
                if (!seen[i])
                    fail_case(ok[i], t, "no output (runner status %s)", pst == 0 ? "0" : "nonzero");
            free(seen);
            free(line);
            sb_free(&run);
        }
    }
    int nfail = 0;
    for (int i = 0; i < n; i++)
        nfail += (cases[i]->failed >> t) & 1;
    /* Keep the files of a failing batch for a look; remove the rest. */
    if (!nfail) {
        for (int i = 0; i < n; i++)
            if (emitted[i]) {
                char path[1024];
                snprintf(path, sizeof path, "%s/%s-%d.o", dir, cases[i]->k->name, t);
                remove(path);
            }
        remove(src);
        remove(exe);
    }
    free(emitted);
    free(ok);
    sb_free(&objs);
    return nfail;
}
