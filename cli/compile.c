/* From a file name to a scheduled kernel: read, parse, check, choose the kernel,
 * bind sizes, lower, run the pass pipeline with the file's schedules and -s. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"
#include "lang/pdl_limits.h"
#include "codegen/llvm/cg_llvm.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "tune/blocking.h"
#include "tune/tune.h"

void compilation_init(Compilation *c, Options *o)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    diag_init(&c->diags);
    c->diags.werror = o->werror;
    c->arena = arena_new();
}

void compilation_free(Compilation *c)
{
    if (c->kernel && c->kernel != c->unscheduled)
        ir_free(c->kernel);
    if (c->unscheduled)
        ir_free(c->unscheduled);
    free(c->values);
    free(c->bound);
    free(c->text);
    free(c->default_sched);
    arena_free(c->arena);
    diag_free(&c->diags);
}

/* -D T=bf16 for the dtype parameters of the kernel that -k names (or the first):
 * bound before sema, which types the kernel with them (docs/language.md "Dtype
 * parameters").  Size values are bound after sema, by bind_sizes. */
static int bind_dtypes(Compilation *c)
{
    AstKernel *k = c->o->kernel ? program_find_kernel(c->prog, c->o->kernel) : c->prog->nkernels ? c->prog->kernels[0]
                                                                                                : NULL;
    if (!k)
        return 0; /* compile_kernel says that -k names no kernel */
    for (int d = 0; d < c->o->ndefines; d++) {
        const Define *def = &c->o->defines[d];
        int i = kernel_find_dtparam(k, def->name);
        if (def->dtype && i >= 0) {
            kernel_bind_dtparam(k, i, dtype_from_name(def->dtype));
            continue;
        }
        if (!def->dtype && i < 0)
            continue; /* a size: bind_sizes */
        if (!def->dtype) {
            diag_plain(&c->diags, DIAG_ERROR, "-D %s=%lld: %s is a dtype parameter of kernel %s; its value is a dtype "
                       "(f64, f32, f16, bf16, i32)", def->name, (long long)def->value, def->name, k->name);
            return 1;
        }
        bool size = false;
        for (int j = 0; j < k->nparams; j++)
            size |= !strcmp(k->params[j].name, def->name);
        if (size) {
            diag_plain(&c->diags, DIAG_ERROR, "-D %s=%s: %s is a size parameter of kernel %s; its value is a number",
                       def->name, def->dtype, def->name, k->name);
        } else {
            StrBuf names = {0};
            for (int j = 0; j < k->ndtparams; j++)
                sb_printf(&names, "%s%s", j ? ", " : "", k->dtparams[j].name);
            diag_plain(&c->diags, DIAG_ERROR, "-D %s=%s: kernel %s has no dtype parameter %s (its dtype parameters: %s)",
                       def->name, def->dtype, k->name, def->name, k->ndtparams ? names.s : "none");
            sb_free(&names);
        }
        return 1;
    }
    return 0;
}

int compile_front(Compilation *c)
{
    size_t len;
    c->text = read_file_max(c->o->file, PDL_MAX_INPUT_BYTES, &len);
    if (!c->text && errno == EFBIG) {
        diag_plain(&c->diags, DIAG_ERROR, "'%s' holds more than %d MiB: a PDL file is at most that long (is it the "
                   "right file?)", c->o->file, PDL_MAX_INPUT_BYTES >> 20);
        return 1;
    }
    if (!c->text) {
        diag_plain(&c->diags, DIAG_ERROR, "cannot read '%s': %s", c->o->file, strerror(errno));
        return 1;
    }
    c->src.path = c->o->file;
    c->src.text = c->text;
    c->src.len = len;
    c->prog = parse_program(c->arena, &c->src, &c->diags);
    if (c->diags.nerrors)
        return 1;
    if (bind_dtypes(c))
        return 1;
    /* -k picks one kernel: only it must check, so a half-written neighbour in the
     * same file does not stop it (-emit ast prints, and so checks, them all) */
    AstKernel *only = c->o->kernel && c->o->emit != EMIT_AST ? program_find_kernel(c->prog, c->o->kernel) : NULL;
    if (only) {
        for (int i = 0; i < c->prog->nkernels; i++)
            if (c->prog->kernels[i] != only && !strcmp(c->prog->kernels[i]->name, only->name)) {
                diag_error(&c->diags, c->prog->kernels[i]->span, "kernel %s is defined twice", only->name);
                diag_note(&c->diags, only->span, "first defined here");
                return 1;
            }
        sema_kernel(c->prog, only, &c->diags);
        for (int i = 0; i < c->prog->nschedules; i++)
            if (!strcmp(c->prog->schedules[i]->kernel, only->name))
                schedule_check_head(c->prog, i, only, &c->diags);
    } else {
        sema_program(c->prog, &c->diags);
    }
    return c->diags.nerrors ? 1 : 0;
}

