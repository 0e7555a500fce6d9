/* The report of a run, as a table for people or one JSON object for programs
 * (scripts, the autotuner's logs, agents).  Both print the same facts: the machine,
 * the kernel and its shape, whether it is valid and how that was decided, and only
 * for a valid kernel its times, throughput and the baseline beside it.  For an
 * invalid kernel every speed field is null in JSON and absent from the table. */
#include "runtime.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* ---- shared pieces ---- */

static const char *kind_name(BufKind k)
{
    return k == BUF_IN ? "in" : k == BUF_OUT ? "out" : "temp";
}

/* "f32" when every input and output has it, else "f16,f16->f32". */
static void dtype_summary(const Kernel *k, char *out, size_t n)
{
    DType seen_in[8], seen_out[8];
    int ni = 0, no = 0;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        DType *seen = b->kind == BUF_IN ? seen_in : seen_out;
        int *cnt = b->kind == BUF_IN ? &ni : &no;
        if (b->kind == BUF_TEMP)
            continue;
        bool dup = false;
        for (int j = 0; j < *cnt; j++)
            dup |= seen[j] == b->dtype;
        if (!dup && *cnt < 8)
            seen[(*cnt)++] = b->dtype;
    }
    if (ni <= 1 && no == 1 && (ni == 0 || seen_in[0] == seen_out[0])) {
        snprintf(out, n, "%s", dtype_name(seen_out[0]));
        return;
    }
    StrBuf sb = {0};
    for (int i = 0; i < ni; i++)
        sb_printf(&sb, "%s%s", i ? "," : "", dtype_name(seen_in[i]));
    sb_puts(&sb, "->");
    for (int i = 0; i < no; i++)
        sb_printf(&sb, "%s%s", i ? "," : "", dtype_name(seen_out[i]));
    snprintf(out, n, "%s", sb.s);
    sb_free(&sb);
}

static void shape_text(const Kernel *k, const Buffer *b, StrBuf *sb)
{
    sb_puts(sb, "[");
    for (int p = 0; p < b->rank; p++) {
        int64_t v;
        if (ir_eval_size(k, b->shape[p], &v))
            sb_printf(sb, "%s%lld", p ? ", " : "", (long long)v);
        else
            sb_printf(sb, "%s?", p ? ", " : "");
    }
    sb_puts(sb, "]");
}

/* ---- table ---- */

/* 2.15 G, 12.6 M, 203 k: quantities people read at a glance. */
static void si(char *out, size_t n, double v)
{
    static const char *const pre[] = {"", " k", " M", " G", " T", " P"};
    int i = 0;
    while (fabs(v) >= 1000 && i < 5) {
        v /= 1000;
        i++;
    }
    snprintf(out, n, "%.4g%s", v, pre[i]);
}

static void print_stats_line(FILE *f, const char *label, const RtStats *s)
{
    fprintf(f, "%-10s median %.4g ms   min %.4g   max %.4g   (%d reps)\n", label, s->median, s->min, s->max, s->reps);
}

