/* `perfc lib`: builds a library that other programs link or load.
 *
 *   perfc lib FILE.pdl... [-target host] [-D NAME=V ...] [--sizes 'M=64,N=64' ...]
 *             [-k KERNEL ...] [--autotune [--budget N] [--time S] [--db FILE]] -o DIR/NAME
 *
 * writes DIR/libNAME.a, DIR/libNAME.so and DIR/NAME.h.  Every kernel of the files
 * (or each -k) becomes one C function `int NAME_KERNEL(tensors..., sizes...)` with
 * its size parameters as run-time arguments, built from:
 *   - a general variant: the unscheduled loop nest written as C with run-time sizes
 *     (codegen/c), correct for every size, which refuses sizes under which an index
 *     would leave its tensor;
 *   - specialised variants: for each size set given at build time (-D is one set,
 *     each --sizes another; a kernel's defaults are one more when all its
 *     parameters have one), the scheduled kernel compiled by the LLVM back end for
 *     each instruction set of the target (on x86-64 `host` means baseline x86-64,
 *     AVX2 and AVX-512, chosen by the CPU's features when called); with --autotune
 *     the schedule is the tuner's winner (from the tuning database when it has one).
 * A dispatch in the generated C calls a specialised variant when the sizes equal
 * its set, whatever the tensors' alignment (emitted code assumes an element's:
 * codegen/llvm/cg_llvm.h), else the general variant.  The library also carries NAME_kernels[] (names, dtypes, shapes as
 * expressions of the sizes) and the same description as JSON (NAME_manifest) for the
 * Python package.  Objects are compiled with $CC (default cc) and archived with $AR
 * (default ar); nothing of CUDA is needed.  docs/library.md has the details. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib.h"
#include "codegen/c/cg_c.h"
#include "passes/passes.h"
#include "pool_src.h"
#include "runtime/tune.h"
#ifdef PERFC_HAVE_LLVM
#include "codegen/llvm/cg_llvm.h"
#endif

int cli_lib_main(int argc, char **argv);

static void lib_usage(FILE *f)
{
    fputs("usage: perfc lib FILE.pdl... -o DIR/NAME [options]\n"
          "\n"
          "Builds DIR/libNAME.a, DIR/libNAME.so and DIR/NAME.h: one C function per kernel, sizes as\n"
          "run-time arguments (docs/library.md).\n"
          "\n"
          "  -target T        host (default: on x86-64 baseline, AVX2 and AVX-512 code, chosen at run\n"
          "                   time), or one CPU target: x86_64[-avx2|-avx512], aarch64[-sve], riscv64[-v]\n"
          "  -D NAME=VALUE    a size the library is specialised (scheduled, compiled) for; the -D\n"
          "                   options together form one size set\n"
          "  --sizes 'A=1,B=2' another size set; repeatable.  A set applies to the kernels that have\n"
          "                   every size it names; 'KERNEL:A=1,B=2' applies to that kernel only\n"
          "  -k KERNEL        export only these kernels (repeatable; default: every kernel)\n"
          "  --autotune       specialise with the tuner's winning schedule (--budget, --time, --db)\n"
          "  --keep           keep the build folder (its path is printed)\n"
          "  --verbose        print the compiler commands\n"
          "\n"
          "Environment: CC (default cc) compiles and links, AR (default ar) archives.\n",
          f);
}

static int lib_error(const char *fmt, const char *arg)
{
    fputs("perfc lib: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(perfc lib --help lists the options)\n", stderr);
    return 1;
}

static bool is_ident(const char *s)
{
    if (!s || !*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* NAME=VALUE into d; false on a malformed item. */
static bool parse_define(const char *s, size_t len, Define *d)
{
    const char *eq = memchr(s, '=', len);
    if (!eq || eq == s)
        return false;
    char *name = xmalloc((size_t)(eq - s) + 1);
    memcpy(name, s, (size_t)(eq - s));
    name[eq - s] = 0;
    char num[32];
    size_t nl = len - (size_t)(eq + 1 - s);
    if (nl == 0 || nl >= sizeof num || !is_ident(name)) {
        free(name);
        return false;
    }
    memcpy(num, eq + 1, nl);
    num[nl] = 0;
    errno = 0;
    char *end;
    long long v = strtoll(num, &end, 0);
    if (errno || *end || v < 0) {
        free(name);
        return false;
    }
    d->name = name;
    d->value = v;
    return true;
}

static void opts_free(LibOpts *o)
{
    for (int s = 0; s < o->nsets; s++) {
        for (int i = 0; i < o->sets[s].n; i++)
            free((char *)o->sets[s].d[i].name);
        free(o->sets[s].kernel);
    }
    free(o->dir);
    free(o->name);
}

/* 0 go on, 1 usage error, -1 help answered. */
static int parse_lib_args(LibOpts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->targets = "host";
    bool dset = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT()                                                    \
    do {                                                          \
        if (i + 1 >= argc)                                        \
            return lib_error("option %s needs a value", a);       \
        i++;                                                      \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            lib_usage(stdout);
            return -1;
        } else if (!strcmp(a, "-target") || !strcmp(a, "--target")) {
            NEXT();
            o->targets = argv[i];
        } else if (!strncmp(a, "-D", 2)) {
            const char *def = a + 2;
            if (!*def) {
                NEXT();
                def = argv[i];
            }
            if (!dset) {
                if (o->nsets == LIB_MAX_SETS)
                    return lib_error("too many size sets (the limit is %s)", "32");
                dset = true;
                /* the -D set is always set 0, wherever the options stand */
                memmove(&o->sets[1], &o->sets[0], sizeof o->sets[0] * (size_t)o->nsets);
                memset(&o->sets[0], 0, sizeof o->sets[0]);
                o->nsets++;
            }
            SizeSet *s = &o->sets[0];
            if (s->n == MAX_DEFINES)
                return lib_error("too many -D options (the limit is %s)", "64");
            if (!parse_define(def, strlen(def), &s->d[s->n]))
                return lib_error("-D takes NAME=VALUE with a non-negative integer value, not '%s'", def);
            s->n++;
        } else if (!strcmp(a, "--sizes")) {
            NEXT();
            if (o->nsets == LIB_MAX_SETS)
                return lib_error("too many size sets (the limit is %s)", "32");
            SizeSet *s = &o->sets[o->nsets++];
            memset(s, 0, sizeof *s);
            const char *p = argv[i], *colon = strchr(p, ':'), *eq = strchr(p, '=');
            if (colon && (!eq || colon < eq)) {
                s->kernel = xmalloc((size_t)(colon - p) + 1);
                memcpy(s->kernel, p, (size_t)(colon - p));
                s->kernel[colon - p] = 0;
                p = colon + 1;
            }
            while (*p) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                if (s->n == MAX_DEFINES || !parse_define(p, len, &s->d[s->n]))
                    return lib_error("--sizes takes NAME=VALUE,NAME=VALUE... with non-negative integers, not '%s'",
                                     argv[i]);
                s->n++;
                p += len + (e ? 1 : 0);
            }
            if (!s->n)
                return lib_error("--sizes needs at least one NAME=VALUE%s", "");
        } else if (!strcmp(a, "-k")) {
            NEXT();
            if (o->nksel == LIB_MAX_KSEL)
                return lib_error("too many -k options (the limit is %s)", "64");
            o->ksel[o->nksel++] = argv[i];
        } else if (!strcmp(a, "--autotune")) {
            o->autotune = true;
        } else if (!strcmp(a, "--budget")) {
            NEXT();
            o->budget = atoi(argv[i]);
            if (o->budget <= 0)
                return lib_error("--budget takes a positive number of candidates, not '%s'", argv[i]);
        } else if (!strcmp(a, "--time")) {
            NEXT();
            o->time_limit = atof(argv[i]);
            if (!(o->time_limit > 0))
                return lib_error("--time takes a positive number of seconds, not '%s'", argv[i]);
        } else if (!strcmp(a, "--db")) {
            NEXT();
            o->db = argv[i];
        } else if (!strcmp(a, "-o")) {
            NEXT();
            o->out = argv[i];
        } else if (!strcmp(a, "--keep")) {
            o->keep = true;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (a[0] == '-' && a[1]) {
            return lib_error("unknown option '%s'", a);
        } else {
            if (o->nfiles == LIB_MAX_FILES)
                return lib_error("too many input files (the limit is %s)", "64");
            o->files[o->nfiles++] = a;
        }
#undef NEXT
    }
    if (!o->nfiles)
        return lib_error("no input file%s", "");
    if (!o->out)
        return lib_error("-o DIR/NAME is required: the library is DIR/libNAME.a, DIR/libNAME.so, DIR/NAME.h%s", "");
    const char *slash = strrchr(o->out, '/');
    const char *base = slash ? slash + 1 : o->out;
    if (!is_ident(base))
        return lib_error("-o %s: the library name must be a C identifier (it prefixes every exported symbol)",
                         o->out);
    o->name = xstrdup(base);
    if (slash) {
        size_t n = (size_t)(slash - o->out);
        o->dir = xmalloc(n + 2);
        memcpy(o->dir, o->out, n);
        o->dir[n] = 0;
        if (n == 0)
            strcpy(o->dir, "/");
    } else {
        o->dir = xstrdup(".");
    }
    struct stat st;
    if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return lib_error("-o: the folder '%s' does not exist", o->dir);
    return 0;
}

