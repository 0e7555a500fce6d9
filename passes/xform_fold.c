/* fold(buffer, dim, factor): a dimension of a temporary stored as two, its index
 * e becoming (e / factor, e % factor).
 *
 * Why: a packed operand is read by the micro-kernel one narrow strip at a time (NR
 * columns of B for KC steps).  Packed as a KC x N block, each strip's KC rows lie N
 * elements apart, in as many pages; folded by NR and reordered by layout, the
 * block is N/NR strips each stored whole (KC x NR contiguous, BLIS's packed
 * panel), so the micro-kernel reads one run of memory:
 *
 *     cache(B, ko) split(B_ko_c1, 16) fold(B_ko, 1, 16) layout(B_ko, 1, 0, 2)
 *
 * takes B_ko[k, j] to B_ko[j / 16, k, j % 16].
 *
 * The rewrite is exact where every index of the dimension is q * factor + r with q
 * and r affine and r within 0 .. factor-1 over its loops' ranges: then e / factor
 * is q and e % factor is r, and the access is written [.., q, r, ..] with no
 * division.  Distinct elements stay distinct (e = q * factor + r), so this only
 * moves where the buffer keeps each element; the new extent is the old one rounded
 * up to whole groups.  An index that does not split so (a copy loop over the whole
 * dimension) is refused with the loop to split first.  Guarded accesses (a padded
 * split's `X?[..]`, checked against the buffer's shape) and prefetches of the
 * buffer are refused, as are shared-memory buffers, whose layouts the GPU passes
 * choose. */
#include "xform_int.h"

/* Splits e into q * f + r as described above; false when it does not split. */
static bool split_index(Kernel *k, const Expr *e, int64_t f, Expr **q, Expr **r)
{
    ArAff a, aq = {0}, ar = {0};
    if (!ar_aff_of(k, e, &a))
        return false;
    aq.c = ar_floordiv(a.c, f);
    ar.c = ar_floormod(a.c, f);
    for (int i = 0; i < a.n; i++) {
        ArAff *to = a.k[i] % f == 0 ? &aq : &ar;
        to->var[to->n] = a.var[i];
        to->k[to->n++] = a.k[i] % f == 0 ? a.k[i] / f : a.k[i];
    }
    *q = xf_aff_expr(k, &aq);
    *r = xf_aff_expr(k, &ar);
    int64_t lo, hi;
    return ar_interval_loops(k, *r, &lo, &hi) && lo >= 0 && hi < f;
}

/* Every access of the buffer: its index array, and where to put the new one. */
typedef struct FoldAcc {
    Expr ***slot;        /* &load.idx or &stmt.idx */
    Span span;
} FoldAcc;

typedef struct Fold {
    Buffer *b;
    PtrVec acc;          /* FoldAcc */
    Kernel *k;
    bool bad;            /* a guarded access or a prefetch */
    const char *why;
    Span at;
} Fold;

static void add_acc(Fold *f, Expr ***slot, Span sp)
{
    FoldAcc *a = arena_alloc(f->k->arena, sizeof *a);
    *a = (FoldAcc){slot, sp};
    vec_push(&f->acc, a);
}

static void load_cb(Expr *e, void *p)
{
    Fold *f = p;
    if (e->kind != IE_LOAD || e->u.load.buf != f->b)
        return;
    if (e->u.load.guarded && !f->bad)
        f->bad = true, f->why = "is read past a padded split's edge (checked against its shape)", f->at = e->span;
    add_acc(f, &e->u.load.idx, e->span);
}

static bool stmt_cb(Node *n, void *p)
{
    Fold *f = p;
    if (n->kind == N_STMT && n->u.stmt.buf == f->b) {
        if (n->u.stmt.guarded && !f->bad)
            f->bad = true, f->why = "is written past a padded split's edge (checked against its shape)",
            f->at = n->span;
        add_acc(f, &n->u.stmt.idx, n->span);
    }
    if (n->kind == N_PREFETCH && n->u.pf.buf == f->b && !f->bad)
        f->bad = true, f->why = "is prefetched (fold before prefetching)", f->at = n->span;
    return true;
}

bool xf_fold(XfCtx *c)
{
    Buffer *b = xf_temp_arg(c);
    int64_t dim, fac;
    if (!b || !xf_arg_int(c, 1, &dim) || !xf_arg_int(c, 2, &fac))
        return false;
    if (b->mem == MEM_SHARED) {
        xf_err(c, "%s is in shared memory, whose layout the GPU passes choose", b->name);
        return false;
    }
    if (dim < 0 || dim >= b->rank) {
        xf_err(c, "%s has no dimension %lld", b->name, (long long)dim);
        return false;
    }
    if (b->rank >= 8) {
        xf_err(c, "%s has %d dimensions, the most a buffer may have", b->name, b->rank);
        return false;
    }
    if (fac < 2 || fac > 1024) {
        xf_err(c, "the factor must be 2 to 1024");
        return false;
    }
    Fold f = {.b = b, .k = c->k};
    xf_visit_exprs(c->k, NULL, load_cb, &f);
    xf_walk(c->k, stmt_cb, &f);
    bool ok = !f.bad;
    if (f.bad) {
        xf_err(c, "%s %s", b->name, f.why);
        xf_note(c, f.at, "here");
    }
    /* every index of the dimension split, before anything changes */
    Expr **qs = arena_alloc(c->k->arena, sizeof(Expr *) * (size_t)(f.acc.n ? f.acc.n : 1));
    Expr **rs = arena_alloc(c->k->arena, sizeof(Expr *) * (size_t)(f.acc.n ? f.acc.n : 1));
    for (int i = 0; ok && i < f.acc.n; i++) {
        FoldAcc *a = f.acc.v[i];
        Expr *e = (*a->slot)[dim];
        if (!split_index(c->k, e, fac, &qs[i], &rs[i])) {
            StrBuf s = {0};
            ir_print_expr(c->k, e, &s);
            xf_err(c, "index %s of %s's dimension %lld is not a multiple of %lld plus a part within 0..%lld "
                      "over its loops: split the loop that moves it by %lld first",
                   s.s, b->name, (long long)dim, (long long)fac, (long long)(fac - 1), (long long)fac);
            xf_note(c, a->span, "this access");
            sb_free(&s);
            ok = false;
        }
    }
    if (ok && !c->dry) {
        int r = b->rank;
        for (int i = 0; i < f.acc.n; i++) {
            FoldAcc *a = f.acc.v[i];
            Expr **old = *a->slot, **nw = arena_alloc(c->k->arena, sizeof(Expr *) * (size_t)(r + 1));
            for (int d = 0, o = 0; d < r; d++) {
                if (d == dim) {
                    nw[o++] = qs[i];
                    nw[o++] = rs[i];
                } else
                    nw[o++] = old[d];
            }
            *a->slot = nw;
        }
        Expr **sh = arena_alloc(c->k->arena, sizeof(Expr *) * (size_t)(r + 1));
        for (int d = 0, o = 0; d < r; d++) {
            if (d == dim) {
                Expr *up = ir_bin(c->k, IE_ADD, b->shape[d], ir_int(c->k, fac - 1));
                sh[o++] = ir_simplify(c->k, ir_bin(c->k, IE_DIV, up, ir_int(c->k, fac)));
                sh[o++] = ir_int(c->k, fac);
            } else
                sh[o++] = b->shape[d];
        }
        b->shape = sh;
        b->rank = r + 1;
    }
    vec_free(&f.acc);
    return ok;
}
