/* A minimal JSON reader for the runtime tests: enough to prove the report is one
 * well-formed object and to look fields up by name.  Not for production input. */
#ifndef PERFC_TESTS_RUNTIME_JSON_MIN_H
#define PERFC_TESTS_RUNTIME_JSON_MIN_H

#include <stdbool.h>

typedef enum { JN_NULL, JN_BOOL, JN_NUM, JN_STR, JN_ARR, JN_OBJ } JKind;

typedef struct JVal {
    JKind kind;
    bool b;
    double num;
    char *str;
    int n;               /* items of an array or object */
    char **keys;         /* object keys */
    struct JVal **items;
} JVal;

/* The value of the whole text (trailing whitespace allowed, nothing else), or NULL
 * with *err pointing at the offending character. */
JVal *json_parse(const char *text, const char **err);
/* obj[key], or NULL when obj is not an object or has no such key. */
const JVal *json_get(const JVal *obj, const char *key);
void json_free(JVal *v);

#endif