/* ---- running the C compiler ---- */

static bool run_argv(Lib *L, char **argv)
{
    if (L->o->verbose) {
        for (int i = 0; argv[i]; i++)
            fprintf(stderr, "%s%s", i ? " " : "", argv[i]);
        fputc('\n', stderr);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        diag_plain(L->d, DIAG_ERROR, "perfc lib: cannot start '%s': %s", argv[0], strerror(errno));
        return false;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "perfc lib: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            diag_plain(L->d, DIAG_ERROR, "perfc lib: waiting for '%s': %s", argv[0], strerror(errno));
            return false;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        diag_plain(L->d, DIAG_ERROR, "perfc lib: '%s' failed (exit status %d) building the library%s", argv[0],
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                   L->o->verbose ? "" : " (--verbose shows the commands, --keep keeps the sources)");
        return false;
    }
    return true;
}

static const char *env_or(const char *var, const char *def)
{
    const char *v = getenv(var);
    return v && *v ? v : def;
}

static char *path_in(const char *dir, const char *file)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, file);
    return p;
}

static bool write_bytes(Lib *L, const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        diag_plain(L->d, DIAG_ERROR, "perfc lib: cannot write '%s': %s", path, strerror(errno));
    return ok;
}

static void add_obj(Lib *L, char *path)
{
    L->objs = xrealloc(L->objs, sizeof(char *) * (size_t)(L->nobjs + 1));
    L->objs[L->nobjs++] = path;
}

static bool cc_compile(Lib *L, const char *src, const char *obj, const char *extra)
{
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)env_or("CC", "cc");
    argv[n++] = "-std=c11";
    argv[n++] = "-O3";
    argv[n++] = "-fPIC";
    argv[n++] = "-fwrapv";
    argv[n++] = "-D_POSIX_C_SOURCE=200809L";
    argv[n++] = "-D_DEFAULT_SOURCE";
    if (extra)
        argv[n++] = (char *)extra;
    argv[n++] = "-c";
    argv[n++] = (char *)src;
    argv[n++] = "-o";
    argv[n++] = (char *)obj;
    argv[n] = NULL;
    return run_argv(L, argv);
}

/* ---- the kernels ---- */

static bool want_kernel(const LibOpts *o, const char *name)
{
    if (!o->nksel)
        return true;
    for (int i = 0; i < o->nksel; i++)
        if (!strcmp(o->ksel[i], name))
            return true;
    return false;
}

/* The instruction sets a CPU target stands for in a library. */
static void pick_isas(Lib *L, const char *t)
{
    if (!strcmp(t, "host")) {
#if defined(__x86_64__)
        L->isas[L->nisa++] = "x86_64";
        L->isas[L->nisa++] = "x86_64-avx2";
        L->isas[L->nisa++] = "x86_64-avx512";
#elif defined(__aarch64__)
        L->isas[L->nisa++] = "aarch64";
#elif defined(__riscv)
        L->isas[L->nisa++] = "riscv64";
#else
        L->isas[L->nisa++] = "host";
#endif
        return;
    }
    L->isas[L->nisa++] = t;
}

static const char *isa_suffix(const char *isa)
{
    if (!strcmp(isa, "x86_64-avx2"))
        return "avx2";
    if (!strcmp(isa, "x86_64-avx512"))
        return "avx512";
    return "base";
}

/* --autotune: replaces c's schedule by the tuner's winner for these sizes on
 * target (the tuning database answers at once when it has one), applied as -s to a
 * fresh compile without the file's schedule.  When tuning fails (no device to
 * measure on, no valid candidate) the file's schedule stays, with a note.  *sched
 * receives the schedule text, which c's compilation points into: free it after c.
 * Returns the exit status of the compilation. */
int lib_autotune(Lib *L, const char *kname, const char *target, Compilation *c, Options *o, char **sched)
{
    Diags td;
    diag_init(&td);
    TuneInput in = {.prog = c->prog, .ast = c->ast, .values = c->values, .bound = c->bound,
                    .scheds = c->scheds, .nscheds = compilation_user_scheds(c)};
    TuneOptions to;
    tune_options_init(&to);
    to.target = target;
    to.budget = L->o->budget;
    to.time_limit = L->o->time_limit;
    to.db_path = L->o->db;
    to.quiet = true;
    to.progress = 0;
    TuneResult res;
    memset(&res, 0, sizeof res);
    int trc = tune_kernel(&in, &to, &res, &td);
    if (trc != 0 || res.ntop < 1 || !res.top[0].schedule) {
        fprintf(stderr, "perfc lib: note: %s for %s: tuning gave no schedule, the file's is used:\n", kname, target);
        diag_flush(&td, stderr);
        diag_free(&td);
        tune_result_free(&res);
        return 0;
    }
    diag_free(&td);
    *sched = xstrdup(res.top[0].schedule);
    fprintf(stderr, "perfc lib: %s for %s: tuned schedule%s\n", kname, target,
            res.from_db ? " (from the tuning database)" : "");
    tune_result_free(&res);
    diag_flush(&c->diags, stderr);
    compilation_free(c);
    compilation_init(c, o);
    o->no_schedule = true;
    o->nscheds = 0;
    o->scheds[o->nscheds++] = *sched;
    int st = compile_front(c);
    return st ? st : compile_kernel(c);
}

/* Compiles one specialised variant of kernel `kname` from `file` for every ISA.
 * Returns false on an error that should stop the build; *skip when the size set
 * does not bind every parameter of the kernel (no variant, not an error). */