static int bind_sizes(Compilation *c)
{
    AstKernel *k = c->ast;
    c->values = xcalloc((size_t)k->nparams + 1, sizeof(int64_t));
    c->bound = xcalloc((size_t)k->nparams + 1, sizeof(bool));
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].has_default) {
            c->values[i] = k->params[i].def;
            c->bound[i] = true;
        }
    for (int d = 0; d < c->o->ndefines; d++) {
        const Define *def = &c->o->defines[d];
        if (def->dtype)
            continue; /* bound by bind_dtypes */
        int i;
        for (i = 0; i < k->nparams; i++)
            if (!strcmp(k->params[i].name, def->name))
                break;
        if (i == k->nparams) {
            StrBuf names = {0};
            for (int j = 0; j < k->nparams; j++)
                sb_printf(&names, "%s%s", j ? ", " : "", k->params[j].name);
            diag_plain(&c->diags, DIAG_ERROR, "-D %s: kernel %s has no size parameter %s (its parameters: %s)", def->name,
                       k->name, def->name, k->nparams ? names.s : "none");
            sb_free(&names);
            return 1;
        }
        c->values[i] = def->value;
        c->bound[i] = true;
    }
    return 0;
}

/* The file's schedule blocks for the kernel and the target: the unnamed ones, or
 * with --schedule NAME those called NAME; a block whose `when` guard does not hold
 * for the kernel's dtypes is left out, and a variant asked for that has no block,
 * or none whose guard holds, is an error. */
static int select_schedules(Compilation *c)
{
    Program *p = c->prog;
    const char *v = c->o->variant;
    const AstSchedule *refused = NULL;
    StrBuf names = {0};
    for (int i = 0; i < p->nschedules; i++) {
        const AstSchedule *s = p->schedules[i];
        if (strcmp(s->kernel, c->ast->name) || !schedule_matches_target(s->target, c->target))
            continue;
        if (v && s->variant && !strstr(names.s ? names.s : "", arena_printf(c->arena, " %s,", s->variant)))
            sb_printf(&names, " %s,", s->variant);
        if (v ? !s->variant || strcmp(s->variant, v) : s->variant != NULL)
            continue;
        if (!schedule_guard_holds(s, c->ast)) {
            refused = s;
            continue;
        }
        if (c->nscheds == 16) {
            diag_error(&c->diags, s->span, "more than 16 schedule blocks apply to kernel %s", c->ast->name);
            sb_free(&names);
            return 1;
        }
        c->scheds[c->nscheds++] = s;
    }
    if (v && c->nscheds == 0) {
        if (refused) {
            int i = kernel_find_dtparam(c->ast, refused->when_param);
            diag_error(&c->diags, refused->when_span, "--schedule %s: this variant of kernel %s is for other dtypes: %s "
                       "is %s here (-D %s=... sets it)", v, c->ast->name, refused->when_param,
                       dtype_name(c->ast->dtparams[i].dtype), refused->when_param);
        } else {
            if (names.len)
                names.s[names.len - 1] = 0; /* the last comma */
            diag_plain(&c->diags, DIAG_ERROR, "--schedule %s: kernel %s has no schedule variant %s for target %s (%s%s)", v,
                       c->ast->name, v, c->o->target, names.len ? "its variants there:" : "it has none there",
                       names.len ? names.s : "");
        }
        sb_free(&names);
        return 1;
    }
    sb_free(&names);
    return 0;
}

/* A contraction the file and -s leave unscheduled gets the default schedule
 * (tune/default.c) under --run, -emit and `perfc lib`; not with --no-schedule,
 * --no-default-schedule, --autotune (the tuner starts from it on its own) or
 * --actions (which lists moves from the kernel as written).  Said on stderr with
 * --verbose and -dump-after. */
