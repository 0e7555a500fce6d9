/* Scheduled kernels run as generated code and compared with the interpreter, by the
 * measure and the tolerance of the harness (runtime/harness.c): the relative
 * Frobenius error of each output, every output element finite.  Two ways in: the
 * host JIT in this process, and emitted objects (`-emit obj`) linked into a
 * generated runner that holds the inputs and prints the outputs in hex, run natively
 * or, for AArch64 and RISC-V, under qemu-user.  Objects are batched: one runner per
 * target links every case of a batch, so a link costs once per batch, not per case. */
#ifndef PERFC_TESTS_XFOBJ_H
#define PERFC_TESTS_XFOBJ_H

#include "ir/ir.h"

/* Where objects run: the perfc target, the compiler that links the runner, and the
 * qemu-user binary and CPU (NULL: run natively). */
typedef struct XoTarget {
    const char *name; /* printed */
    const char *target, *cc, *qemu, *cpu;
} XoTarget;
extern const XoTarget xo_targets[];
extern const int xo_ntargets; /* [0] is the host, natively */
/* Whether t's compiler and emulator are installed (checked once). */
bool xo_available(int t);

typedef struct XoCase {
    Kernel *k;        /* scheduled; owned; renamed to a unique symbol by xo_case_new */
    const Kernel *ref; /* unscheduled: its interpreted outputs are the answer */
    int64_t nout;     /* elements in all outputs */
    double *want;     /* the interpreter's outputs, outputs in buffer order */
    void **in;        /* per buffer of k: the input in k's storage type, else NULL */
    size_t *bytes;    /* per buffer of k */
    double tol;       /* the harness's tolerance for ref */
    char tol_why[96];
    char why[1400];   /* the first failure */
    unsigned failed;  /* bit t: failed on xo_targets[t]; bit 31: the JIT */
    double *base;     /* per buffer of ref: the error of ref itself, JIT-compiled, on the
                         same inputs (-1: not measured yet; measured on a failure only) */
} XoCase;

/* Takes ownership of k; runs ref in the interpreter on inputs drawn from seed.  id
 * makes the symbol unique within a batch.  NULL (with why) when the reference run
 * fails. */
XoCase *xo_case_new(Kernel *k, const Kernel *ref, uint64_t seed, int id, char *why, size_t cap);
void xo_case_free(XoCase *c);
/* JIT-compiles the case for the host and compares; false with c->why on a mismatch. */
bool xo_jit(XoCase *c);
/* Emits every case for target t into dir, links one runner, runs it and compares.
 * Returns the number of cases that failed (each gets c->why and its bit).  A case
 * whose object cannot be emitted fails; a runner that cannot be linked or that
 * crashes fails every case of the batch it holds. */
int xo_run_objects(int t, XoCase **cases, int n, const char *dir);

#endif