static bool build_variant(Lib *L, LibKernel *lk, const SizeSet *set, bool defaults_only, bool *skip)
{
    *skip = false;
    if (!L->nisa) { /* GPU targets only: the CPU part is the general variant alone */
        *skip = true;
        return true;
    }
    Variant v = {0};
    bool ok = true;
    for (int is = 0; is < L->nisa && ok; is++) {
        char *sched = NULL; /* a tuned schedule: the compilation's -s, freed after it */
        Options o;
        memset(&o, 0, sizeof o);
        o.file = lk->file;
        o.target = L->isas[is];
        o.kernel = lk->name;
        Compilation c;
        compilation_init(&c, &o);
        int st = compile_front(&c);
        AstKernel *ak = st ? NULL : program_find_kernel(c.prog, lk->name);
        if (ak) {
            /* the set's values for this kernel's parameters; other names are for
             * other kernels */
            bool applies = defaults_only || !set->kernel || !strcmp(set->kernel, lk->name);
            for (int i = 0; !defaults_only && applies && i < set->n; i++) {
                bool found = false;
                for (int j = 0; j < ak->nparams; j++)
                    if (!strcmp(ak->params[j].name, set->d[i].name)) {
                        o.defines[o.ndefines++] = set->d[i];
                        found = true;
                    }
                applies = found;
            }
            if (!applies)
                o.ndefines = 0;
            int bound = 0;
            for (int j = 0; j < ak->nparams; j++) {
                bool b = ak->params[j].has_default;
                for (int i = 0; i < o.ndefines; i++)
                    b |= !strcmp(o.defines[i].name, ak->params[j].name);
                bound += b;
            }
            if (bound < ak->nparams || (!defaults_only && o.ndefines == 0)) {
                *skip = true;
                diag_flush(&c.diags, stderr);
                compilation_free(&c);
                free(sched);
                break;
            }
            st = compile_kernel(&c);
            if (!st && L->o->autotune)
                st = lib_autotune(L, lk->name, L->isas[is], &c, &o, &sched);
        } else if (!st) {
            st = 1;
        }
#ifdef PERFC_HAVE_LLVM
        if (!st) {
            Kernel *k = c.kernel;
            if (!v.values) {
                v.values = xcalloc((size_t)k->nparams + 1, sizeof(int64_t));
                for (int j = 0; j < k->nparams; j++)
                    v.values[j] = k->params[j].value;
            }
            if (k->nbufs > v.nbufs) { /* each ISA's schedule may add buffers of its own */
                v.priv = xrealloc(v.priv, sizeof(bool) * (size_t)(k->nbufs + 1));
                v.temp_bytes = xrealloc(v.temp_bytes, sizeof(int64_t) * (size_t)(k->nbufs + 1));
                memset(v.priv + v.nbufs, 0, sizeof(bool) * (size_t)(k->nbufs + 1 - v.nbufs));
                memset(v.temp_bytes + v.nbufs, 0, sizeof(int64_t) * (size_t)(k->nbufs + 1 - v.nbufs));
                v.nbufs = k->nbufs;
            }
            /* temporaries: their bytes for the caller; the last ISA's schedule wins,
             * so record the largest of all */
            for (int b = 0; b < k->nbufs; b++)
                if (k->bufs[b]->kind == BUF_TEMP && k->bufs[b]->mem != MEM_LOCAL) {
                    int64_t el = ir_buffer_elems(k, k->bufs[b]);
                    int64_t by = el < 0 ? 0 : el * dtype_bytes(k->bufs[b]->dtype);
                    if (by > v.temp_bytes[b])
                        v.temp_bytes[b] = by;
                }
            char sym[512];
            snprintf(sym, sizeof sym, "%s__%s__s%d_%s", L->o->name, lk->name, lk->nvar, isa_suffix(L->isas[is]));
            const char *orig = k->name;
            k->name = sym;
            StrBuf obj = {0};
            bool eok = cg_llvm_emit(k, L->isas[is], CG_EMIT_OBJ, &obj, &c.diags);
            k->name = orig;
            if (eok) {
                char file[600];
                snprintf(file, sizeof file, "%s.o", sym);
                char *p = path_in(L->tmp, file);
                eok = write_bytes(L, p, obj.s, obj.len);
                if (eok)
                    add_obj(L, p);
                else
                    free(p);
                v.sym[is] = xstrdup(sym);
            }
            sb_free(&obj);
            st = eok ? 0 : 1;
        }
#else
        if (!st) {
            diag_plain(&c.diags, DIAG_ERROR, "this perfc was built without LLVM: specialised variants cannot be "
                                             "compiled (install llvm-19-dev and rebuild)");
            st = 1;
        }
#endif
        if (st)
            ok = false;
        if (c.diags.nerrors)
            L->d->nerrors++; /* counted here, printed below */
        diag_flush(&c.diags, stderr);
        compilation_free(&c);
        free(sched);
    }
    if (*skip || !ok) {
        for (int is = 0; is < LIB_MAX_ISAS; is++)
            free(v.sym[is]);
        free(v.values);
        free(v.priv);
        free(v.temp_bytes);
        return ok || *skip;
    }
    /* a set equal to one built already (the defaults repeated by -D) adds nothing */
    for (int i = 0; i < lk->nvar; i++)
        if (!memcmp(lk->var[i].values, v.values, sizeof(int64_t) * (size_t)lk->gen->nparams)) {
            for (int is = 0; is < LIB_MAX_ISAS; is++)
                free(v.sym[is]);
            free(v.values);
            free(v.priv);
            free(v.temp_bytes);
            return true;
        }
    lk->var = xrealloc(lk->var, sizeof(Variant) * (size_t)(lk->nvar + 1));
    lk->var[lk->nvar++] = v;
    return true;
}

/* Lowers every exported kernel of one file with its sizes unbound (the general
 * variant) and builds its specialised variants. */
static bool load_file(Lib *L, const char *file)
{
    Options o;
    memset(&o, 0, sizeof o);
    o.file = file;
    o.target = L->nisa ? L->isas[0] : "host";
    Compilation c;
    compilation_init(&c, &o);
    bool ok = compile_front(&c) == 0;
    for (int i = 0; ok && i < c.prog->nkernels; i++) {
        AstKernel *ak = c.prog->kernels[i];
        if (!want_kernel(L->o, ak->name))
            continue;
        for (int j = 0; j < L->nk; j++)
            if (!strcmp(L->k[j].name, ak->name)) {
                diag_plain(&c.diags, DIAG_ERROR, "perfc lib: kernel %s is defined in both %s and %s; the library "
                                                 "exports one function per name", ak->name, L->k[j].file, file);
                ok = false;
            }
        if (!ok)
            break;
        /* sizes unbound: defaults are ignored, so the nest is right for any value */
        Kernel *g = lib_general_kernel(c.prog, ak, L->arena, &c.diags);
        if (!g || c.diags.nerrors || !ir_verify(g, &c.diags)) {
            if (g)
                ir_free(g);
            ok = false;
            break;
        }
        if (L->nk == L->capk) {
            L->capk = L->capk ? 2 * L->capk : 8;
            L->k = xrealloc(L->k, sizeof(LibKernel) * (size_t)L->capk);
        }
        LibKernel *lk = &L->k[L->nk++];
        memset(lk, 0, sizeof *lk);
        lk->file = file;
        lk->name = xstrdup(ak->name);
        lk->gen = g;
        if (L->ngpu)
            lib_cuda_general(L, lk, c.prog, ak);
    }
    if (c.diags.nerrors)
        L->d->nerrors++;
    diag_flush(&c.diags, stderr);
    compilation_free(&c);
    return ok;
}

/* ---- the generated C: wrappers, dispatch, table ---- */

static void json_str(StrBuf *o, const char *s)
{
    sb_putc(o, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            sb_printf(o, "\\u%04x", *s);
        else
            sb_putc(o, *s);
    }
    sb_putc(o, '"');
}