static void add_default_schedule(Compilation *c)
{
    const Options *o = c->o;
    if (c->nscheds || o->no_schedule || o->no_default_schedule || o->autotune || o->actions ||
        (!target_is_cpu(c->target) && !target_is_gpu(c->target)))
        return;
    TuneInput in = {.prog = c->prog, .ast = c->ast, .values = c->values, .bound = c->bound, .threads = o->threads};
    char *text = tune_default_schedule(&in, c->unscheduled, c->target, c->default_origin, sizeof c->default_origin);
    if (!text)
        return;
    Source *src = arena_alloc(c->arena, sizeof *src);
    src->path = "<default schedule>";
    src->text = arena_strdup(c->arena, text);
    src->len = strlen(text);
    Diags q;
    diag_init(&q);
    AstSchedule *s = parse_schedule_text(c->arena, src, &q);
    diag_free(&q);
    if (!s) {
        free(text);
        return;
    }
    s->kernel = c->ast->name;
    c->scheds[c->nscheds++] = s;
    c->default_sched = text;
    if ((o->verbose || o->dump_after) && target_is_gpu(c->target)) {
        fprintf(stderr, "perfc: kernel %s has no schedule for %s: the default schedule for contractions applies "
                        "(%s, at its first candidate; --no-default-schedule turns it off):\n",
                c->ast->name, c->target->name, c->default_origin);
    } else if ((o->verbose || o->dump_after) &&
               (!strstr(c->default_origin, "contraction") || strstr(c->default_origin, "direct convolution") ||
                strstr(c->default_origin, "AMX"))) {
        /* not the GEMM blocking: a template of its own */
        fprintf(stderr, "perfc: kernel %s has no schedule for %s: the default schedule applies "
                        "(%s; --no-default-schedule turns it off):\n",
                c->ast->name, c->target->name, c->default_origin);
    } else if (o->verbose || o->dump_after) {
        Blocking b;
        CacheSizes cs;
        blocking_caches(c->target, &cs);
        blocking_for_target(c->target, 4, 0, 0, 0, &b);
        fprintf(stderr, "perfc: kernel %s has no schedule for %s: the default schedule for contractions applies "
                        "(%s; the machine's blocking for f32 at large sizes: MR %d, NR %d, KC %d, MC %d, NC %d from L1 %lld KiB, L2 %lld "
                        "KiB, L3 %lld KiB, %s; --no-default-schedule turns it off):\n",
                c->ast->name, c->target->name, c->default_origin, b.mr, b.nr, b.kc, b.mc, b.nc,
                (long long)(cs.l1 >> 10), (long long)(cs.l2 >> 10), (long long)(cs.l3 >> 10), cs.source);
    }
    if (o->verbose || o->dump_after) {
        for (const char *p = text; *p;) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            fprintf(stderr, "  %.*s\n", len, p);
            p += len + (e != NULL);
        }
    }
}

Kernel *lower_fresh(Compilation *c)
{
    return lower_kernel(c->prog, c->ast, c->values, c->bound, &c->diags);
}

int compile_kernel(Compilation *c)
{
    Program *p = c->prog;
    /* The one parse of -target: every later stage asks c->target. */
    if (!(c->target = target_parse(c->o->target, &c->diags)))
        return 1;
    if (c->o->kernel) {
        c->ast = program_find_kernel(p, c->o->kernel);
        if (!c->ast) {
            StrBuf names = {0};
            for (int i = 0; i < p->nkernels; i++)
                sb_printf(&names, "%s%s", i ? ", " : "", p->kernels[i]->name);
            diag_plain(&c->diags, DIAG_ERROR, "-k %s: %s has no kernel of that name (it has: %s)", c->o->kernel,
                       c->o->file, names.s);
            sb_free(&names);
            return 1;
        }
    } else {
        c->ast = p->kernels[0];
    }
    if (bind_sizes(c))
        return 1;
    c->unscheduled = lower_fresh(c);
    if (!c->unscheduled || c->diags.nerrors)
        return 1;
    if (!ir_verify(c->unscheduled, &c->diags))
        return 1;

    /* The file's schedules for this kernel and target, then each -s. */
    if (!c->o->no_schedule && select_schedules(c))
        return 1;
    for (int i = 0; i < c->o->nscheds; i++) {
        Source *src = arena_alloc(c->arena, sizeof *src);
        src->path = "<-s>";
        src->text = c->o->scheds[i];
        src->len = strlen(c->o->scheds[i]);
        AstSchedule *s = parse_schedule_text(c->arena, src, &c->diags);
        if (!s)
            return 1;
        s->kernel = c->ast->name;
        c->scheds[c->nscheds++] = s;
    }
    add_default_schedule(c);
    if (c->nscheds == 0 && !c->o->dump_after) {
        c->kernel = c->unscheduled;
        c->unscheduled = lower_fresh(c);
        /* no schedule: of the pipeline only mask-bounds and the target passes
         * change anything, and pipeline_target runs both (not for -emit ir,
         * which prints the kernel as lowered) */
        bool lower = target_is_gpu(c->target) || (target_is_cpu(c->target) && c->o->emit != EMIT_IR);
        if (c->unscheduled && !c->o->actions && lower && !pipeline_target(c->kernel, c->target, &c->diags))
            return 1;
        return c->unscheduled ? 0 : 1;
    }
    c->kernel = lower_fresh(c);
    if (!c->kernel)
        return 1;
    StrBuf dump = {0};
    PipelineOpts po = {0};
    po.schedules = c->scheds;
    po.nschedules = c->nscheds;
    po.dump_after = c->o->dump_after;
    po.dump = &dump;
    /* GPU targets get their legalisation and lowering (passes/gpu_*.c) here. */
    if (target_is_gpu(c->target))
        po.target = c->target;
    /* Moves listed by --actions are appended as -s statements, which apply before
     * `simplify`: list them on that kernel, or a one-trip loop that simplify removes
     * would change the names and nesting the moves refer to. */
    if (c->o->actions)
        po.stop_after = "schedule";
    /* CPU targets get target legalisation and lowering (passes/cpu_*.c) here, so
     * -dump-after shows them; `-emit ir` prints the kernel as scheduled. */
    if (target_is_cpu(c->target) && c->o->emit != EMIT_IR)
        po.target = c->target;
    if (c->o->dump_after) {
        bool known = !strcmp(c->o->dump_after, "all");
        for (int i = 0; pipeline_pass_name(i); i++)
            known |= !strcmp(pipeline_pass_name(i), c->o->dump_after);
        if (!known) {
            StrBuf names = {0};
            for (int i = 0; pipeline_pass_name(i); i++)
                sb_printf(&names, "%s%s", i ? ", " : "", pipeline_pass_name(i));
            diag_plain(&c->diags, DIAG_ERROR, "-dump-after=%s: no such pass (the passes: %s, or all)", c->o->dump_after,
                       names.s);
            sb_free(&names);
            return 1;
        }
    }
    bool ok = pipeline_run(c->kernel, &po, &c->diags);
    if (dump.len)
        fputs(dump.s, stderr);
    sb_free(&dump);
    return ok ? 0 : 1;
}

