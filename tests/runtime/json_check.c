/* json_check: reads one perfc report from stdin and checks it carries every field
 * (rt_test_report_problem).  Arguments: `valid` or `invalid`, optionally `baseline`,
 * and KEY=VALUE pairs that top-level string fields must equal (KEY=PREFIX* for a
 * prefix).  Exit 0 when all hold. */
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

int main(int argc, char **argv)
{
    StrBuf in = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        for (size_t i = 0; i < n; i++)
            sb_putc(&in, buf[i]);
    const char *err = NULL;
    JVal *rep = json_parse(in.s ? in.s : "", &err);
    if (!rep) {
        fprintf(stderr, "json_check: not one JSON value (at: %.40s)\n", err ? err : "");
        return 1;
    }
    bool valid = true, baseline = false;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "valid"))
            valid = true;
        else if (!strcmp(argv[i], "invalid"))
            valid = false;
        else if (!strcmp(argv[i], "baseline"))
            baseline = true;
        else if (strchr(argv[i], '=')) {
            char key[64];
            const char *eq = strchr(argv[i], '=');
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
            const JVal *v = json_get(rep, key);
            /* VALUE ending in '*': a prefix (the sample count in golden varies) */
            size_t len = strlen(eq + 1);
            bool prefix = len && eq[len] == '*';
            if (!v || v->kind != JN_STR || (prefix ? strncmp(v->str, eq + 1, len - 1) : strcmp(v->str, eq + 1)) != 0) {
                fprintf(stderr, "json_check: %s is %s, not %s\n", key, v && v->kind == JN_STR ? v->str : "absent",
                        eq + 1);
                rc = 1;
            }
        }
    }
    const char *problem = rt_test_report_problem(rep, valid, baseline);
    if (problem) {
        fprintf(stderr, "json_check: %s\n%s", problem, in.s);
        rc = 1;
    }
    json_free(rep);
    sb_free(&in);
    return rc;
}
