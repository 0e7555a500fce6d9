/* NumPy files in and out of a run (runtime/npy.c): `--inputs FILE.npz|DIR` gives a
 * kernel its inputs, `--save-inputs`/`--save-outputs FILE.npz` write what a run used
 * and produced.  docs/harness.md "Data from and to files". */
#ifndef PERFC_RUNTIME_NPY_H
#define PERFC_RUNTIME_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lang/diag.h"
#include "../lang/dtype.h"

/* The largest .npy header perfc reads: NumPy writes a few hundred bytes; a header
 * that claims more is a malformed (or hostile) file, refused before any allocation. */
#define NPY_MAX_HEADER 65536

/* A parsed .npy header: the element type as NumPy spells it ("<f4"), the shape, and
 * where the data starts in the bytes given to npy_parse_header. */
typedef struct NpyHeader {
    char descr[16];
    bool fortran;
    int rank;
    int64_t shape[32];
    size_t data_off;
} NpyHeader;

/* Parses the header of .npy bytes p[0..n); false with a reason in err. */
bool npy_parse_header(const unsigned char *p, size_t n, NpyHeader *h, char *err, size_t errn);

/* Reads array NAME from path (an .npz archive holding NAME.npy, or a folder holding
 * NAME.npy) into out[0..count) as doubles, after checking that its dtype is
 * exactly t's (bf16: float32 values that bf16 holds exactly) and its shape exactly
 * shape[0..rank).  false with one error naming the file, the array and the fault. */
bool npy_load(const char *path, const char *name, DType t, int rank, const int64_t *shape, double *out,
              int64_t count, Diags *d);

/* One array to write. */
typedef struct NpyOut {
    const char *name;
    DType t;                /* written as its NumPy dtype; bf16 as float32 */
    int rank;
    const int64_t *shape;
    const double *values;   /* count = the product of shape */
} NpyOut;

/* Writes the arrays as an uncompressed .npz archive (numpy.load reads it); false
 * with an error (nothing is left at path then). */
bool npz_write(const char *path, const NpyOut *arrays, int n, Diags *d);

/* The same for a kernel's buffers (their shapes evaluated with its bound sizes):
 * input b from path into out[0..n); every buffer of the given kind whose values[id]
 * is not NULL into an .npz at path. */
struct Kernel;
struct Buffer;
bool rt_npy_load_input(const struct Kernel *k, const struct Buffer *b, const char *path, double *out, int64_t n,
                       Diags *d);
bool rt_npz_save(const struct Kernel *k, const char *path, int kind, double *const *values, Diags *d);

#endif