/* A C string literal holding s. */
void lib_c_str(StrBuf *o, const char *s)
{
    sb_putc(o, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(o, "\\%c", *s);
        else if (*s == '\n')
            sb_puts(o, "\\n\"\n    \"");
        else if ((unsigned char)*s < 0x20)
            sb_printf(o, "\\%03o", (unsigned char)*s);
        else
            sb_putc(o, *s);
    }
    sb_putc(o, '"');
}

static int nio(const Kernel *k)
{
    int n = 0;
    for (int b = 0; b < k->nbufs; b++)
        n += k->bufs[b]->kind != BUF_TEMP;
    return n;
}

void lib_signature(const Lib *L, const LibKernel *lk, const char *suffix, bool stream, StrBuf *o)
{
    const Kernel *k = lk->gen;
    sb_printf(o, "int %s_%s%s(", L->o->name, lk->name, suffix);
    int n = 0;
    for (int b = 0; b < k->nbufs; b++) {
        const Buffer *bf = k->bufs[b];
        if (bf->kind == BUF_TEMP)
            continue;
        sb_printf(o, "%s%s%s *%s", n++ ? ", " : "", bf->kind == BUF_IN ? "const " : "", cg_c_storage_type(bf->dtype),
                  bf->name);
    }
    for (int i = 0; i < k->nparams; i++)
        sb_printf(o, "%sint64_t %s", n++ ? ", " : "", k->params[i].name);
    if (stream)
        sb_printf(o, "%svoid *stream", n++ ? ", " : "");
    if (!n)
        sb_puts(o, "void");
    sb_puts(o, ")");
}

static const char HEADER_COMMON[] =
    "#ifndef PERFC_LIB_COMMON_DEFINED\n"
    "#define PERFC_LIB_COMMON_DEFINED\n"
    "/* Return values of every function of a perfc-generated library. */\n"
    "enum {\n"
    "    PERFC_LIB_OK = 0,\n"
    "    PERFC_LIB_ENULL = 1,     /* a tensor pointer is NULL */\n"
    "    PERFC_LIB_ESIZE = 2,     /* a size is negative, or a shape or byte count does not fit */\n"
    "    PERFC_LIB_ERANGE = 3,    /* under these sizes an index would leave its tensor */\n"
    "    PERFC_LIB_ENOMEM = 4,    /* a temporary could not be allocated */\n"
    "    PERFC_LIB_ENOKERNEL = 5, /* NAME_call: no kernel of that name */\n"
    "    PERFC_LIB_EDEVICE = 6    /* no CUDA driver or GPU, no code for this GPU or these sizes,\n"
    "                                or a CUDA call failed */\n"
    "};\n"
    "/* One tensor argument: shape[i] is an expression of the size parameters in which\n"
    " * `//` and `%` are floor division and modulo (Python's operators). */\n"
    "typedef struct perfc_lib_tensor {\n"
    "    const char *name;\n"
    "    const char *dtype;        /* f64 f32 f16 bf16 i32 (f16/bf16 as uint16_t bits) */\n"
    "    int output;               /* 0: read, 1: written */\n"
    "    int rank;\n"
    "    const char *const *shape;\n"
    "} perfc_lib_tensor;\n"
    "typedef struct perfc_lib_kernel {\n"
    "    const char *name;         /* the PDL kernel */\n"
    "    const char *symbol;       /* its C function */\n"
    "    const char *source;       /* the .pdl file it came from */\n"
    "    int nsizes;\n"
    "    const char *const *sizes; /* size parameters, in argument order */\n"
    "    int ntensors;             /* tensor arguments, in argument order */\n"
    "    const perfc_lib_tensor *tensors;\n"
    "    int nvariants;            /* size sets with specialised (scheduled) code */\n"
    "    const int64_t *variants;  /* nvariants x nsizes values */\n"
    "    const char *targets;      /* instruction sets of the specialised code */\n"
    "} perfc_lib_kernel;\n"
    "#endif\n";