static bool write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

/* Writes a complete file at path through a fresh temporary in the same directory,
 * created with O_EXCL (mkstemp: an unpredictable name, never an existing file or a
 * planted link), renamed over path only once every byte is written.  On any failure
 * the temporary is removed and path is untouched. */
static int replace_file(Compilation *c, const char *path, const char *data, size_t len, mode_t mode)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    size_t n = dlen + strlen(slash ? slash + 1 : path) + 16;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%.*s.%s.XXXXXX", (int)dlen, path, slash ? slash + 1 : path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        diag_plain(&c->diags, DIAG_ERROR, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return 1;
    }
    bool ok = write_all(fd, data, len) && fchmod(fd, mode) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        diag_plain(&c->diags, DIAG_ERROR, "cannot write '%s': %s", path, strerror(err));
    }
    free(tmp);
    return ok ? 0 : 1;
}

int write_output(Compilation *c, const char *data, size_t len)
{
    const char *out = c->o->out;
    if (!out || !strcmp(out, "-")) {
        fwrite(data, 1, len, stdout);
        return 0;
    }
    /* A symbolic link is followed to what it names (the link stays); a link to
     * nothing is refused rather than made to create a file wherever it points. */
    char *real = NULL;
    struct stat st;
    bool exists = lstat(out, &st) == 0;
    if (exists && S_ISLNK(st.st_mode)) {
        real = realpath(out, NULL);
        if (!real || stat(real, &st) != 0) {
            diag_plain(&c->diags, DIAG_ERROR, "cannot write '%s': a symbolic link to a file that does not exist",
                       out);
            free(real);
            return 1;
        }
    }
    const char *path = real ? real : out;
    int rc;
    if (exists && S_ISDIR(st.st_mode)) {
        diag_plain(&c->diags, DIAG_ERROR, "cannot write '%s': it is a directory", out);
        rc = 1;
    } else if (exists && !S_ISREG(st.st_mode)) {
        /* A FIFO or a device (/dev/null) is written in place: renaming over it would
         * replace the node with a plain file (as root, `-o /dev/null` once did). */
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bool ok = fd >= 0 && write_all(fd, data, len);
        int err = errno;
        if (fd >= 0 && close(fd) != 0 && ok) {
            ok = false;
            err = errno;
        }
        if (!ok)
            diag_plain(&c->diags, DIAG_ERROR, "cannot write '%s': %s", out, strerror(err));
        rc = ok ? 0 : 1;
    } else {
        /* a new file gets the usual permissions; a replaced one keeps its own */
        mode_t mask = umask(0);
        umask(mask);
        rc = replace_file(c, path, data, len, exists ? st.st_mode & 07777 : 0666 & ~mask);
    }
    free(real);
    return rc;
}
