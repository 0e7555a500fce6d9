/* The perfc command line: every documented option, parsed into one
 * struct.  cli/options.c parses; cli/main.c drives the pipeline. */
#ifndef PERFC_CLI_OPTIONS_H
#define PERFC_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum EmitKind {
    EMIT_REPORT, EMIT_AST, EMIT_IR, EMIT_LLVM, EMIT_ASM, EMIT_OBJ, EMIT_CUDA, EMIT_PTX, EMIT_CUBIN
} EmitKind;

typedef struct Define {
    const char *name;
    int64_t value;
    const char *dtype;         /* -D T=bf16: a dtype parameter's value (a dtype name); NULL for a size */
} Define;

enum { MAX_DEFINES = 64, MAX_SCHEDS = 32 };

typedef struct Options {
    const char *file;
    const char *target;        /* default "host" */
    EmitKind emit;
    bool emit_given;
    const char *out;           /* -o */
    const char *kernel;        /* -k */
    const char *variant;       /* --schedule NAME: the file's schedule blocks `as NAME` instead of the unnamed ones */
    Define defines[MAX_DEFINES];
    int ndefines;
    const char *scheds[MAX_SCHEDS]; /* -s, in order */
    int nscheds;
    bool run, json, autotune, actions, no_schedule, werror, verbose;
    bool quiet;                /* no progress on stderr */
    bool no_model;             /* --autotune without the cost model */
    bool no_default_schedule;  /* --no-default-schedule: a contraction without a schedule stays unscheduled */
    const char *plot;          /* --plot FILE.svg */
    const char *inputs, *save_inputs, *save_outputs; /* --inputs, --save-inputs, --save-outputs (.npz) */
    const char *compare;
    const char *dump_after;
    const char *db;
    int budget;
    double time_limit;
    int threads;               /* 0: all cores */
    uint64_t seed;
    bool seed_given;
} Options;

/* Returns 0 to go on, 1 on a usage error (reported on stderr), -1 when --help or
 * --version was answered. */
int options_parse(Options *o, int argc, char **argv);
void options_usage(FILE *f);
void options_free(Options *o);

#endif