static void gen_header(Lib *L, StrBuf *h)
{
    const char *N = L->o->name;
    StrBuf guard = {0};
    for (const char *p = N; *p; p++)
        sb_putc(&guard, (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p));
    sb_printf(h, "/* %s.h: generated by perfc %s (perfc lib) from", N, PERFC_VERSION);
    for (int i = 0; i < L->o->nfiles; i++)
        sb_printf(h, " %s", L->o->files[i]);
    sb_printf(h, ".\n * Link lib%s.a or lib%s.so (and -lm -lpthread with the static one).\n"
                 " * Tensors are dense, row-major; sizes are run-time arguments.  Every function\n"
                 " * returns PERFC_LIB_OK or an error code, and %s_last_error() says what went wrong\n"
                 " * (per thread).  Sizes equal to a specialised set run the scheduled code (any\n"
                 " * alignment); any other call runs the general variant. */\n",
              N, N, N);
    sb_printf(h, "#ifndef %s_PERFC_LIB_H\n#define %s_PERFC_LIB_H\n\n#include <stdint.h>\n\n", guard.s, guard.s);
    sb_puts(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    sb_puts(h, HEADER_COMMON);
    sb_puts(h, "\n");
    for (int i = 0; i < L->nk; i++) {
        const LibKernel *lk = &L->k[i];
        const Kernel *k = lk->gen;
        sb_printf(h, "/* %s (%s):", lk->name, lk->file);
        for (int b = 0; b < k->nbufs; b++) {
            const Buffer *bf = k->bufs[b];
            if (bf->kind == BUF_TEMP)
                continue;
            sb_printf(h, "%s %s %s %s[", b ? "," : "", bf->kind == BUF_IN ? "in" : "out", bf->name, dtype_name(bf->dtype));
            for (int d = 0; d < bf->rank; d++) {
                if (d)
                    sb_puts(h, ", ");
                cg_c_size_text(k, bf->shape[d], h);
            }
            sb_puts(h, "]");
        }
        if (lk->nvar) {
            sb_puts(h, "\n * specialised for");
            for (int v = 0; v < lk->nvar; v++) {
                sb_puts(h, v ? ";" : "");
                for (int p = 0; p < k->nparams; p++)
                    sb_printf(h, "%s%s=%" PRId64, p ? "," : " ", k->params[p].name, lk->var[v].values[p]);
            }
        }
        if (lk->ngvar) {
            sb_puts(h, "\n * GPU code for");
            for (int v = 0; v < lk->ngvar; v++) {
                sb_puts(h, v ? ";" : "");
                for (int p = 0; p < k->nparams; p++)
                    sb_printf(h, "%s%s=%" PRId64, p ? "," : " ", k->params[p].name, lk->gvar[v].values[p]);
            }
        }
        sb_puts(h, " */\n");
        lib_signature(L, lk, "", false, h);
        sb_puts(h, ";\n\n");
    }
    lib_cuda_header(L, h);
    sb_printf(h, "/* Any kernel by name: tensors[] in argument order, sizes[] in argument order. */\n"
                 "int %s_call(const char *kernel, void *const *tensors, const int64_t *sizes);\n"
                 "/* What the last failed call of this thread said (\"\" when none failed). */\n"
                 "const char *%s_last_error(void);\n"
                 "/* Every exported kernel, for tools; %s_manifest is the same as JSON. */\n"
                 "extern const perfc_lib_kernel %s_kernels[];\n"
                 "extern const int %s_nkernels;\n"
                 "extern const char *const %s_manifest;\n\n",
              N, N, N, N, N, N);
    sb_printf(h, "#ifdef __cplusplus\n}\n#endif\n#endif /* %s_PERFC_LIB_H */\n", guard.s);
    sb_free(&guard);
}

/* The dispatch and checks of one kernel: NAME__run_KERNEL(tensors, sizes). */
static bool gen_run(Lib *L, const LibKernel *lk, StrBuf *o)
{
    const char *N = L->o->name;
    const Kernel *k = lk->gen;
    /* the checks every call makes, on the CPU and on the GPU alike: sizes, shapes,
     * byte counts, NULL pointers; they fill bufs[] (temporaries NULL) and bytes[] */
    sb_printf(o, "\nstatic int %s__check_%s(void *const *t, const int64_t *p, void **bufs, int64_t *bytes)\n{\n"
                 "    int ovf = 0;\n",
              N, lk->name);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(o, "    if (p[%d] < 0)\n        return pf_fail(PERFC_LIB_ESIZE, \"%s: size %s = %%lld is negative\", "
                     "(long long)p[%d]);\n",
                  i, lk->name, k->params[i].name, i);
    for (int b = 0; b < k->nbufs; b++) {
        const Buffer *bf = k->bufs[b];
        sb_printf(o, "    { /* %s */\n        int64_t n = 1;\n", bf->name);
        for (int d = 0; d < bf->rank; d++) {
            StrBuf txt = {0};
            cg_c_size_text(k, bf->shape[d], &txt);
            sb_puts(o, "        { int64_t x = ");
            if (!cg_c_size_expr(k, bf->shape[d], o)) {
                diag_plain(L->d, DIAG_ERROR, "perfc lib: kernel %s: the shape of %s is not a size expression",
                           lk->name, bf->name);
                sb_free(&txt);
                return false;
            }
            sb_puts(o, ";\n          if (ovf || x < 0)\n            return pf_fail(PERFC_LIB_ESIZE, ");
            StrBuf msg = {0};
            sb_printf(&msg, "%s: dimension %d of %s (%s) is %s for these sizes", lk->name, d, bf->name, txt.s, "%s");
            lib_c_str(o, msg.s);
            sb_puts(o, ", ovf ? \"undefined or too large\" : \"negative\");\n          n = pf_smul(n, x, &ovf); }\n");
            sb_free(&msg);
            sb_free(&txt);
        }
        sb_printf(o, "        bytes[%d] = pf_smul(n, %d, &ovf);\n", b, dtype_bytes(bf->dtype));
        sb_printf(o, "        if (ovf || bytes[%d] > PTRDIFF_MAX / 2)\n            return pf_fail(PERFC_LIB_ESIZE, "
                     "\"%s: tensor %s does not fit in memory for these sizes\");\n",
                  b, lk->name, bf->name);
        if (bf->kind != BUF_TEMP) {
            int ti = 0;
            for (int j = 0; j < b; j++)
                ti += k->bufs[j]->kind != BUF_TEMP;
            sb_printf(o, "        bufs[%d] = t[%d];\n", b, ti);
            sb_printf(o, "        if (!bufs[%d] && bytes[%d] > 0)\n            return pf_fail(PERFC_LIB_ENULL, "
                         "\"%s: tensor %s is NULL\");\n",
                      b, b, lk->name, bf->name);
        }
        sb_puts(o, "    }\n");
    }
    sb_printf(o, "    return PERFC_LIB_OK;\n}\n\nstatic int %s__run_%s(void *const *t, const int64_t *p)\n{\n", N,
              lk->name);
    int nb = k->nbufs;
    for (int v = 0; v < lk->nvar; v++)
        nb = lk->var[v].nbufs > nb ? lk->var[v].nbufs : nb;
    sb_printf(o, "    void *bufs[%d] = {0};\n    int64_t bytes[%d] = {0};\n", nb + 1, nb + 1);
    sb_printf(o, "    int rc = %s__check_%s(t, p, bufs, bytes);\n    if (rc)\n        return rc;\n", N, lk->name);
    /* specialised variants */
    for (int v = 0; v < lk->nvar; v++) {
        const Variant *va = &lk->var[v];
        sb_puts(o, "    if (");
        for (int i = 0; i < k->nparams; i++)
            sb_printf(o, "p[%d] == INT64_C(%" PRId64 ") && ", i, va->values[i]);
        /* any alignment: a tensor from malloc (16 bytes) ran the general variant,
         * 7x slower for sgemm 1024^3 on Zen 3, before emitted code stopped
         * assuming 64 */
        sb_puts(o, "1) {\n        void (*fn)(void **) = 0;\n");
        /* the widest instruction set the CPU has, then the others */
        for (int is = L->nisa - 1; is >= 0; is--) {
            if (!va->sym[is])
                continue;
            const char *isa = L->isas[is];
            if (!strcmp(isa, "x86_64-avx512"))
                sb_printf(o, "        if (!fn && pf_cpu_avx512()) fn = %s;\n", va->sym[is]);
            else if (!strcmp(isa, "x86_64-avx2"))
                sb_printf(o, "        if (!fn && pf_cpu_avx2()) fn = %s;\n", va->sym[is]);
            else
                sb_printf(o, "        if (!fn) fn = %s;\n", va->sym[is]);
        }
        sb_puts(o, "        if (fn) {\n            int ok = 1;\n");
        for (int b = 0; b < va->nbufs; b++)
            if (va->temp_bytes[b] > 0)
                sb_printf(o, "            bufs[%d] = pf_alloc(INT64_C(%" PRId64 "));\n            ok &= bufs[%d] != 0;\n",
                          b, va->temp_bytes[b], b);
        sb_puts(o, "            if (ok)\n                fn(bufs);\n");
        sb_printf(o, "            if (pf_trace())\n                fprintf(stderr, \"%s: specialised variant %d (%%s)\\n\", ", lk->name, v);
        for (int is = L->nisa - 1; is >= 0; is--)
            if (va->sym[is])
                sb_printf(o, "fn == %s ? \"%s\" : ", va->sym[is], L->isas[is]);
        sb_puts(o, "\"?\");\n");
        for (int b = 0; b < va->nbufs; b++)
            if (va->temp_bytes[b] > 0)
                sb_printf(o, "            free(bufs[%d]);\n            bufs[%d] = 0;\n", b, b);
        sb_printf(o, "            if (!ok)\n                return pf_fail(PERFC_LIB_ENOMEM, \"%s: cannot allocate a "
                     "temporary\");\n            return PERFC_LIB_OK;\n        }\n    }\n",
                  lk->name);
    }
    /* the general variant */
    sb_puts(o, "    {\n        int ok = 1;\n");
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b]->kind == BUF_TEMP)
            sb_printf(o, "        bufs[%d] = pf_alloc(bytes[%d]);\n        ok &= bufs[%d] != 0;\n", b, b, b);
    sb_printf(o, "        rc = ok ? %s__%s__general(bufs, p) : -1;\n", N, lk->name);
    sb_printf(o, "        if (pf_trace())\n            fprintf(stderr, \"%s: general variant\\n\");\n", lk->name);
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b]->kind == BUF_TEMP)
            sb_printf(o, "        free(bufs[%d]);\n", b);
    sb_printf(o, "        if (rc < 0)\n            return pf_fail(PERFC_LIB_ENOMEM, \"%s: cannot allocate a temporary\");\n",
              lk->name);
    sb_printf(o, "        if (rc)\n            return pf_fail(PERFC_LIB_ERANGE, \"%s: under these sizes an index would "
                 "leave its tensor (", lk->name);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(o, "%s%s=%%lld", i ? ", " : "", k->params[i].name);
    sb_puts(o, ")\"");
    for (int i = 0; i < k->nparams; i++)
        sb_printf(o, ", (long long)p[%d]", i);
    sb_puts(o, ");\n        return PERFC_LIB_OK;\n    }\n}\n");
    return true;
}

