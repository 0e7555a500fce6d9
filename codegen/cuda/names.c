/* Names in generated CUDA C.
 *
 * Every identifier the CUDA emitter prints that comes from the user (size
 * parameters, buffers, loop variables, the kernel's name in its launches) goes
 * through this file.  A name is printed as written when it is "plain": an ASCII
 * letter, then letters, digits and single underscores, not a C or C++ keyword or
 * alternative token (`bitand`, `compl`), not a macro NVRTC predefines (`NULL`,
 * `assert`, `CUDART_*`), not a CUDA built-in (`threadIdx`, `atomicAdd`, `float4`,
 * `make_float2`), not a function or type the emitter itself prints (`expf`,
 * `idx_t`), and not starting with `pf`, the prefix of everything perfc introduces.
 * Any other name is mangled into `pf` + a kind letter + an escape of its bytes:
 * letters and digits stay, `_` becomes `_u`, `.` becomes `_d`, any other byte `_xHH`.
 *
 * Why that cannot collide: plain names never start with `pf`, mangled ones always
 * do and are distinct from perfc's own `pf_` names (the third character is an
 * upper-case kind letter); the escape is prefix-free, so two different names of
 * one kind never mangle alike, and different kinds differ in the letter.  Names of
 * different kinds that are both plain and equal are separated by the caller, which
 * mangles the later one (cg_cuda_names in emit.c).  No result begins with `_` or
 * holds `__`, the spellings C++ reserves to the implementation. */
#include <string.h>

#include "cg_cuda.h"

static const char *const words[] = {
    /* C11 and C++20 keywords, alternative tokens, contextual keywords */
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "final", "float",
    "for", "friend", "goto", "if", "import", "inline", "int", "long", "module", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "override", "private", "protected",
    "public", "register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed", "sizeof",
    "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
    "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "xor", "xor_eq", "main", "std", "size_t", "ptrdiff_t", "nullptr_t",
    /* macros NVRTC or a C library may predefine */
    "NULL", "EOF", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "assert", "offsetof", "errno", "alloca",
    "va_arg", "va_copy", "va_end", "va_start", "va_list", "NOMINMAX", "STD", "THROWBADALLOC", "linux", "unix",
    "i386", "stdin", "stdout", "stderr",
    /* CUDA built-in variables, types and functions */
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "half", "half2", "nv_bfloat16",
    "printf", "malloc", "free", "memcpy", "memset", "clock", "clock64", "uint", "ushort", "ulong", "uchar",
    "longlong", "ulonglong",
    /* what the emitter prints inside functions */
    "idx_t", "min", "max", "abs", "fabs", "fabsf", "exp", "expf", "log", "logf", "sqrt", "sqrtf", "rsqrt",
    "rsqrtf", "tanh", "tanhf", "erf", "erff", "floor", "floorf", "ceil", "ceilf", "fmax", "fmaxf", "fmin",
    "fminf", "fma", "fmaf", "fmod", "fmodf", "pow", "powf", "isnan", "isinf", "isfinite", "signbit", "copysign",
    "copysignf",
};

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* CUDA's vector types: char1 ... ulonglong4, float1 ... double4. */
static bool vector_type(const char *s)
{
    static const char *const base[] = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                                       "longlong", "ulonglong", "float", "double"};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        size_t n = strlen(base[i]);
        if (strncmp(s, base[i], n) == 0 && s[n] >= '1' && s[n] <= '4' && s[n + 1] == 0)
            return true;
    }
    return false;
}

bool cg_cuda_reserved(const char *s)
{
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(words[i], s) == 0)
            return true;
    /* families: perfc's own names, CUDA's and NVIDIA's macro and API prefixes,
     * constructors and atomics, texture and surface functions */
    static const char *const prefixes[] = {"pf", "cuda", "CUDA", "CU_", "NV_", "nv_", "make_", "atomic",
                                           "tex1D", "tex2D", "tex3D", "surf", "__", "_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (has_prefix(s, prefixes[i]))
            return true;
    if (s[0] == 'c' && s[1] == 'u' && s[2] >= 'A' && s[2] <= 'Z') /* cuMemAlloc, cuLaunch... */
        return true;
    return vector_type(s);
}

bool cg_cuda_plain(const char *s)
{
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok || (c == '_' && p[1] == '_'))
            return false;
    }
    return !cg_cuda_reserved(s);
}

void cg_cuda_mangle(char kind, const char *name, StrBuf *out)
{
    static const char hex[] = "0123456789abcdef";
    sb_putc(out, 'p');
    sb_putc(out, 'f');
    sb_putc(out, kind);
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        unsigned c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            sb_putc(out, (char)c);
        } else if (c == '_') {
            sb_puts(out, "_u");
        } else if (c == '.') {
            sb_puts(out, "_d");
        } else {
            sb_puts(out, "_x");
            sb_putc(out, hex[c >> 4]);
            sb_putc(out, hex[c & 15]);
        }
    }
}

/* Text of a user name for a comment of the generated source: the name itself when it
 * holds only name characters, otherwise only those characters (a comment must not
 * end early or start a preprocessor line). */
void cg_cuda_comment_text(const char *name, StrBuf *out)
{
    for (const char *p = name; *p; p++) {
        char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.')
            sb_putc(out, c);
        else
            sb_putc(out, '?');
    }
}
