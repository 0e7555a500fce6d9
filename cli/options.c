/* Command-line parsing for perfc.  Every documented option (`perfc --help`, README) keeps
 * its spelling; each error names the option and says what it expects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "lang/dtype.h"
#include "lang/util.h"
#include "options.h"

void options_usage(FILE *f)
{
    fputs("usage: perfc FILE.pdl [options]\n"
          "       perfc lib FILE.pdl... -o DIR/NAME [options]   a library to link (perfc lib --help)\n"
          "\n"
          "Compiles the tensor kernels of a PDL file; validates and times them with --run.\n"
          "\n"
          "  -target T        host (default), x86_64[-avx2|-avx512], aarch64[-sve], riscv64[-v],\n"
          "                   sm_80, sm_86, sm_89, sm_90, sm_90a, interp (the f64 reference interpreter)\n"
          "  -emit K          ast, ir, llvm, asm, obj, cuda, ptx, cubin, report (default report)\n"
          "  -o FILE          write the output to FILE\n"
          "  -k NAME          which kernel of the file (default: the first)\n"
          "  -D NAME=VALUE    bind a size parameter (a number) or a dtype parameter (f32, bf16...); repeatable\n"
          "  -s 'STMTS'       schedule statements applied after the file's own schedule; repeatable\n"
          "  --schedule NAME  apply the file's schedule variant NAME (`schedule K for T as NAME`)\n"
          "  --no-schedule    ignore the file's schedule blocks (and no default schedule)\n"
          "  --no-default-schedule  a CPU contraction without a schedule is not given the default one\n"
          "  --actions        list every transformation legal on the (scheduled) kernel now\n"
          "  -dump-after=PASS print the IR after a pipeline pass (PASS=all for every pass)\n"
          "  --run            compile, validate against golden outputs, time, report\n"
          "  --compare LIB    openblas or cublas: run the library on the same work, report the ratio\n"
          "  --autotune       search schedules (--budget N, --time SECONDS, --db FILE)\n"
          "  --threads N      CPU threads for the kernel and the CPU baseline (default: all cores)\n"
          "  --seed N         seed of the random inputs (default: fresh each run)\n"
          "  --json           the report as one JSON object on stdout\n"
          "  --verbose        the harness says on stderr what each check and phase took\n"
          "  --quiet          no progress on stderr (by default a status line on a terminal, else a line per phase)\n"
          "  --plot FILE.svg  draw the run: the kernel on the machine's roofline; for --autotune the search too\n"
          "  --inputs F       with --run: the inputs from F.npz (or a folder of NAME.npy), not random ones\n"
          "  --save-inputs F  with --run: write the inputs used to F.npz\n"
          "  --save-outputs F with --run: write the kernel's outputs (last validation run) to F.npz\n"
          "  --no-model       --autotune without the cost model fitted from the tuning database\n"
          "  -Werror          treat warnings as errors\n"
          "  --help, --version\n"
          "\n"
          "Exit status: 0 success; 1 usage or compile error; 2 validation failed; 3 runtime or device error.\n",
          f);
}

static bool parse_int(const char *s, int64_t *v)
{
    if (!s || !*s)
        return false;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 0);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

/* A -D value: decimal digits only, no sign, no leading zero (`010` is not read as
 * octal 8, nor `0x10` as 16: both are refused), at most 2^63-1.  Returns NULL or
 * what is wrong. */
static const char *parse_size(const char *s, int64_t *v)
{
    if (!*s)
        return "the value is empty";
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return *p == '-' ? "a size is never negative" : "the value must be a decimal integer";
        if (x > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10)
            return "the value is too large (the limit is 2^63-1)";
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (s[0] == '0' && s[1])
        return "write the value in decimal without leading zeros (perfc does not read octal or hex)";
    *v = (int64_t)x;
    return NULL;
}

static const struct {
    const char *name;
    EmitKind kind;
} emits[] = {
    {"report", EMIT_REPORT}, {"ast", EMIT_AST}, {"ir", EMIT_IR}, {"llvm", EMIT_LLVM}, {"asm", EMIT_ASM},
    {"obj", EMIT_OBJ}, {"cuda", EMIT_CUDA}, {"ptx", EMIT_PTX}, {"cubin", EMIT_CUBIN},
};

static int usage_error(const char *fmt, const char *arg)
{
    fputs("perfc: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(perfc --help lists the options)\n", stderr);
    return 1;
}