static const char SOURCE_COMMON[] =
    "#include <stdarg.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
    "static _Thread_local char pf_err[512];\n"
    "__attribute__((format(printf, 2, 3))) static int pf_fail(int code, const char *fmt, ...)\n"
    "{\n"
    "    va_list ap;\n"
    "    va_start(ap, fmt);\n"
    "    vsnprintf(pf_err, sizeof pf_err, fmt, ap);\n"
    "    va_end(ap);\n"
    "    return code;\n"
    "}\n"
    "/* 64-byte aligned (the specialised code assumes it), never NULL for 0 bytes */\n"
    "static void *pf_alloc(int64_t bytes)\n"
    "{\n"
    "    size_t n = (size_t)(bytes > 0 ? bytes : 1);\n"
    "    return aligned_alloc(64, (n + 63) / 64 * 64);\n"
    "}\n"
    "/* PERFC_LIB_TRACE=1 in the environment: each call says on stderr which code ran */\n"
    "static int pf_trace(void)\n"
    "{\n"
    "    static _Atomic int on = -1;\n"
    "    if (on < 0) {\n"
    "        const char *e = getenv(\"PERFC_LIB_TRACE\");\n"
    "        on = e && *e && *e != '0';\n"
    "    }\n"
    "    return on;\n"
    "}\n"
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n"
    "/* the CPU's features: __builtin_cpu_supports reads what libgcc found at load */\n"
    "static int pf_cpu_avx512(void)\n"
    "{\n"
    "    return __builtin_cpu_supports(\"avx512f\") && __builtin_cpu_supports(\"avx512bw\") &&\n"
    "           __builtin_cpu_supports(\"avx512dq\") && __builtin_cpu_supports(\"avx512vl\");\n"
    "}\n"
    "static int pf_cpu_avx2(void) { return __builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\"); }\n"
    "#else\n"
    "static int pf_cpu_avx512(void) { return 0; }\n"
    "static int pf_cpu_avx2(void) { return 0; }\n"
    "#endif\n";

static bool gen_source(Lib *L, StrBuf *s)
{
    const char *N = L->o->name;
    sb_printf(s, "/* lib%s: generated by perfc %s (perfc lib).  Wrappers, dispatch, general variants\n"
                 " * and the kernel table; the specialised variants are LLVM objects beside it. */\n",
              N, PERFC_VERSION);
    sb_printf(s, "#include \"%s.h\"\n\n", N);
    cg_c_prelude(s);
    sb_puts(s, SOURCE_COMMON);
    bool used_avx = false;
    for (int i = 0; i < L->nisa; i++)
        used_avx |= !strncmp(L->isas[i], "x86_64-", 7);
    if (!used_avx)
        sb_puts(s, "static inline void pf_unused_cpu(void) { (void)pf_cpu_avx512; (void)pf_cpu_avx2; }\n");
    for (int i = 0; i < L->nk; i++) {
        LibKernel *lk = &L->k[i];
        sb_printf(s, "\n/* ---- %s ---- */\n", lk->name);
        for (int v = 0; v < lk->nvar; v++)
            for (int is = 0; is < L->nisa; is++)
                if (lk->var[v].sym[is])
                    sb_printf(s, "void %s(void **bufs);\n", lk->var[v].sym[is]);
        char fname[300];
        snprintf(fname, sizeof fname, "%s__%s__general", N, lk->name);
        Diags *d = L->d;
        if (!cg_c_emit_general(lk->gen, fname, s, d))
            return false;
        if (!gen_run(L, lk, s))
            return false;
        const Kernel *k = lk->gen;
        StrBuf sig = {0};
        lib_signature(L, lk, "", false, &sig);
        sb_printf(s, "\n%s\n{\n", sig.s);
        sb_free(&sig);
        int n = nio(k);
        sb_printf(s, "    void *t[%d] = {", n + 1);
        int m = 0;
        for (int b = 0; b < k->nbufs; b++)
            if (k->bufs[b]->kind != BUF_TEMP)
                sb_printf(s, "%s(void *)%s", m++ ? ", " : "", k->bufs[b]->name);
        sb_printf(s, "%s0};\n    int64_t p[%d] = {", m ? ", " : "", k->nparams + 1);
        for (int j = 0; j < k->nparams; j++)
            sb_printf(s, "%s%s", j ? ", " : "", k->params[j].name);
        sb_printf(s, "%s0};\n    pf_err[0] = 0;\n    return %s__run_%s(t, p);\n}\n", k->nparams ? ", " : "", N,
                  lk->name);
    }
    /* the generic entry */
    sb_printf(s, "\nint %s_call(const char *kernel, void *const *tensors, const int64_t *sizes)\n{\n"
                 "    pf_err[0] = 0;\n"
                 "    if (!kernel)\n        return pf_fail(PERFC_LIB_ENOKERNEL, \"%s_call: the kernel name is NULL\");\n",
              N, N);
    for (int i = 0; i < L->nk; i++) {
        const LibKernel *lk = &L->k[i];
        sb_printf(s, "    if (!strcmp(kernel, \"%s\")) {\n", lk->name);
        if (nio(lk->gen))
            sb_printf(s, "        if (!tensors)\n            return pf_fail(PERFC_LIB_ENULL, \"%s: the tensor array "
                         "is NULL\");\n", lk->name);
        if (lk->gen->nparams)
            sb_printf(s, "        if (!sizes)\n            return pf_fail(PERFC_LIB_ENULL, \"%s: the size array "
                         "is NULL\");\n", lk->name);
        sb_printf(s, "        return %s__run_%s(tensors, sizes);\n    }\n", N, lk->name);
    }
    sb_printf(s, "    return pf_fail(PERFC_LIB_ENOKERNEL, \"%s_call: no kernel '%%.200s' in this library\", kernel);\n"
                 "}\n\nconst char *%s_last_error(void)\n{\n    return pf_err;\n}\n",
              N, N);
    lib_cuda_source(L, s);
    /* the table */
    StrBuf js = {0};
    sb_printf(&js, "{\"library\": \"%s\", \"perfc\": \"%s\", \"kernels\": [", N, PERFC_VERSION);
    StrBuf tgt = {0};
    for (int is = 0; is < L->nisa; is++)
        sb_printf(&tgt, "%s%s", is ? "," : "", L->isas[is]);
    for (int i = 0; i < L->nk; i++) {
        const LibKernel *lk = &L->k[i];
        const Kernel *k = lk->gen;
        sb_printf(s, "\nstatic const char *const %s__sizes_%d[] = {", N, i);
        for (int j = 0; j < k->nparams; j++)
            sb_printf(s, "\"%s\", ", k->params[j].name);
        sb_puts(s, "0};\n");
        for (int b = 0; b < k->nbufs; b++) {
            const Buffer *bf = k->bufs[b];
            if (bf->kind == BUF_TEMP)
                continue;
            sb_printf(s, "static const char *const %s__shape_%d_%d[] = {", N, i, b);
            for (int d = 0; d < bf->rank; d++) {
                StrBuf t = {0};
                cg_c_size_text(k, bf->shape[d], &t);
                lib_c_str(s, t.s);
                sb_puts(s, ", ");
                sb_free(&t);
            }
            sb_puts(s, "0};\n");
        }
        sb_printf(s, "static const perfc_lib_tensor %s__tensors_%d[] = {\n", N, i);
        for (int b = 0; b < k->nbufs; b++) {
            const Buffer *bf = k->bufs[b];
            if (bf->kind != BUF_TEMP)
                sb_printf(s, "    {\"%s\", \"%s\", %d, %d, %s__shape_%d_%d},\n", bf->name, dtype_name(bf->dtype),
                          bf->kind == BUF_OUT, bf->rank, N, i, b);
        }
        sb_puts(s, "    {0, 0, 0, 0, 0}};\n");
        sb_printf(s, "static const int64_t %s__variants_%d[] = {", N, i);
        for (int v = 0; v < lk->nvar; v++)
            for (int j = 0; j < k->nparams; j++)
                sb_printf(s, "INT64_C(%" PRId64 "), ", lk->var[v].values[j]);
        sb_puts(s, "0};\n");
        /* JSON */
        sb_printf(&js, "%s{\"name\": ", i ? ", " : "");
        json_str(&js, lk->name);
        sb_printf(&js, ", \"symbol\": \"%s_%s\", \"source\": ", N, lk->name);
        json_str(&js, lk->file);
        sb_puts(&js, ", \"sizes\": [");
        for (int j = 0; j < k->nparams; j++) {
            sb_puts(&js, j ? ", " : "");
            json_str(&js, k->params[j].name);
        }
        sb_puts(&js, "], \"tensors\": [");
        int m = 0;
        for (int b = 0; b < k->nbufs; b++) {
            const Buffer *bf = k->bufs[b];
            if (bf->kind == BUF_TEMP)
                continue;
            sb_printf(&js, "%s{\"name\": ", m++ ? ", " : "");
            json_str(&js, bf->name);
            sb_printf(&js, ", \"dtype\": \"%s\", \"output\": %s, \"shape\": [", dtype_name(bf->dtype),
                      bf->kind == BUF_OUT ? "true" : "false");
            for (int d = 0; d < bf->rank; d++) {
                StrBuf t = {0};
                cg_c_size_text(k, bf->shape[d], &t);
                sb_puts(&js, d ? ", " : "");
                json_str(&js, t.s);
                sb_free(&t);
            }
            sb_puts(&js, "]}");
        }
        sb_puts(&js, "], \"specialised\": [");
        for (int v = 0; v < lk->nvar; v++) {
            sb_puts(&js, v ? ", {" : "{");
            for (int j = 0; j < k->nparams; j++) {
                sb_puts(&js, j ? ", " : "");
                json_str(&js, k->params[j].name);
                sb_printf(&js, ": %" PRId64, lk->var[v].values[j]);
            }
            sb_puts(&js, "}");
        }
        sb_puts(&js, "], \"targets\": [");
        for (int is = 0; is < L->nisa; is++) {
            sb_puts(&js, is ? ", " : "");
            json_str(&js, L->isas[is]);
        }
        sb_puts(&js, "], \"gpu_targets\": [");
        for (int g = 0; g < L->ngpu; g++) {
            sb_puts(&js, g ? ", " : "");
            json_str(&js, L->gpus[g]);
        }
        sb_puts(&js, "], \"gpu_general\": [");
        for (int g = 0, n = 0; g < L->ngpu; g++)
            if (lk->ggen.k && lk->ggen.built[g]) {
                sb_puts(&js, n++ ? ", " : "");
                json_str(&js, L->gpus[g]);
            }
        sb_puts(&js, "], \"gpu_specialised\": [");
        for (int v = 0; v < lk->ngvar; v++) {
            sb_puts(&js, v ? ", {" : "{");
            for (int j = 0; j < k->nparams; j++) {
                sb_puts(&js, j ? ", " : "");
                json_str(&js, k->params[j].name);
                sb_printf(&js, ": %" PRId64, lk->gvar[v].values[j]);
            }
            sb_puts(&js, "}");
        }
        sb_puts(&js, "]}");
    }
    sb_puts(&js, "]}");
    sb_printf(s, "\nconst perfc_lib_kernel %s_kernels[] = {\n", N);
    for (int i = 0; i < L->nk; i++) {
        const LibKernel *lk = &L->k[i];
        sb_printf(s, "    {\"%s\", \"%s_%s\", ", lk->name, N, lk->name);
        lib_c_str(s, lk->file);
        sb_printf(s, ", %d, %s__sizes_%d, %d, %s__tensors_%d, %d, %s__variants_%d, \"%s\"},\n", lk->gen->nparams, N, i,
                  nio(lk->gen), N, i, lk->nvar, N, i, tgt.s);
    }
    sb_printf(s, "    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};\nconst int %s_nkernels = %d;\nconst char *const %s_manifest =\n    ",
              N, L->nk, N);
    lib_c_str(s, js.s);
    sb_puts(s, ";\n");
    sb_free(&js);
    sb_free(&tgt);
    return true;
}

