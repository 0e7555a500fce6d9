/* dtype table, promotion rules and exact half-precision conversions. */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    int bytes;
    bool isfloat, visible;
} dtypes[] = {
#define X(id, name, bytes, isf, vis) {name, bytes, isf, vis},
    PF_DTYPES(X)
#undef X
};

const char *dtype_name(DType t)
{
    return t < DT_COUNT ? dtypes[t].name : "?";
}

int dtype_bytes(DType t)
{
    return dtypes[t].bytes;
}

bool dtype_is_float(DType t)
{
    return dtypes[t].isfloat;
}

DType dtype_from_name(const char *s)
{
    for (int i = 0; i < DT_COUNT; i++)
        if (dtypes[i].visible && strcmp(dtypes[i].name, s) == 0)
            return (DType)i;
    return DT_COUNT;
}

static int float_rank(DType t)
{
    switch (t) {
    case DT_F64: return 4;
    case DT_F32: return 3;
    case DT_F16:
    case DT_BF16: return 2;
    default: return 0;
    }
}

DType dtype_promote(DType a, DType b)
{
    if (a == b)
        return a == DT_BOOL ? DT_I32 : a;
    int ra = float_rank(a), rb = float_rank(b);
    if (ra || rb) {
        if (ra == 2 && rb == 2)
            return DT_F32; /* f16 with bf16: neither holds the other */
        return ra >= rb ? a : b;
    }
    if (a == DT_I64 || b == DT_I64)
        return DT_I64;
    return DT_I32;
}

DType dtype_compute(DType t)
{
    return (t == DT_F16 || t == DT_BF16) ? DT_F32 : t;
}

uint16_t f32_to_f16_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent, which is the right answer */
    return (uint16_t)h;
}

float f16_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t f32_to_bf16_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

float bf16_bits_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

double dtype_round(double v, DType t)
{
    switch (t) {
    case DT_F64: return v;
    case DT_F32: return (double)(float)v;
    case DT_F16: return (double)f16_bits_to_f32(f32_to_f16_bits((float)v));
    case DT_BF16: return (double)bf16_bits_to_f32(f32_to_bf16_bits((float)v));
    case DT_I32:
        if (isnan(v)) return 0;
        if (v >= 2147483647.0) return 2147483647.0;
        if (v <= -2147483648.0) return -2147483648.0;
        return trunc(v);
    case DT_I64: return trunc(v);
    case DT_BOOL: return v != 0;
    default: return v;
    }
}