void rt_report_human(const RtResult *r, FILE *f)
{
    const Kernel *k = r->k;
    const RtMachine *m = &r->machine;
    fprintf(f, "perfc %s   kernel %s   -target %s", PERFC_VERSION, k->name, r->target);
    for (int i = 0; i < k->nparams; i++)
        fprintf(f, "%s%s=%lld", i ? " " : "   ", k->params[i].name, (long long)k->params[i].value);
    fprintf(f, "\n");
    fprintf(f, "%-10s %s   threads %d\n", "device", m->device, r->threads);
    fprintf(f, "%-10s %s   LLVM %s", "libraries", m->blas, m->llvm);
    for (int i = 0; i < m->nfacts; i++)
        fprintf(f, "   %s %s", m->facts[i].key, m->facts[i].value);
    fprintf(f, "\n");
    StrBuf sb = {0};
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind == BUF_TEMP)
            continue;
        sb_printf(&sb, "%s%s %s", sb.len ? ", " : "", b->name, dtype_name(b->dtype));
        shape_text(k, b, &sb);
        sb_printf(&sb, " %s", kind_name(b->kind));
    }
    fprintf(f, "%-10s %s\n", "buffers", sb.s ? sb.s : "");
    sb_free(&sb);

    if (!r->valid) {
        fprintf(f, "%-10s NO: %s\n", "valid", r->reason);
        fprintf(f, "%-10s golden %s, tolerance %.3g (%s), seed %llu\n", "", r->golden, r->tolerance,
                dtype_name(r->tol_dtype), (unsigned long long)r->seed);
        if (r->tol_note[0])
            fprintf(f, "%-10s tolerance %s\n", "", r->tol_note);
        fprintf(f, "%-10s validation failed: no time is reported for a wrong kernel\n", "");
        return;
    }
    fprintf(f, "%-10s yes: relative error %.3g <= tolerance %.3g (%s, reduction length %lld)\n", "valid",
            r->rel_error, r->tolerance, dtype_name(r->tol_dtype), (long long)r->work.reduce_len);
    if (r->tol_note[0])
        fprintf(f, "%-10s tolerance %s\n", "", r->tol_note);
    char when[40] = "";
    if (r->measured_at > 0) {
        time_t t = (time_t)r->measured_at;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
        fprintf(f, "%-10s golden %s on %d fresh input set%s now (seed %llu)\n", "", r->golden, r->checks,
                r->checks == 1 ? "" : "s", (unsigned long long)r->seed);
    } else {
        fprintf(f, "%-10s golden %s on %d fresh input sets (seed %llu), and every timed run checked\n", "", r->golden,
                r->checks, (unsigned long long)r->seed);
    }
    fprintf(f, "%-10s %.3g ms (reported apart from run times)\n", "compile", r->compile_ms);
    if (when[0])
        fprintf(f, "%-10s median %.4g ms   min %.4g   max %.4g   (%d reps)   [stored: measured %s, not now]\n",
                "time", r->time.median, r->time.min, r->time.max, r->time.reps, when);
    else
        print_stats_line(f, "time", &r->time);
    if (when[0])
        fprintf(f, "%-10s times from the tuning database: measured %s, validated and every timed run checked then;\n"
                   "%-10s not re-timed now (PERFC_RETUNE=1 searches and times again)\n", "", when, "");
    fprintf(f, "%-10s %s\n", "", r->cache);
    char fl[32], by[32];
    si(fl, sizeof fl, r->work.flops);
    si(by, sizeof by, r->work.bytes);
    fprintf(f, "%-10s %.4g GFLOP/s   %.4g GB/s   (%sFLOP%s and %sB per run)\n", "perfc", r->gflops, r->gbps, fl,
            r->work.exact ? "" : " (estimated)", by);
    if (!r->compare)
        return;
    if (!r->has_base) {
        fprintf(f, "%-10s %s\n", r->base_name, r->base_note);
        return;
    }
    char label[48];
    snprintf(label, sizeof label, "%s", r->base_name);
    fprintf(f, "%-10s %s: median %.4g ms   min %.4g   max %.4g   (%d reps)   %.4g GFLOP/s%s\n", label, r->base_call,
            r->base_time.median, r->base_time.min, r->base_time.max, r->base_time.reps, r->base_gflops,
            r->measured_at > 0 ? "   [stored]" : "");
    fprintf(f, "%-10s perfc / %s = %.3gx\n", "ratio", r->base_name, r->vs_baseline);
    if (r->base_note[0])
        fprintf(f, "%-10s %s\n", "", r->base_note);
}

/* ---- JSON ---- */

static void jstr(FILE *f, const char *s)
{
    StrBuf b = {0};
    sb_json_str(&b, s);
    fputs(b.s, f);
    sb_free(&b);
}

static void jnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void jkey(FILE *f, const char *k, bool *first)
{
    if (!*first)
        fputc(',', f);
    *first = false;
    jstr(f, k);
    fputc(':', f);
}

static void jstats(FILE *f, const RtStats *s)
{
    fprintf(f, "{\"median\":");
    jnum(f, s->median);
    fprintf(f, ",\"min\":");
    jnum(f, s->min);
    fprintf(f, ",\"max\":");
    jnum(f, s->max);
    fprintf(f, ",\"reps\":%d}", s->reps);
}