/* ---- the build ---- */

static bool build(Lib *L)
{
    const char *N = L->o->name;
    StrBuf h = {0}, src = {0};
    gen_header(L, &h);
    bool ok = gen_source(L, &src);
    char hname[300], cname[300];
    snprintf(hname, sizeof hname, "%s.h", N);
    snprintf(cname, sizeof cname, "%s_lib.c", N);
    char *hpath = path_in(L->tmp, hname), *cpath = path_in(L->tmp, cname);
    ok = ok && write_bytes(L, hpath, h.s, h.len) && write_bytes(L, cpath, src.s, src.len);
    char *opath = path_in(L->tmp, "lib.o");
    if (ok && (ok = cc_compile(L, cpath, opath, NULL)))
        add_obj(L, opath);
    else
        free(opath);
    /* the thread pool, weak so that several perfc libraries (or libperfc) link together */
    char *ph = path_in(L->tmp, "pool.h"), *pc = path_in(L->tmp, "pool_impl.c"), *pw = path_in(L->tmp, "pool.c");
    static const char weak[] = "/* perfc's thread pool, weak: one copy wins when several libraries carry it */\n"
                               "#pragma weak perfc_parallel_for\n#pragma weak perfc_pool_set_threads\n"
                               "#pragma weak perfc_pool_threads\n#include \"pool_impl.c\"\n";
    ok = ok && write_bytes(L, ph, perfc_src_pool_h, sizeof perfc_src_pool_h - 1) &&
         write_bytes(L, pc, perfc_src_pool_c, sizeof perfc_src_pool_c - 1) && write_bytes(L, pw, weak, strlen(weak));
    char *po = path_in(L->tmp, "pool.o");
    if (ok && (ok = cc_compile(L, pw, po, NULL)))
        add_obj(L, po);
    else
        free(po);
    free(ph);
    free(pc);
    free(pw);
    /* archive and shared object, written beside and renamed into place */
    char aname[300], soname[300];
    snprintf(aname, sizeof aname, "lib%s.a", N);
    snprintf(soname, sizeof soname, "lib%s.so", N);
    char *apath = path_in(L->tmp, aname), *sopath = path_in(L->tmp, soname);
    if (ok) {
        char **argv = xcalloc((size_t)L->nobjs + 8, sizeof(char *));
        int n = 0;
        argv[n++] = (char *)env_or("AR", "ar");
        argv[n++] = "rcs";
        argv[n++] = apath;
        for (int i = 0; i < L->nobjs; i++)
            argv[n++] = L->objs[i];
        argv[n] = NULL;
        ok = run_argv(L, argv);
        n = 0;
        char sonameopt[400];
        snprintf(sonameopt, sizeof sonameopt, "-Wl,-soname,%s", soname);
        argv = xrealloc(argv, sizeof(char *) * ((size_t)L->nobjs + 12));
        argv[n++] = (char *)env_or("CC", "cc");
        argv[n++] = "-shared";
        argv[n++] = sonameopt;
        /* never unmapped by dlclose: the thread pool's workers live on in its code */
        argv[n++] = "-Wl,-z,nodelete";
        argv[n++] = "-o";
        argv[n++] = sopath;
        for (int i = 0; i < L->nobjs; i++)
            argv[n++] = L->objs[i];
        argv[n++] = "-lm";
        argv[n++] = "-lpthread";
        if (L->ngpu)
            argv[n++] = "-ldl";
        argv[n] = NULL;
        ok = ok && run_argv(L, argv);
        free(argv);
    }
    const char *from[3] = {hpath, apath, sopath}, *to[3] = {hname, aname, soname};
    for (int i = 0; ok && i < 3; i++) {
        char *dst = path_in(L->o->dir, to[i]);
        /* rename cannot cross file systems; copy then */
        if (rename(from[i], dst) != 0) {
            size_t len;
            char *data = read_file(from[i], &len);
            ok = data && write_bytes(L, dst, data, len);
            free(data);
            if (ok && i == 2)
                chmod(dst, 0755);
        }
        free(dst);
    }
    if (ok)
        printf("perfc lib: wrote %s/%s, %s/%s, %s/%s (%d kernel%s)\n", L->o->dir, aname, L->o->dir, soname, L->o->dir,
               hname, L->nk, L->nk == 1 ? "" : "s");
    free(apath);
    free(sopath);
    free(hpath);
    free(cpath);
    sb_free(&h);
    sb_free(&src);
    return ok;
}

