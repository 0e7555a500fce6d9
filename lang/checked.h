/* Checked 64-bit arithmetic for sizes, extents, element counts and byte counts.
 *
 * Every size perfc computes from user input (shapes, ranges, -D values, element
 * counts times element sizes) goes through these helpers, so an overflow is a
 * value the caller sees and reports with the source span it came from, never
 * undefined behaviour or a wrapped number.  Each returns true and stores the result
 * when it is exact, false (leaving *out alone) otherwise.  Division and modulo are
 * the IR's: floor division and floor modulo; a zero divisor and INT64_MIN / -1 fail.
 * It sits in lang/ (the bottom of the include order) so that the front end, the IR
 * and the runtime share one definition. */
#ifndef PERFC_LANG_CHECKED_H
#define PERFC_LANG_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool ck_add(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

static inline bool ck_sub(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

static inline bool ck_mul(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

static inline bool ck_neg(int64_t a, int64_t *out)
{
    if (a == INT64_MIN)
        return false;
    *out = -a;
    return true;
}

/* Floor division: rounds toward minus infinity, as the IR does. */
static inline bool ck_floordiv(int64_t a, int64_t b, int64_t *out)
{
    if (b == 0 || (a == INT64_MIN && b == -1))
        return false;
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    *out = q;
    return true;
}

/* Floor modulo: the result has the divisor's sign. */
static inline bool ck_floormod(int64_t a, int64_t b, int64_t *out)
{
    if (b == 0)
        return false;
    if (b == -1) { /* INT64_MIN % -1 traps on x86 */
        *out = 0;
        return true;
    }
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    *out = r;
    return true;
}

/* Bytes of n elements of `size` bytes each, as a size_t; false when n is negative
 * or the product does not fit (in size_t, or in int64_t, which every count that
 * reaches an allocation must also fit). */
static inline bool ck_bytes(int64_t n, size_t size, size_t *out)
{
    int64_t r;
    if (n < 0 || size > (size_t)INT64_MAX || __builtin_mul_overflow(n, (int64_t)size, &r))
        return false;
    if ((uint64_t)r > (uint64_t)SIZE_MAX)
        return false;
    *out = (size_t)r;
    return true;
}

/* n * size for size_t operands (array allocations): false on overflow. */
static inline bool ck_size_mul(size_t n, size_t size, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(n, size, &r))
        return false;
    *out = r;
    return true;
}

#endif
