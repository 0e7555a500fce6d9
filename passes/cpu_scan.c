/* CPU target lowering, pass `scan-blocks`: the blocked parallel scan by default
 * where a scan has few rows and long ones.
 *
 * A scan's rows are independent, so a schedule may run them in parallel
 * (`parallel(r)`), and `parallel(c)` on the scanned loop asks for the blocked scan
 * of passes/xform_scan.c within each row.  Without a schedule, a kernel with fewer
 * rows than a machine has cores leaves most of them idle on a long row; this pass
 * gives such scans (fewer than 4 rows in all, each at least 65536 long, outside any
 * parallel loop) the blocked form, whose block loops the runtime's threads share.
 * Short rows and many rows keep the serial scan: the blocked one computes each
 * step twice and only pays for itself on more than one thread. */
#include "cpu.h"
#include "xform_int.h"

#define MAX_ROWS 4
#define MIN_ROW 65536

/* Scan loops below n, with the rows (trip counts of the loops around them) so far. */
static void walk(Kernel *k, Node *n, int64_t rows, bool in_par)
{
    if (n->kind != N_LOOP) {
        NodeList *b = ir_body(n);
        for (int i = 0; b && i < b->n; i++) walk(k, b->v[i], rows, in_par);
        return;
    }
    int64_t ext;
    if (!in_par && rows < MAX_ROWS && cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) && ext >= MIN_ROW &&
        xf_is_scan_loop(k, n)) {
        xf_scan_blocks(k, n);
        return;
    }
    int64_t inner = rows;
    if (cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext)) inner = rows * (ext > 0 ? ext : 0);
    else inner = MAX_ROWS;
    if (inner > MAX_ROWS) inner = MAX_ROWS;
    bool par = in_par || n->u.loop.kind == LOOP_PARALLEL;
    /* a rewrite replaces the loop it is called on by three, in place */
    NodeList *b = &n->u.loop.body;
    for (int i = 0; i < b->n; i++) {
        int n0 = b->n;
        walk(k, b->v[i], inner, par);
        i += b->n - n0;
    }
}

bool cpu_scan_blocks(Kernel *k, Diags *d)
{
    (void)d;
    for (int i = 0; i < k->body.n; i++) {
        int n0 = k->body.n;
        walk(k, k->body.v[i], 1, false);
        i += k->body.n - n0;
    }
    return true;
}