static void remove_tree(const char *dir, char **objs, int nobjs)
{
    /* only the files this build wrote */
    static const char *const fixed[] = {"pool.h", "pool_impl.c", "pool.c"};
    for (int i = 0; i < nobjs; i++)
        remove(objs[i]);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char *p = path_in(dir, fixed[i]);
        remove(p);
        free(p);
    }
}

int cli_lib_main(int argc, char **argv)
{
    LibOpts o;
    int r = parse_lib_args(&o, argc, argv);
    if (r) {
        opts_free(&o);
        return r < 0 ? 0 : 1;
    }
    Diags d;
    diag_init(&d);
    Lib L = {.o = &o, .d = &d, .arena = arena_new()};
    int status = 0;
    /* targets: a comma-separated list; GPU code is not generated yet */
    char *tl = L.targets = xstrdup(o.targets);
    for (char *save = NULL, *t = strtok_r(tl, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const Target *tg = target_find(t);
        if (target_is_gpu(tg) || (!tg && target_name_gpu(t))) {
            if (!tg) {
                diag_plain(&d, DIAG_ERROR, "perfc lib: unknown GPU target '%s' (%s)", t, cg_cuda_targets());
                status = 1;
            } else if (L.ngpu < LIB_MAX_GPUS) {
                L.gpus[L.ngpu++] = t;
            }
            continue;
        }
#ifdef PERFC_HAVE_LLVM
        if (!target_is_cpu(tg)) {
            diag_plain(&d, DIAG_ERROR, "perfc lib: unknown target '%s' (host, x86_64[-avx2|-avx512], aarch64[-sve], "
                                       "riscv64[-v])", t);
            status = 1;
            continue;
        }
#endif
        if (L.nisa)
            continue; /* one CPU target per library */
        pick_isas(&L, t);
    }
    /* with GPU targets only, the CPU part is the general variant alone */
    if (!status && !L.nisa && !L.ngpu) {
        diag_plain(&d, DIAG_ERROR, "perfc lib: -target names no target");
        status = 1;
    }
    char tmpl[] = "/tmp/perfc-lib-XXXXXX";
    if (!status) {
        const char *td = getenv("TMPDIR");
        char *t = xmalloc(strlen(td && *td ? td : "/tmp") + 32);
        sprintf(t, "%s/perfc-lib-XXXXXX", td && *td ? td : "/tmp");
        L.tmp = mkdtemp(t) ? t : (free(t), mkdtemp(tmpl) ? xstrdup(tmpl) : NULL);
        if (!L.tmp) {
            diag_plain(&d, DIAG_ERROR, "perfc lib: cannot create a build folder: %s", strerror(errno));
            status = 1;
        }
    }
    for (int i = 0; !status && i < o.nfiles; i++)
        if (!load_file(&L, o.files[i]))
            status = 1;
    if (!status && o.nksel)
        for (int i = 0; i < o.nksel; i++) {
            bool found = false;
            for (int j = 0; j < L.nk; j++)
                found |= !strcmp(L.k[j].name, o.ksel[i]);
            if (!found) {
                diag_plain(&d, DIAG_ERROR, "perfc lib: -k %s: no input file has a kernel of that name", o.ksel[i]);
                status = 1;
            }
        }
    if (!status && !L.nk) {
        diag_plain(&d, DIAG_ERROR, "perfc lib: the input files hold no kernel");
        status = 1;
    }
    /* every -D/--sizes name must be a parameter of some exported kernel */
    for (int s = 0; !status && s < o.nsets; s++)
        if (o.sets[s].kernel) {
            bool found = false;
            for (int j = 0; j < L.nk; j++)
                found |= !strcmp(L.k[j].name, o.sets[s].kernel);
            if (!found) {
                diag_plain(&d, DIAG_ERROR, "perfc lib: --sizes %s:...: no exported kernel has that name",
                           o.sets[s].kernel);
                status = 1;
            }
        }
    for (int s = 0; !status && s < o.nsets; s++)
        for (int i = 0; i < o.sets[s].n; i++) {
            bool found = false;
            for (int j = 0; j < L.nk && !found; j++)
                for (int p = 0; p < L.k[j].gen->nparams; p++)
                    found |= !strcmp(L.k[j].gen->params[p].name, o.sets[s].d[i].name);
            if (!found) {
                diag_plain(&d, DIAG_ERROR, "perfc lib: size %s is not a parameter of any exported kernel",
                           o.sets[s].d[i].name);
                status = 1;
            }
        }
    for (int i = 0; !status && i < L.nk; i++) {
        bool skip;
        for (int s = 0; !status && s < o.nsets; s++)
            if (!build_variant(&L, &L.k[i], &o.sets[s], false, &skip))
                status = 1;
        if (!status && !build_variant(&L, &L.k[i], NULL, true, &skip))
            status = 1;
        for (int s = 0; !status && L.ngpu && s < o.nsets; s++)
            lib_cuda_variants(&L, &L.k[i], &o.sets[s], false);
        if (!status && L.ngpu)
            lib_cuda_variants(&L, &L.k[i], NULL, true);
    }
    if (!status && !build(&L))
        status = 1;
    if (d.nerrors && !status)
        status = 1;
    if (L.tmp) {
        if (o.keep) {
            fprintf(stderr, "perfc lib: build folder kept: %s\n", L.tmp);
        } else {
            remove_tree(L.tmp, L.objs, L.nobjs);
            char hn[300], cn[300];
            snprintf(hn, sizeof hn, "%s.h", o.name);
            snprintf(cn, sizeof cn, "%s_lib.c", o.name);
            char *a = path_in(L.tmp, hn), *b = path_in(L.tmp, cn);
            remove(a);
            remove(b);
            free(a);
            free(b);
            if (rmdir(L.tmp) != 0 && status == 0)
                fprintf(stderr, "perfc lib: note: could not remove the build folder %s\n", L.tmp);
        }
        free(L.tmp);
    }
    diag_flush(&d, stderr);
    diag_free(&d);
    for (int i = 0; i < L.nk; i++) {
        for (int v = 0; v < L.k[i].nvar; v++) {
            for (int is = 0; is < LIB_MAX_ISAS; is++)
                free(L.k[i].var[v].sym[is]);
            free(L.k[i].var[v].values);
            free(L.k[i].var[v].priv);
            free(L.k[i].var[v].temp_bytes);
        }
        free(L.k[i].var);
        lib_cuda_free(&L.k[i]);
        free(L.k[i].name);
        ir_free(L.k[i].gen);
    }
    free(L.k);
    free(L.targets);
    arena_free(L.arena);
    for (int i = 0; i < L.nobjs; i++)
        free(L.objs[i]);
    free(L.objs);
    opts_free(&o);
    return status;
}
