/* Helpers shared by the transformation tests: load a stdlib kernel with sizes,
 * apply schedule text, and compare two kernels by interpreting (and, on request,
 * JIT-compiling) them on the same seeded inputs. */
#ifndef PERFC_TESTS_XFTEST_H
#define PERFC_TESTS_XFTEST_H

#include "ir/ir.h"
#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"

typedef struct XtFile {
    Arena *arena;
    Source src;
    char *text;
    Program *prog;
} XtFile;

/* Parses and checks a .pdl file; false with the diagnostics printed. */
bool xt_open(XtFile *f, const char *path);
void xt_close(XtFile *f);
/* Lowers kernel kname (NULL: the first) with "M=5,N=7" style sizes (missing ones
 * get `dflt`). */
Kernel *xt_lower(XtFile *f, const char *kname, const char *defs, int64_t dflt);
/* The same, then the file's schedule blocks that match `target` (as perfc applies
 * them for -target TARGET); NULL with the diagnostics printed when one is refused. */
Kernel *xt_lower_scheduled(XtFile *f, const char *kname, const char *defs, const char *target);
/* Applies schedule statements given as text; the diagnostics go to d. */
bool xt_schedule(Kernel *k, const char *text, Diags *d);
/* Runs both kernels in the interpreter on the same inputs; returns the largest
 * output error relative to the output's largest magnitude, or +inf on a failed
 * run or an element one writes and the other does not (NaN positions). */
double xt_interp_diff(const Kernel *ref, const Kernel *k, uint64_t seed, StrBuf *why);
/* The same with k JIT-compiled (storage precision) against ref interpreted;
 * returns -1 when the JIT is unavailable. */
double xt_jit_diff(const Kernel *ref, const Kernel *k, uint64_t seed, StrBuf *why);

#endif
