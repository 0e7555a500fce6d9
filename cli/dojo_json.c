/* The dojo's JSON: a strict reader for the requests of the protocol and the records
 * of --replay, and two writer helpers beside sb_json_str (lang/util.c), the tree's
 * one string writer.
 *
 * The reader takes untrusted input from any client, so it is RFC 8259 to the letter
 * and bounded: nesting deeper than DOJO_MAX_DEPTH is refused before it can grow the
 * C stack, the caller limits the text's length (DOJO_MAX_LINE), strings may not hold
 * NUL (the rest of perfc works on C strings), escapes must form valid code points
 * (no lone surrogates) and raw bytes must be well-formed UTF-8, and an object may
 * not name a key twice (which of two values a client meant is not guessable). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dojo.h"

typedef struct P {
    const char *s;
    size_t len, at;
    char *err;
    size_t errlen;
    bool failed;
} P;

static bool fail(P *p, const char *msg)
{
    if (!p->failed)
        snprintf(p->err, p->errlen, "%s at byte %zu", msg, p->at);
    p->failed = true;
    return false;
}

static void ws(P *p)
{
    while (p->at < p->len &&
           (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' || p->s[p->at] == '\r'))
        p->at++;
}

static bool lit(P *p, const char *w)
{
    size_t n = strlen(w);
    if (p->len - p->at < n || memcmp(p->s + p->at, w, n))
        return fail(p, "invalid literal");
    p->at += n;
    return true;
}

static int hex4(P *p)
{
    if (p->len - p->at < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->at + i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    p->at += 4;
    return v;
}

static void put_utf8(StrBuf *b, unsigned cp)
{
    if (cp < 0x80) {
        sb_putc(b, (char)cp);
    } else if (cp < 0x800) {
        sb_putc(b, (char)(0xc0 | cp >> 6));
        sb_putc(b, (char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        sb_putc(b, (char)(0xe0 | cp >> 12));
        sb_putc(b, (char)(0x80 | (cp >> 6 & 0x3f)));
        sb_putc(b, (char)(0x80 | (cp & 0x3f)));
    } else {
        sb_putc(b, (char)(0xf0 | cp >> 18));
        sb_putc(b, (char)(0x80 | (cp >> 12 & 0x3f)));
        sb_putc(b, (char)(0x80 | (cp >> 6 & 0x3f)));
        sb_putc(b, (char)(0x80 | (cp & 0x3f)));
    }
}

/* A raw (unescaped) multi-byte sequence: its length when well-formed UTF-8, else 0. */
static size_t raw_utf8(const unsigned char *s, size_t left)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (!n || s[0] > 0xf4 || n > left)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
        (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

static char *string(P *p)
{
    p->at++; /* opening quote */
    StrBuf b = {0};
    sb_puts(&b, "");
    for (;;) {
        if (p->at >= p->len) {
            fail(p, "unterminated string");
            break;
        }
        unsigned char c = (unsigned char)p->s[p->at];
        if (c == '"') {
            p->at++;
            return b.s;
        }
        if (c < 0x20) {
            fail(p, "control character in a string");
            break;
        }
        if (c >= 0x80) {
            size_t n = raw_utf8((const unsigned char *)p->s + p->at, p->len - p->at);
            if (!n) {
                fail(p, "invalid UTF-8 in a string");
                break;
            }
            for (size_t i = 0; i < n; i++)
                sb_putc(&b, p->s[p->at + i]);
            p->at += n;
            continue;
        }
        if (c != '\\') {
            sb_putc(&b, (char)c);
            p->at++;
            continue;
        }
        p->at++;
        if (p->at >= p->len) {
            fail(p, "unterminated escape");
            break;
        }
        char e = p->s[p->at++];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *q = e ? strchr(from, e) : NULL;
        if (q) {
            sb_putc(&b, to[q - from]);
            continue;
        }
        if (e != 'u') {
            fail(p, "invalid escape");
            break;
        }
        int cp = hex4(p);
        if (cp < 0) {
            fail(p, "invalid \\u escape");
            break;
        }
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            fail(p, "lone low surrogate");
            break;
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            int lo = -1;
            if (p->len - p->at >= 2 && p->s[p->at] == '\\' && p->s[p->at + 1] == 'u') {
                p->at += 2;
                lo = hex4(p);
            }
            if (lo < 0xdc00 || lo > 0xdfff) {
                fail(p, "lone high surrogate");
                break;
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (cp == 0) {
            fail(p, "NUL in a string");
            break;
        }
        put_utf8(&b, (unsigned)cp);
    }
    sb_free(&b);
    return NULL;
}

static bool number(P *p, Jv *v)
{
    size_t st = p->at;
    bool integral = true;
    if (p->at < p->len && p->s[p->at] == '-')
        p->at++;
    if (p->at >= p->len || p->s[p->at] < '0' || p->s[p->at] > '9')
        return fail(p, "invalid number");
    if (p->s[p->at] == '0') {
        p->at++;
        if (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
            return fail(p, "leading zero in a number");
    } else {
        while (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
            p->at++;
    }
    if (p->at < p->len && p->s[p->at] == '.') {
        integral = false;
        p->at++;
        if (p->at >= p->len || p->s[p->at] < '0' || p->s[p->at] > '9')
            return fail(p, "digit expected after '.'");
        while (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
            p->at++;
    }
    if (p->at < p->len && (p->s[p->at] == 'e' || p->s[p->at] == 'E')) {
        integral = false;
        p->at++;
        if (p->at < p->len && (p->s[p->at] == '+' || p->s[p->at] == '-'))
            p->at++;
        if (p->at >= p->len || p->s[p->at] < '0' || p->s[p->at] > '9')
            return fail(p, "digit expected in an exponent");
        while (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
            p->at++;
    }
    char buf[64];
    size_t n = p->at - st;
    if (n >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, p->s + st, n);
    buf[n] = 0;
    v->kind = JV_NUM;
    v->num = strtod(buf, NULL);
    if (integral && n <= 18) {
        v->is_int = true;
        v->i = strtoll(buf, NULL, 10);
    }
    return true;
}

static Jv *value(P *p, int depth);

static Jv *container(P *p, int depth, bool obj)
{
    Jv *v = xcalloc(1, sizeof *v);
    v->kind = obj ? JV_OBJ : JV_ARR;
    if (depth >= DOJO_MAX_DEPTH) {
        fail(p, "nesting too deep");
        return v;
    }
    p->at++;
    ws(p);
    char close = obj ? '}' : ']';
    if (p->at < p->len && p->s[p->at] == close) {
        p->at++;
        return v;
    }
    int cap = 0;
    for (;;) {
        char *key = NULL;
        if (obj) {
            ws(p);
            if (p->at >= p->len || p->s[p->at] != '"') {
                fail(p, "object key expected");
                return v;
            }
            key = string(p);
            if (!key)
                return v;
            for (int i = 0; i < v->n; i++)
                if (!strcmp(v->keys[i], key)) {
                    free(key);
                    fail(p, "duplicate key");
                    return v;
                }
            ws(p);
            if (p->at >= p->len || p->s[p->at] != ':') {
                free(key);
                fail(p, "':' expected");
                return v;
            }
            p->at++;
        }
        Jv *item = value(p, depth + 1);
        if (v->n == cap) {
            cap = cap ? cap * 2 : 4;
            v->items = xrealloc(v->items, sizeof *v->items * (size_t)cap);
            if (obj)
                v->keys = xrealloc(v->keys, sizeof *v->keys * (size_t)cap);
        }
        if (obj)
            v->keys[v->n] = key;
        v->items[v->n++] = item;
        if (p->failed)
            return v;
        ws(p);
        if (p->at < p->len && p->s[p->at] == ',') {
            p->at++;
            continue;
        }
        if (p->at < p->len && p->s[p->at] == close) {
            p->at++;
            return v;
        }
        fail(p, obj ? "',' or '}' expected" : "',' or ']' expected");
        return v;
    }
}

static Jv *value(P *p, int depth)
{
    ws(p);
    if (p->at >= p->len) {
        fail(p, "value expected");
        return xcalloc(1, sizeof(Jv));
    }
    char c = p->s[p->at];
    if (c == '{' || c == '[')
        return container(p, depth, c == '{');
    Jv *v = xcalloc(1, sizeof *v);
    if (c == '"') {
        v->kind = JV_STR;
        v->str = string(p);
    } else if (c == 't') {
        v->kind = JV_BOOL;
        v->b = lit(p, "true");
    } else if (c == 'f') {
        v->kind = JV_BOOL;
        lit(p, "false");
    } else if (c == 'n') {
        lit(p, "null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        number(p, v);
    } else {
        fail(p, "unexpected character");
    }
    return v;
}

Jv *jv_parse(const char *text, size_t len, char *err, size_t errlen)
{
    P p = {.s = text, .len = len, .err = err, .errlen = errlen};
    if (memchr(text, 0, len)) {
        p.at = (size_t)((const char *)memchr(text, 0, len) - text);
        fail(&p, "NUL byte");
        return NULL;
    }
    Jv *v = value(&p, 0);
    if (!p.failed) {
        ws(&p);
        if (p.at != p.len)
            fail(&p, "trailing data after the value");
    }
    if (p.failed) {
        jv_free(v);
        return NULL;
    }
    return v;
}

void jv_free(Jv *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++) {
        jv_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const Jv *jv_get(const Jv *obj, const char *key)
{
    if (!obj || obj->kind != JV_OBJ)
        return NULL;
    for (int i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return obj->items[i];
    return NULL;
}

const char *jv_str(const Jv *obj, const char *key, bool *bad)
{
    const Jv *v = jv_get(obj, key);
    if (!v || v->kind == JV_NULL)
        return NULL;
    if (v->kind != JV_STR) {
        *bad = true;
        return NULL;
    }
    return v->str;
}

void jw_key(StrBuf *b, const char *key, bool *first)
{
    if (!*first)
        sb_putc(b, ',');
    *first = false;
    sb_json_str(b, key);
    sb_putc(b, ':');
}

void jw_num(StrBuf *b, double v)
{
    if (isfinite(v))
        sb_printf(b, "%.6g", v);
    else
        sb_puts(b, "null");
}
