/* Size limits before anything is allocated: every tensor of a kernel, and the
 * harness's whole working set for it, must fit in this machine's memory.  A shape
 * too large for the machine (a 200 000 x 200 000 f32 matrix is 160 GB) is refused
 * with the numbers, instead of ending in an allocation failure or the kernel of the
 * operating system killing perfc.  Element counts and byte counts are computed with
 * checked arithmetic (lang/checked.h): a count that does not fit in 64 bits is an
 * error, never a wrapped small allocation. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/checked.h"
#include "runtime.h"

/* MemTotal, lowered to the cgroup's memory.max when a container sets one;
 * PERFC_MEMORY_BYTES overrides both (tests, and machines shared on purpose). */
int64_t rt_memory_bytes(void)
{
    const char *env = getenv("PERFC_MEMORY_BYTES");
    if (env && *env) {
        char *end;
        long long v = strtoll(env, &end, 10);
        if (!*end && v > 0)
            return (int64_t)v;
    }
    int64_t total = 0;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && !ck_mul(pages, psize, &total))
        total = INT64_MAX;
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f) {
        long long v;
        if (fscanf(f, "%lld", &v) == 1 && v > 0 && (total <= 0 || v < total))
            total = v;
        fclose(f);
    }
    return total > 0 ? total : INT64_MAX;
}

static void show_bytes(int64_t n, char *out, size_t len)
{
    if (n >= (int64_t)1 << 30)
        snprintf(out, len, "%" PRId64 " bytes (%.1f GiB)", n, (double)n / (1 << 30));
    else if (n >= (int64_t)1 << 20)
        snprintf(out, len, "%" PRId64 " bytes (%.1f MiB)", n, (double)n / (1 << 20));
    else
        snprintf(out, len, "%" PRId64 " bytes", n);
}

bool rt_check_sizes(const Kernel *k, int64_t golden_bytes_per_elem, Diags *d)
{
    int64_t mem = rt_memory_bytes(), total = 0;
    char have[64], need[64];
    show_bytes(mem, have, sizeof have);
    bool ok = true;
    for (int i = 0; i < k->nbufs && ok; i++) {
        const Buffer *b = k->bufs[i];
        int64_t n = ir_buffer_elems(k, b), bytes, copies, all;
        if (n < 0) {
            diag_error(d, b->span, "tensor %s has more elements than a 64-bit count holds at these sizes", b->name);
            return false;
        }
        if (!ck_mul(n, dtype_bytes(b->dtype), &bytes)) {
            diag_error(d, b->span, "tensor %s needs more bytes than a 64-bit count holds (%" PRId64 " elements)",
                       b->name, n);
            return false;
        }
        if (bytes > mem) {
            show_bytes(bytes, need, sizeof need);
            diag_error(d, b->span, "tensor %s needs %s, this machine has %s: bind smaller sizes with -D", b->name,
                       need, have);
            return false;
        }
        /* the harness keeps a host copy and a device copy (and a poison pattern for
         * what the kernel writes), and the golden values in f64 */
        int64_t c = b->kind == BUF_IN ? 2 : 3;
        if (!ck_mul(bytes, c, &copies) || !ck_mul(n, golden_bytes_per_elem, &all) || !ck_add(all, copies, &all) ||
            !ck_add(total, all, &total))
            total = INT64_MAX;
    }
    if (total > mem) {
        show_bytes(total, need, sizeof need);
        diag_error(d, k->span, "kernel %s needs about %s to run and validate at these sizes (its tensors, their "
                   "copies and f64 golden values), this machine has %s: bind smaller sizes with -D", k->name, need,
                   have);
        return false;
    }
    return ok;
}
