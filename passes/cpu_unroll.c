/* unroll-small: in a kernel with register tiles, a serial loop of constant trip
 * count whose body, with its own small serial loops unrolled by the same rule, is
 * at most 16 statements (the 3 x 3 taps of conv2d's filter packing) becomes an
 * unroll loop.  Such kernels are optimised without LLVM's loop unrollers (they
 * cost far more than they bring on big unrolled tiles: codegen/llvm/jit.c), so the
 * small loops around the tiles that the schedule left serial are unrolled here.
 *
 * Legal because an unroll loop runs the same iterations in the same order.  Loops
 * that `fill`, `partition`, `transpose` or `vectorize-tiles` claimed keep their
 * hint (they are still counted as serial when sizing an enclosing loop: the back
 * end translates them inside each unrolled copy). */
#include "cpu.h"

#define BIG INT64_MAX

/* Serial as far as sizing goes: a loop the back end would unroll by this rule. */
static bool sized_serial(const Node *n)
{
    return n->u.loop.kind == LOOP_SERIAL || (n->u.loop.kind == LOOP_VECTOR && n->u.loop.hint == HINT_ORDERED);
}

static int64_t unrolled_size(const Kernel *k, const NodeList *l)
{
    int64_t size = 0;
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        int64_t s, ext;
        switch (n->kind) {
        case N_STMT: s = 1; break;
        case N_IF:
            s = unrolled_size(k, &n->u.guard.body);
            if (s != BIG && n->u.guard.els.n) {
                int64_t e = unrolled_size(k, &n->u.guard.els);
                s = e == BIG ? BIG : s + e;
            }
            s = s == BIG ? BIG : s + 1;
            break;
        case N_LOOP:
            s = unrolled_size(k, &n->u.loop.body);
            /* only serial loops unrolled by this rule: what the schedule made vector
             * or unroll is its own business */
            if (s == BIG || !cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) || ext > CPU_MAX_UNROLL ||
                !cpu_unroll_ok(k, n))
                return BIG;
            s *= ext;
            break;
        default: s = 0;
        }
        if (s == BIG || size > BIG - s)
            return BIG;
        size += s;
    }
    return size;
}

bool cpu_unroll_ok(const Kernel *k, const Node *n)
{
    int64_t ext, s;
    if (!sized_serial(n) || !cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) || ext < 1 ||
        ext > CPU_MAX_UNROLL || (s = unrolled_size(k, &n->u.loop.body)) == BIG)
        return false;
    return s * ext <= CPU_UNROLL_STMTS;
}

static void unroll_list(const Kernel *k, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            unroll_list(k, &n->u.guard.body);
            unroll_list(k, &n->u.guard.els);
            continue;
        }
        /* memset, memcpy and transpose nests are translated whole */
        if (n->kind != N_LOOP || (n->u.loop.hint != HINT_NONE && n->u.loop.hint != HINT_ORDERED))
            continue;
        int64_t ext;
        if (n->u.loop.kind == LOOP_SERIAL && n->u.loop.hint == HINT_NONE &&
            cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) && ext > 1 && cpu_unroll_ok(k, n))
            n->u.loop.kind = LOOP_UNROLL;
        unroll_list(k, &n->u.loop.body);
    }
}

bool cpu_unroll(Kernel *k, Diags *d)
{
    (void)d;
    if (cpu_holds_scheduled(&k->body))
        unroll_list(k, &k->body);
    return true;
}
