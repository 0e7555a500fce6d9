/* The embedding API (perfc.h): compile a kernel written in a string, validate and
 * time it on this machine, print the JSON report. */
#include <stdio.h>

#include <perfc.h>

static const char *source = "kernel axpy(N) {\n"
                            "  in  X: f32[N]\n"
                            "  in  Y: f32[N]\n"
                            "  out Z: f32[N]\n"
                            "  Z[i] = 2.5 * X[i] + Y[i]\n"
                            "}\n";

int main(void)
{
    char *err = NULL, *report = NULL;
    printf("perfc %s (header %s)\n", perfc_version(), PERFC_VERSION_STRING);
    perfc_program *p = perfc_parse(source, "axpy.pdl", &err);
    if (!p) {
        fprintf(stderr, "%s", err);
        return 1;
    }
    perfc_free(err);
    perfc_size n = {"N", 100000};
    perfc_kernel *k = perfc_compile(p, "axpy", "host", &n, 1, NULL, &err);
    if (!k) {
        fprintf(stderr, "%s", err);
        return 1;
    }
    perfc_free(err);
    perfc_run_options o = {0};
    o.threads = 1;
    int rc = perfc_run(k, &o, &report, &err);
    if (report)
        printf("%s\n", report);
    if (rc && err)
        fprintf(stderr, "%s", err);
    perfc_free(report);
    perfc_free(err);
    /* a bad size is a located error message */
    perfc_size bad = {"Q", 3};
    perfc_kernel *k2 = perfc_compile(p, "axpy", "host", &bad, 1, NULL, &err);
    printf("bad size: %s", k2 ? "accepted?\n" : err);
    perfc_free(err);
    perfc_kernel_free(k2);
    perfc_kernel_free(k);
    perfc_program_free(p);
    return rc != 0 || k2 != NULL;
}
