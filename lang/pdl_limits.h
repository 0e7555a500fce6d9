/* The limits perfc enforces on its input, in one place, so each is checked before
 * the work it protects starts and reported as a clear error instead of exhausting
 * memory or time.  docs/language.md ("Limits") lists them for users. */
#ifndef PERFC_LANG_PDL_LIMITS_H
#define PERFC_LANG_PDL_LIMITS_H

enum {
    PDL_MAX_INPUT_BYTES = 8 << 20, /* a .pdl file (stdlib files are a few kB) */
    PDL_MAX_STMTS = 2000,          /* statements of one kernel, temporaries' included */
    PDL_MAX_TENSORS = 4000,        /* tensors declared in one kernel */
    PDL_MAX_KERNELS = 1000,        /* kernels in one file */
    PDL_MAX_SCHED_ITEMS = 1000,    /* statements of one schedule block or -s text */
    PDL_MAX_RANK = 8,              /* dimensions of a tensor */
    PDL_MAX_INDICES = 16,          /* indices of one statement: the depth of its loop nest */
    PDL_MAX_PARAMS = 64,           /* size parameters of one kernel */
    PDL_MAX_LOOP_DEPTH = 64,       /* loops nested after scheduling (stdlib: at most ~20) */
    PDL_MAX_IR_NODES = 100000,     /* loops, guards and statements after scheduling */
    PDL_MAX_EXPR_NODES = 100000,   /* operations and operands in one kernel: 300 000 took
                                      LLVM 20 s on a busy 2-core machine */
};

#endif
