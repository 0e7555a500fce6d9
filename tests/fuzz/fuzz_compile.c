/* libFuzzer target for the whole compile path short of LLVM: parse, check, bind
 * sizes, lower, schedule (the file's blocks, a -s text, and moves the fuzzer picks
 * among the transformation candidates), then print the IR and emit CUDA C.  LLVM is
 * left out on purpose: building and optimising one module takes milliseconds, which
 * would cut the executions per second a hundredfold; the CUDA emitter and the IR
 * verifier are what take user names and shapes to generated text.
 *
 * Input layout: byte 0 chooses the target (sm_80 or sm_90a), byte 1 the kernel of
 * the file, byte 2 how many extra moves (0-3) and bytes 3-5 which candidates; then
 * the PDL text, optionally followed by a line `%%` and a schedule text applied like
 * -s.  Checked on every input besides the sanitizers: every transformation that
 * reports success leaves IR that verifies, and the generated CUDA is printable ASCII
 * whose only preprocessor lines are perfc's own `#pragma unroll` (no user text can
 * start a directive).  Built and run by scripts/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cg_cuda.h"
#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "../lowered.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { CTL = 6 };

static void check_cuda(const char *src)
{
    const char *line = src;
    for (const char *p = src;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == 0 || c == '\n') {
            const char *q = line;
            while (q < p && *q == ' ')
                q++;
            if (q < p && *q == '#' && strncmp(q, "#pragma unroll", 14) != 0) {
                fprintf(stderr, "fuzz_compile: a preprocessor line in the generated CUDA: %.*s\n", (int)(p - q), q);
                abort();
            }
            if (c == 0)
                return;
            line = p + 1;
        } else if (c < 0x20 || c > 0x7e) {
            fprintf(stderr, "fuzz_compile: byte 0x%02x in the generated CUDA\n", c);
            abort();
        }
    }
}

static void verify_or_die(const Kernel *k, const char *after)
{
    Diags d;
    diag_init(&d);
    if (!ir_verify(k, &d)) {
        fprintf(stderr, "fuzz_compile: invalid IR after %s:\n%s", after, d.text.s ? d.text.s : "");
        abort();
    }
    diag_free(&d);
}

static void compile_kernel(Program *p, AstKernel *ak, const uint8_t *ctl, const char *sched, size_t slen, Arena *a)
{
    const char *target = ctl[0] & 1 ? "sm_90a" : "sm_80";
    /* sizes: the defaults, and small values for the others (the shapes of a real
     * run do not matter to the compiler; huge defaults still come through) */
    int64_t *values = xcalloc((size_t)ak->nparams + 1, sizeof *values);
    bool *bound = xcalloc((size_t)ak->nparams + 1, sizeof *bound);
    for (int i = 0; i < ak->nparams; i++) {
        values[i] = ak->params[i].has_default ? ak->params[i].def : 1 + (ctl[3 + i % 3] >> (i % 4)) % 48;
        bound[i] = true;
    }
    Diags d;
    diag_init(&d);
    Kernel *k = lower_kernel(p, ak, values, bound, &d);
    if (!k)
        goto out;
    const AstSchedule *scheds[64];
    int ns = 0;
    for (int i = 0; i < p->nschedules && ns < 63; i++)
        if (schedule_applies(p->schedules[i], ak, target_find(target), NULL))
            scheds[ns++] = p->schedules[i];
    if (sched) {
        Source *src = arena_alloc(a, sizeof *src);
        src->path = "<-s>";
        src->text = sched;
        src->len = slen;
        AstSchedule *s = parse_schedule_text(a, src, &d);
        if (s) {
            s->kernel = ak->name;
            scheds[ns++] = s;
        }
    }
    PipelineOpts po = {0};
    po.schedules = scheds;
    po.nschedules = ns;
    if (pipeline_run(k, &po, &d))
        verify_or_die(k, "the pipeline");

    /* a few more moves, chosen among the candidates (each checks its own legality) */
    int moves = ctl[2] & 3;
    for (int m = 0; m < moves; m++) {
        Arena *ca = arena_new();
        SchedItem *items;
        int n = xf_enum_candidates(k, ca, &items);
        if (n > 0) {
            Diags q;
            diag_init(&q);
            if (xf_apply(k, &items[ctl[3 + m] % n], NULL, &q))
                verify_or_die(k, "a candidate move");
            diag_free(&q);
        }
        arena_free(ca);
    }

    StrBuf ir = {0};
    ir_print_kernel(k, &ir);
    sb_free(&ir);
    CgCudaModule m;
    Diags cd;
    diag_init(&cd);
    if (tl_cuda_generate(k, target, &m, &cd)) {
        check_cuda(m.src.s);
        cg_cuda_module_free(&m);
    }
    diag_free(&cd);
    ir_free(k);
out:
    diag_free(&d);
    free(values);
    free(bound);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < CTL)
        return 0;
    const uint8_t *ctl = data;
    data += CTL;
    size -= CTL;
    char *text = xmalloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    /* the PDL text ends at a line `%%`; a schedule text may follow */
    char *sched = NULL;
    size_t plen = size, slen = 0;
    char *sep = strstr(text, "\n%%\n");
    if (sep) {
        *sep = 0;
        plen = (size_t)(sep - text);
        sched = sep + 4;
        slen = size - plen - 4;
    }

    Source src = {"fuzz.pdl", text, plen};
    Arena *a = arena_new();
    Diags d;
    diag_init(&d);
    Program *p = parse_program(a, &src, &d);
    if (d.nerrors == 0 && sema_program(p, &d) && p->nkernels > 0)
        compile_kernel(p, p->kernels[ctl[1] % p->nkernels], ctl, sched, slen, a);
    diag_free(&d);
    arena_free(a);
    free(text);
    return 0;
}
