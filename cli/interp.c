/* `--run -target interp`: runs the kernel on the f64 reference interpreter with
 * seeded random inputs and prints, per output, a checksum and the first values.
 * It is the oracle's own face: what every compiled kernel is compared with. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "runtime/npy.h"

int cli_run_interp(Compilation *c)
{
    Kernel *k = c->kernel;
    if (!ir_all_bound(k, &c->diags))
        return 1;
    uint64_t seed = c->o->seed_given ? c->o->seed : 1;
    double **bufs = ir_alloc_buffers(k, seed);
    if (!bufs) {
        diag_plain(&c->diags, DIAG_ERROR, "kernel %s is too large for the interpreter at these sizes "
                   "(its buffers do not fit in memory); bind smaller sizes with -D", k->name);
        return 1;
    }
    /* --inputs replaces the drawn inputs; --save-inputs writes what runs */
    for (int b = 0; b < k->nbufs && c->o->inputs; b++)
        if (k->bufs[b]->kind == BUF_IN &&
            !rt_npy_load_input(k, k->bufs[b], c->o->inputs, bufs[b], ir_buffer_elems(k, k->bufs[b]), &c->diags)) {
            ir_free_buffers(k, bufs);
            return 1;
        }
    if (c->o->save_inputs && !rt_npz_save(k, c->o->save_inputs, BUF_IN, bufs, &c->diags)) {
        ir_free_buffers(k, bufs);
        return 1;
    }
    double t0 = now_seconds();
    bool ok = ir_interp(k, bufs, &c->diags);
    double dt = now_seconds() - t0;
    if (!ok) {
        ir_free_buffers(k, bufs);
        return 3;
    }
    if (c->o->save_outputs && !rt_npz_save(k, c->o->save_outputs, BUF_OUT, bufs, &c->diags)) {
        ir_free_buffers(k, bufs);
        return 1;
    }
    if (c->o->inputs)
        printf("kernel %s on the f64 interpreter, inputs from %s, %.3f ms\n", k->name, c->o->inputs, dt * 1e3);
    else
        printf("kernel %s on the f64 interpreter, seed %llu, %.3f ms\n", k->name, (unsigned long long)seed, dt * 1e3);
    int status = 0;
    for (int b = 0; b < k->nbufs; b++) {
        const Buffer *buf = k->bufs[b];
        if (buf->kind != BUF_OUT)
            continue;
        int64_t n = ir_buffer_elems(k, buf);
        double sum = 0, asum = 0;
        int64_t unwritten = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = bufs[b][i];
            if (isnan(v))
                unwritten++;
            else {
                sum += v;
                asum += fabs(v);
            }
        }
        printf("  %s: %s, %lld elements, sum %.10g, sum|x| %.10g\n", buf->name, dtype_name(buf->dtype), (long long)n,
               sum, asum);
        printf("    first:");
        for (int64_t i = 0; i < n && i < 8; i++)
            printf(" %.6g", bufs[b][i]);
        printf("\n");
        if (unwritten) {
            printf("    %lld elements were never written (NaN)\n", (long long)unwritten);
            status = 2;
        }
    }
    ir_free_buffers(k, bufs);
    return status;
}
