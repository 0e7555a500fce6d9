/* fill: a nest of serial loops that stores zero over one contiguous range of a
 * buffer (the zero initialisation a reduction's `distribute` leaves, conv2d's
 * 100 000 elements of Y; the border rows of a padded copy once `partition` has
 * fixed the row) is marked `memset`, and the back end emits one memset.
 *
 * Legal because the nest writes exactly the bytes a memset writes: each loop has
 * constant bounds, the strides of the nest's variables in the element offset are,
 * smallest first, 1, n1, n1*n2, ... (no gap, no element twice), and the value
 * stored is all zero bytes in the buffer's format: a zero constant (+0.0, not
 * -0.0), or a read of an input padded with +0 that is known to fall outside it.
 * Nothing else is stored, so the order of the stores does not matter.  Not inside
 * a vector loop (its body is translated per lane). */
#include <math.h>

#include "cpu.h"

/* Whether e is a constant whose storage is all zero bytes (0, +0.0, false). */
static bool zero_const(const Expr *e)
{
    if (e->kind == IE_CAST)
        return zero_const(e->args[0]);
    if (e->kind == IE_INT)
        return e->u.i == 0;
    if (e->kind == IE_FLT)
        return e->u.f == 0 && !signbit(e->u.f);
    return false;
}

static bool zero_value(const Kernel *k, const CpuRanges *r, const Expr *e)
{
    if (zero_const(e))
        return true;
    const Buffer *b = e->kind == IE_LOAD ? e->u.load.buf : NULL;
    return b && cpu_load_padded(e) && b->pad == 0 && !signbit(b->pad) && cpu_pad_known(k, r, e) < 0;
}

bool cpu_fill_ok(const Kernel *k, const CpuRanges *r, const Node *L, int64_t *total_out)
{
    const Node *n = L;
    const Node *loops[8];
    int nl = 0;
    while (n->kind == N_LOOP) {
        if (n->u.loop.kind != LOOP_SERIAL || nl == 8 || n->u.loop.body.n != 1)
            return false;
        loops[nl++] = n;
        n = n->u.loop.body.v[0];
    }
    if (n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || n->u.stmt.guarded)
        return false; /* a guarded store (a padded split's) keeps its element tests */
    /* The nest's own variables are left unknown: only a read known outside its
     * input whatever they are counts as zero. */
    if (!zero_value(k, r, n->u.stmt.value))
        return false;
    const Buffer *b = n->u.stmt.buf;
    ArAff off;
    if (!cpu_offset_aff(k, b, n->u.stmt.idx, &off))
        return false;
    int64_t ext[8], kk[8], total = 1;
    for (int i = 0; i < nl; i++) {
        ArAff l;
        if (!cpu_const_extent(k, loops[i]->u.loop.lo, loops[i]->u.loop.hi, &ext[i]) || ext[i] < 1 ||
            !ar_aff_of(k, loops[i]->u.loop.lo, &l) || l.n)
            return false;
        kk[i] = ar_aff_coef(&off, loops[i]->u.loop.var->id);
    }
    bool used[8] = {false};
    int64_t want = 1;
    for (int j = 0; j < nl; j++) {
        int i;
        for (i = 0; i < nl && (used[i] || kk[i] != want); i++)
            ;
        if (i == nl)
            return false;
        used[i] = true;
        want *= ext[i];
        total *= ext[i];
    }
    if (total_out)
        *total_out = total;
    return nl > 0;
}

static void fill_list(Kernel *k, CpuRanges *r, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            fill_list(k, r, &n->u.guard.body, in_vector);
            fill_list(k, r, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        if (!in_vector && n->u.loop.hint == HINT_NONE && cpu_fill_ok(k, r, n, NULL)) {
            n->u.loop.hint = HINT_FILL;
            continue;
        }
        CpuRangeSave s = cpu_ranges_enter(r, k, n);
        fill_list(k, r, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
        cpu_ranges_leave(r, n, s);
    }
}

bool cpu_fill(Kernel *k, Diags *d)
{
    (void)d;
    CpuRanges r;
    cpu_ranges_init(&r, k);
    fill_list(k, &r, &k->body, false);
    cpu_ranges_free(&r);
    return true;
}