int options_parse(Options *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->target = "host";
    o->emit = EMIT_REPORT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT()                                                          \
    do {                                                                \
        if (i + 1 >= argc)                                              \
            return usage_error("option %s needs a value", a);           \
        i++;                                                            \
    } while (0)
        int64_t v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            options_usage(stdout);
            return -1;
        } else if (!strcmp(a, "--version")) {
            printf("perfc %s\n", PERFC_VERSION);
            return -1;
        } else if (!strcmp(a, "-target") || !strcmp(a, "--target")) {
            NEXT();
            o->target = argv[i];
        } else if (!strcmp(a, "-emit") || !strcmp(a, "--emit")) {
            NEXT();
            size_t n = sizeof emits / sizeof emits[0], j;
            for (j = 0; j < n; j++)
                if (!strcmp(argv[i], emits[j].name))
                    break;
            if (j == n)
                return usage_error("-emit takes ast, ir, llvm, asm, obj, cuda, ptx, cubin or report, not '%s'", argv[i]);
            o->emit = emits[j].kind;
            o->emit_given = true;
        } else if (!strcmp(a, "-o")) {
            NEXT();
            o->out = argv[i];
        } else if (!strcmp(a, "-k")) {
            NEXT();
            o->kernel = argv[i];
        } else if (!strncmp(a, "-D", 2)) {
            const char *def = a + 2;
            if (!*def) {
                NEXT();
                def = argv[i];
            }
            const char *eq = strchr(def, '=');
            if (!eq || eq == def)
                return usage_error("-D takes NAME=VALUE, not '%s'", def);
            /* a value that starts with a letter is a dtype, for a dtype parameter */
            const char *val = eq + 1, *dt = NULL, *why = NULL;
            if ((*val >= 'a' && *val <= 'z') || (*val >= 'A' && *val <= 'Z') || *val == '_') {
                DType t = dtype_from_name(val);
                if (t == DT_COUNT) {
                    fprintf(stderr, "perfc: error: -D %s: '%s' is neither a size (decimal digits) nor a dtype (f64, "
                            "f32, f16, bf16, i32)\n(perfc --help lists the options)\n", def, val);
                    return 1;
                }
                dt = dtype_name(t);
                v = 0;
            } else {
                why = parse_size(val, &v);
            }
            if (why) {
                fprintf(stderr, "perfc: error: -D %s: %s\n(perfc --help lists the options)\n", def, why);
                return 1;
            }
            if (o->ndefines == MAX_DEFINES)
                return usage_error("too many -D options (the limit is %s)", "64");
            char *name = xmalloc((size_t)(eq - def) + 1);
            memcpy(name, def, (size_t)(eq - def));
            name[eq - def] = 0;
            o->defines[o->ndefines].name = name;
            o->defines[o->ndefines].dtype = dt;
            o->defines[o->ndefines++].value = v;
        } else if (!strcmp(a, "-s")) {
            NEXT();
            if (o->nscheds == MAX_SCHEDS)
                return usage_error("too many -s options (the limit is %s)", "32");
            o->scheds[o->nscheds++] = argv[i];
        } else if (!strcmp(a, "--schedule")) {
            NEXT();
            o->variant = argv[i];
        } else if (!strcmp(a, "--no-schedule")) {
            o->no_schedule = true;
        } else if (!strcmp(a, "--no-default-schedule")) {
            o->no_default_schedule = true;
        } else if (!strcmp(a, "--actions")) {
            o->actions = true;
        } else if (!strncmp(a, "-dump-after=", 12) || !strncmp(a, "--dump-after=", 13)) {
            o->dump_after = strchr(a, '=') + 1;
        } else if (!strcmp(a, "--run")) {
            o->run = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "-Werror")) {
            o->werror = true;
        } else if (!strcmp(a, "--compare")) {
            NEXT();
            if (strcmp(argv[i], "openblas") && strcmp(argv[i], "cublas"))
                return usage_error("--compare takes openblas or cublas, not '%s'", argv[i]);
            o->compare = argv[i];
            o->run = true;
        } else if (!strcmp(a, "--autotune")) {
            o->autotune = true;
        } else if (!strcmp(a, "--budget")) {
            NEXT();
            if (!parse_int(argv[i], &v) || v <= 0)
                return usage_error("--budget takes a positive number of candidates, not '%s'", argv[i]);
            o->budget = (int)v;
        } else if (!strcmp(a, "--time")) {
            NEXT();
            char *end;
            o->time_limit = strtod(argv[i], &end);
            if (*end || o->time_limit <= 0)
                return usage_error("--time takes a positive number of seconds, not '%s'", argv[i]);
        } else if (!strcmp(a, "--db")) {
            NEXT();
            o->db = argv[i];
        } else if (!strcmp(a, "--threads")) {
            NEXT();
            if (!parse_int(argv[i], &v) || v <= 0 || v > 4096)
                return usage_error("--threads takes a positive number, not '%s'", argv[i]);
            o->threads = (int)v;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--no-model")) {
            o->no_model = true;
        } else if (!strcmp(a, "--plot")) {
            NEXT();
            o->plot = argv[i];
        } else if (!strcmp(a, "--inputs") || !strcmp(a, "--save-inputs") || !strcmp(a, "--save-outputs")) {
            NEXT();
            *(a[2] == 'i' ? &o->inputs : a[7] == 'i' ? &o->save_inputs : &o->save_outputs) = argv[i];
        } else if (!strcmp(a, "--seed")) {
            NEXT();
            if (!parse_int(argv[i], &v))
                return usage_error("--seed takes an integer, not '%s'", argv[i]);
            o->seed = (uint64_t)v;
            o->seed_given = true;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (o->file) {
            return usage_error("more than one input file ('%s')", a);
        } else {
            o->file = a;
        }
#undef NEXT
    }
    if (!o->file)
        return usage_error("no input file%s", "");
    if (o->variant && o->no_schedule)
        return usage_error("--schedule %s and --no-schedule exclude each other", o->variant);
    if ((o->inputs || o->save_inputs || o->save_outputs) && !o->run)
        return usage_error("--inputs, --save-inputs and --save-outputs go with --run%s", "");
    return 0;
}

void options_free(Options *o)
{
    for (int i = 0; i < o->ndefines; i++)
        free((char *)o->defines[i].name);
    o->ndefines = 0;
}