void rt_report_json(const RtResult *r, FILE *f)
{
    const Kernel *k = r->k;
    const RtMachine *m = &r->machine;
    bool first = true;
    fputc('{', f);
    jkey(f, "perfc", &first);
    jstr(f, PERFC_VERSION);
    jkey(f, "kernel", &first);
    jstr(f, k->name);
    jkey(f, "target", &first);
    jstr(f, r->target);
    jkey(f, "device", &first);
    jstr(f, m->device);

    jkey(f, "machine", &first);
    {
        bool mf = true;
        fputc('{', f);
        jkey(f, "cpu", &mf);
        jstr(f, m->cpu);
        jkey(f, "cores", &mf);
        fprintf(f, "%d", m->cores);
        jkey(f, "isa", &mf);
        jstr(f, m->isa);
        jkey(f, "cpu_mhz", &mf);
        if (m->cpu_mhz > 0)
            jnum(f, m->cpu_mhz);
        else
            fputs("null", f);
        jkey(f, "llc_bytes", &mf);
        fprintf(f, "%lld", (long long)m->llc_bytes);
        jkey(f, "blas", &mf);
        jstr(f, m->blas);
        jkey(f, "llvm", &mf);
        jstr(f, m->llvm);
        jkey(f, "facts", &mf);
        fputc('{', f);
        bool ff = true;
        for (int i = 0; i < m->nfacts; i++) {
            jkey(f, m->facts[i].key, &ff);
            jstr(f, m->facts[i].value);
        }
        fputs("}}", f);
    }
    jkey(f, "threads", &first);
    fprintf(f, "%d", r->threads);

    jkey(f, "shape", &first);
    {
        bool sf = true;
        fputc('{', f);
        for (int i = 0; i < k->nparams; i++) {
            jkey(f, k->params[i].name, &sf);
            fprintf(f, "%lld", (long long)k->params[i].value);
        }
        fputc('}', f);
    }
    char dt[128];
    dtype_summary(k, dt, sizeof dt);
    jkey(f, "dtype", &first);
    jstr(f, dt);
    jkey(f, "buffers", &first);
    fputc('[', f);
    bool bf = true;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind == BUF_TEMP)
            continue;
        fprintf(f, "%s{\"name\":", bf ? "" : ",");
        bf = false;
        jstr(f, b->name);
        fprintf(f, ",\"kind\":\"%s\",\"dtype\":\"%s\",\"shape\":[", kind_name(b->kind), dtype_name(b->dtype));
        for (int p = 0; p < b->rank; p++) {
            int64_t v = -1;
            ir_eval_size(k, b->shape[p], &v);
            fprintf(f, "%s%lld", p ? "," : "", (long long)v);
        }
        fputs("]}", f);
    }
    fputc(']', f);

    jkey(f, "valid", &first);
    fputs(r->valid ? "true" : "false", f);
    jkey(f, "reason", &first);
    jstr(f, r->valid ? NULL : r->reason);
    jkey(f, "rel_error", &first);
    jnum(f, r->rel_error);
    jkey(f, "tolerance", &first);
    jnum(f, r->tolerance);
    jkey(f, "tolerance_dtype", &first);
    jstr(f, dtype_name(r->tol_dtype));
    jkey(f, "tolerance_note", &first);
    jstr(f, r->tol_note[0] ? r->tol_note : NULL);
    jkey(f, "reduction_length", &first);
    fprintf(f, "%lld", (long long)r->work.reduce_len);
    jkey(f, "seed", &first);
    fprintf(f, "%llu", (unsigned long long)r->seed);
    jkey(f, "golden", &first);
    jstr(f, r->golden);
    jkey(f, "checks", &first);
    fprintf(f, "%d", r->checks);
    jkey(f, "compile_ms", &first);
    jnum(f, r->compile_ms);
    jkey(f, "measured_at", &first); /* null: timed in this run; else the database's time (Unix seconds) */
    if (r->measured_at > 0)
        jnum(f, r->measured_at);
    else
        fputs("null", f);
    /* Times read back from the tuning database are marked as such: `measured` is
     * false and `stored_at` says when they were measured (ISO 8601, UTC). */
    jkey(f, "measured", &first);
    fputs(r->measured_at > 0 ? "false" : "true", f);
    jkey(f, "stored_at", &first);
    if (r->measured_at > 0) {
        char iso[40];
        time_t t = (time_t)r->measured_at;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
        jstr(f, iso);
    } else {
        fputs("null", f);
    }
    jkey(f, "flops", &first);
    jnum(f, r->work.flops);
    jkey(f, "flops_exact", &first);
    fputs(r->work.exact ? "true" : "false", f);
    jkey(f, "bytes", &first);
    jnum(f, r->work.bytes);
    jkey(f, "gemm", &first);
    if (r->work.is_gemm) {
        const RtGemm *g = &r->work.gemm;
        fprintf(f,
                "{\"batch\":%lld,\"m\":%lld,\"n\":%lld,\"k\":%lld,\"trans_a\":%s,\"trans_b\":%s,"
                "\"epilogue\":%s}",
                (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k, g->trans_a ? "true" : "false",
                g->trans_b ? "true" : "false", g->epilogue ? "true" : "false");
    } else {
        fputs("null", f);
    }

    /* speed: only for a valid kernel */
    jkey(f, "time_ms", &first);
    if (r->valid)
        jstats(f, &r->time);
    else
        fputs("null", f);
    jkey(f, "cache", &first);
    jstr(f, r->valid ? r->cache : NULL);
    jkey(f, "gflops", &first);
    if (r->valid)
        jnum(f, r->gflops);
    else
        fputs("null", f);
    jkey(f, "gbps", &first);
    if (r->valid)
        jnum(f, r->gbps);
    else
        fputs("null", f);
    jkey(f, "baseline", &first);
    if (!r->valid || !r->compare) {
        fputs("null", f);
    } else {
        bool bf2 = true;
        fputc('{', f);
        jkey(f, "name", &bf2);
        jstr(f, r->base_name);
        jkey(f, "call", &bf2);
        jstr(f, r->has_base ? r->base_call : NULL);
        jkey(f, "time_ms", &bf2);
        if (r->has_base)
            jstats(f, &r->base_time);
        else
            fputs("null", f);
        jkey(f, "gflops", &bf2);
        if (r->has_base)
            jnum(f, r->base_gflops);
        else
            fputs("null", f);
        jkey(f, "rel_error", &bf2);
        if (r->has_base)
            jnum(f, r->base_rel_error);
        else
            fputs("null", f);
        jkey(f, "note", &bf2);
        jstr(f, r->base_note[0] ? r->base_note : NULL);
        jkey(f, "measured", &bf2);
        fputs(r->measured_at > 0 ? "false" : "true", f);
        fputc('}', f);
    }
    jkey(f, "vs_baseline", &first);
    if (r->valid && r->has_base)
        jnum(f, r->vs_baseline);
    else
        fputs("null", f);
    fputs("}\n", f);
}
