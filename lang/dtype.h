/* Element types, as one X-macro table shared by the front end, the IR, the
 * interpreter and both code generators.  Also the exact f16/bf16 conversions that
 * the interpreter and the harness use to round inputs to their storage format. */
#ifndef PERFC_LANG_DTYPE_H
#define PERFC_LANG_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

/*        id     spelling bytes float  visible in PDL */
#define PF_DTYPES(X)                 \
    X(F64, "f64", 8, 1, 1)          \
    X(F32, "f32", 4, 1, 1)          \
    X(F16, "f16", 2, 1, 1)          \
    X(BF16, "bf16", 2, 1, 1)        \
    X(I32, "i32", 4, 0, 1)          \
    X(I64, "i64", 8, 0, 0) /* index arithmetic */ \
    X(BOOL, "bool", 1, 0, 0) /* comparisons and masks */

typedef enum DType {
#define X(id, name, bytes, isf, vis) DT_##id,
    PF_DTYPES(X)
#undef X
    DT_COUNT
} DType;

const char *dtype_name(DType t);
int dtype_bytes(DType t);
bool dtype_is_float(DType t);
/* DT_COUNT when the spelling names no PDL-visible dtype. */
DType dtype_from_name(const char *s);

/* Promotion for arithmetic between two operands: the wider float wins; f16 with
 * bf16 meets at f32; a float with an int is the float; two ints are i32 unless one
 * is i64. */
DType dtype_promote(DType a, DType b);
/* The type arithmetic is carried out in when the result is stored as `t`:
 * f16 and bf16 compute in f32 (loaded and stored in their own format). */
DType dtype_compute(DType t);

/* Round a double to what the storage type can hold (exact IEEE round-to-nearest-even
 * for f16 and bf16, truncation toward zero with saturation for i32). */
double dtype_round(double v, DType t);

uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t h);

#endif
