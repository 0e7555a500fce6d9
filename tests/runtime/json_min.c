/* Recursive-descent JSON reader (RFC 8259 minus \u escapes beyond ASCII, which
 * the reports never emit).  Test support only. */
#include "json_min.h"

#include <stdlib.h>
#include <string.h>

typedef struct P {
    const char *s;
    const char *err;
} P;

static void ws(P *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
        p->s++;
}

static JVal *mk(JKind k)
{
    JVal *v = calloc(1, sizeof *v);
    if (!v)
        abort();
    v->kind = k;
    return v;
}

static void push(JVal *v, char *key, JVal *item)
{
    v->items = realloc(v->items, sizeof *v->items * (size_t)(v->n + 1));
    v->keys = realloc(v->keys, sizeof *v->keys * (size_t)(v->n + 1));
    if (!v->items || !v->keys)
        abort();
    v->items[v->n] = item;
    v->keys[v->n] = key;
    v->n++;
}

static JVal *value(P *p);

static char *string(P *p)
{
    if (*p->s != '"') {
        p->err = p->s;
        return NULL;
    }
    p->s++;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    if (!out)
        abort();
    for (;;) {
        char c = *p->s++;
        if (c == 0 || (unsigned char)c < 0x20) {
            p->err = p->s - 1;
            free(out);
            return NULL;
        }
        if (c == '"')
            break;
        if (c == '\\') {
            char e = *p->s++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *p->s++;
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                }
                c = (char)(v < 0x80 ? v : '?');
                break;
            }
            default:
                p->err = p->s - 1;
                free(out);
                return NULL;
            }
        }
        if (n + 2 > cap && !(out = realloc(out, cap *= 2)))
            abort();
        out[n++] = c;
    }
    out[n] = 0;
    return out;
}

static JVal *value(P *p)
{
    ws(p);
    const char *s = p->s;
    if (*s == '{' || *s == '[') {
        bool obj = *s == '{';
        JVal *v = mk(obj ? JN_OBJ : JN_ARR);
        p->s++;
        ws(p);
        if (*p->s == (obj ? '}' : ']')) {
            p->s++;
            return v;
        }
        for (;;) {
            char *key = NULL;
            if (obj) {
                ws(p);
                if (!(key = string(p)))
                    break;
                ws(p);
                if (*p->s != ':') {
                    p->err = p->s;
                    free(key);
                    break;
                }
                p->s++;
            }
            JVal *item = value(p);
            if (!item) {
                free(key);
                break;
            }
            push(v, key, item);
            ws(p);
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            if (*p->s == (obj ? '}' : ']')) {
                p->s++;
                return v;
            }
            p->err = p->s;
            break;
        }
        json_free(v);
        return NULL;
    }
    if (*s == '"') {
        char *str = string(p);
        if (!str)
            return NULL;
        JVal *v = mk(JN_STR);
        v->str = str;
        return v;
    }
    if (!strncmp(s, "true", 4) || !strncmp(s, "false", 5)) {
        JVal *v = mk(JN_BOOL);
        v->b = *s == 't';
        p->s += v->b ? 4 : 5;
        return v;
    }
    if (!strncmp(s, "null", 4)) {
        p->s += 4;
        return mk(JN_NULL);
    }
    char *end;
    double d = strtod(s, &end);
    if (end == s || !(*s == '-' || (*s >= '0' && *s <= '9'))) {
        p->err = s;
        return NULL;
    }
    JVal *v = mk(JN_NUM);
    v->num = d;
    p->s = end;
    return v;
}

JVal *json_parse(const char *text, const char **err)
{
    P p = {text, NULL};
    JVal *v = value(&p);
    if (v) {
        ws(&p);
        if (*p.s) {
            p.err = p.s;
            json_free(v);
            v = NULL;
        }
    }
    if (err)
        *err = p.err ? p.err : p.s;
    return v;
}

const JVal *json_get(const JVal *obj, const char *key)
{
    if (!obj || obj->kind != JN_OBJ)
        return NULL;
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return obj->items[i];
    return NULL;
}

void json_free(JVal *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++) {
        json_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}
