/* The tuner's cost model: features of a scheduled loop nest, and a LASSO fitted
 * from the tuning database that predicts which candidates are fast before they are
 * compiled, so the search measures the promising ones first (docs/autotune.md,
 * "The cost model").
 *
 * Features are read off the scheduled IR only (the candidate is scheduled, never
 * compiled, to get them), and are chosen to mean the same thing across kernels and
 * sizes: the main statement's loop chain (depth, the innermost trip count, whether
 * its accesses are contiguous there), its register tile (vector registers times
 * unrolled rows), the parallel loop (iterations per thread, how often the threads
 * are forked), local and shared buffers, GPU block and thread shapes, and for three
 * cache sizes the reuse of the largest loop whose footprint fits (iterations per
 * byte touched).  The model predicts log(median ms / executions of the main
 * statement): a time per inner iteration, which transfers across sizes.
 *
 * The fit: rows are grouped by tuning key and both y and every feature are
 * centred within each group, so the model learns how schedules of one kernel differ
 * from one another, not which kernel is slow (ranking within one kernel is all the
 * search needs).  Features (and the squares of the tile and reuse ones, so an
 * optimum in the middle can be expressed) are standardised; the LASSO is solved by
 * cyclic coordinate descent on a path of 24 penalties from the smallest that keeps
 * every weight at zero down to 1/1000 of it, and the penalty is chosen by 5-fold
 * cross-validation (folds by row order, deterministic).  Everything is deterministic
 * given the rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* ---- features ---- */

static const char *const names[TM_NFEAT] = {
    "depth", "log_inner_trips", "contiguous", "vector", "log_vec_regs", "log_unroll", "log_acc_regs",
    "log_par_per_thread", "log_forks", "log_local_bytes", "n_local", "log_shared_bytes", "log_threads_per_block",
    "log_blocks", "tensor_core", "pipeline", "reuse_l1", "reuse_l2", "reuse_l3",
};

const char *tm_feature_name(int i) { return i >= 0 && i < TM_NFEAT ? names[i] : "?"; }

static int64_t trips_of(const Kernel *k, const Node *l)
{
    int64_t lo = 0, hi = -1;
    if (!ir_eval_size(k, l->u.loop.lo, &lo) || !ir_eval_size(k, l->u.loop.hi, &hi) || hi <= lo)
        return 1; /* bounds depend on outer loops: count one (a tail, a triangle) */
    return hi - lo;
}

/* The statement executed most often, with its loop chain. */
typedef struct Main {
    const Node *stmt;
    const Node *path[32];
    int n;
    double execs;
} Main;

static void find_main(const Kernel *k, const Node *n, const Node **path, int depth, double execs, Main *m)
{
    if (n->kind == N_STMT) {
        if (execs > m->execs) {
            m->execs = execs;
            m->stmt = n;
            m->n = depth;
            memcpy(m->path, path, sizeof *path * (size_t)depth);
        }
        return;
    }
    const NodeList *b = ir_body((Node *)n);
    if (n->kind == N_LOOP && depth < 32) {
        path[depth] = n;
        execs *= (double)trips_of(k, n);
        depth++;
    }
    for (int i = 0; b && i < b->n; i++)
        find_main(k, b->v[i], path, depth, execs, m);
}

typedef struct Access {
    const Buffer *buf;
    Expr **idx;
} Access;

static void collect_loads(const Expr *e, Access *a, int *n, int cap)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        if (*n < cap)
            a[(*n)++] = (Access){e->u.load.buf, e->u.load.idx};
        return;
    }
    for (int i = 0; i < 3; i++)
        collect_loads(e->args[i], a, n, cap);
}

/* Bytes the accesses touch while loops path[from..] run: per access, the product
 * of the trip counts of the loops its indices use (a split loop's two halves both
 * appear, so their product is the span), times the element size; buffers counted
 * once (the largest footprint). */
static double footprint(const Kernel *k, const Main *m, const Access *a, int na, int from)
{
    double total = 0;
    for (int i = 0; i < na; i++) {
        bool dup = false;
        for (int j = 0; j < i; j++)
            dup |= a[j].buf == a[i].buf;
        if (dup)
            continue;
        double best = 0;
        for (int j = i; j < na; j++) {
            if (a[j].buf != a[i].buf)
                continue;
            double f = dtype_bytes(a[j].buf->dtype);
            for (int l = from; l < m->n; l++) {
                bool used = false;
                for (int d = 0; d < a[j].buf->rank && !used; d++)
                    used = ir_expr_uses_var(a[j].idx[d], m->path[l]->u.loop.var);
                if (used)
                    f *= (double)trips_of(k, m->path[l]);
            }
            best = fmax(best, f);
        }
        total += best;
    }
    return total;
}

static double lg(double x) { return log2(x > 1 ? x : 1); }

static void walk_kinds(const Kernel *k, const Node *n, double outer, int threads, double *f)
{
    if (n->kind == N_LOOP) {
        double t = (double)trips_of(k, n);
        LoopKind lk = n->u.loop.kind;
        if (lk == LOOP_PARALLEL) {
            f[TM_PAR_PER_THREAD] = fmax(f[TM_PAR_PER_THREAD], lg(t / (threads > 0 ? threads : 1)) + 1);
            f[TM_FORKS] = fmax(f[TM_FORKS], lg(outer));
        } else if (lk >= LOOP_THREAD_X && lk <= LOOP_THREAD_Z) {
            f[TM_THREADS] += lg(t);
        } else if (lk >= LOOP_BLOCK_X && lk <= LOOP_BLOCK_Z) {
            f[TM_BLOCKS] += lg(t);
        } else if (lk == LOOP_MMA || lk == LOOP_WGMMA) {
            f[TM_TENSOR] = lk == LOOP_WGMMA ? 2 : 1;
        } else if (lk == LOOP_PIPELINE) {
            f[TM_PIPELINE] = 1 + n->u.loop.inflight;
        }
        outer *= t;
    }
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        walk_kinds(k, b->v[i], outer, threads, f);
}

double tm_features(const Kernel *k, int threads, int lanes, const double cache_bytes[3], double *f)
{
    memset(f, 0, sizeof *f * TM_NFEAT);
    Main m;
    memset(&m, 0, sizeof m);
    const Node *path[32];
    for (int i = 0; i < k->body.n; i++)
        find_main(k, k->body.v[i], path, 0, 1, &m);
    if (!m.stmt)
        return 1;
    f[TM_DEPTH] = m.n;
    Access a[64];
    int na = 0;
    a[na++] = (Access){m.stmt->u.stmt.buf, m.stmt->u.stmt.idx};
    collect_loads(m.stmt->u.stmt.value, a, &na, 64);
    if (m.n) {
        const Node *in = m.path[m.n - 1];
        f[TM_INNER_TRIPS] = lg((double)trips_of(k, in));
        /* an access is contiguous in the innermost loop when only its last index uses
         * that loop's variable (or none does: a broadcast) */
        int good = 0;
        for (int i = 0; i < na; i++) {
            int r = a[i].buf->rank;
            bool bad = false;
            for (int d = 0; d + 1 < r; d++)
                bad |= ir_expr_uses_var(a[i].idx[d], in->u.loop.var);
            good += !bad;
        }
        f[TM_CONTIGUOUS] = (double)good / na;
    }
    double vec = 0, unroll = 1;
    for (int i = 0; i < m.n; i++) {
        LoopKind lk = m.path[i]->u.loop.kind;
        double t = (double)trips_of(k, m.path[i]);
        if (lk == LOOP_VECTOR)
            vec = t / (lanes > 0 ? lanes : 1);
        else if (lk == LOOP_UNROLL)
            unroll *= t;
    }
    f[TM_VECTOR] = vec > 0;
    f[TM_VEC_REGS] = vec > 0 ? lg(vec) + 1 : 0;
    f[TM_UNROLL] = lg(unroll);
    f[TM_ACC_REGS] = lg((vec > 0 ? vec : 1) * unroll);
    double local = 0, shared = 0;
    for (int i = 0; i < k->nbufs; i++) {
        int64_t n = ir_buffer_elems(k, k->bufs[i]);
        double bytes = n > 0 ? (double)n * dtype_bytes(k->bufs[i]->dtype) : 0;
        if (k->bufs[i]->mem == MEM_LOCAL) {
            local += bytes;
            f[TM_NLOCAL] += 1;
        } else if (k->bufs[i]->mem == MEM_SHARED) {
            shared += bytes;
        }
    }
    f[TM_LOCAL_BYTES] = lg(1 + local);
    f[TM_SHARED_BYTES] = lg(1 + shared);
    for (int i = 0; i < k->body.n; i++)
        walk_kinds(k, k->body.v[i], 1, threads, f);
    /* reuse per cache level: executions per byte of the outermost loop that fits */
    for (int c = 0; c < 3; c++) {
        double r = 0;
        double iters = 1;
        for (int l = m.n - 1; l >= 0; l--) {
            iters *= (double)trips_of(k, m.path[l]);
            double fp = footprint(k, &m, a, na, l);
            if (fp > cache_bytes[c])
                break;
            r = log2(iters / fmax(fp, 1) + 1);
        }
        f[TM_REUSE_L1 + c] = r;
    }
    return m.execs > 0 ? m.execs : 1;
}

void tm_features_text(const double *f, double work, StrBuf *out)
{
    sb_printf(out, "w=%.6g", work);
    for (int i = 0; i < TM_NFEAT; i++)
        sb_printf(out, " %.5g", f[i]);
}

bool tm_features_parse(const char *s, double *f, double *work)
{
    if (!s || strncmp(s, "w=", 2))
        return false;
    char *end;
    *work = strtod(s + 2, &end);
    for (int i = 0; i < TM_NFEAT; i++) {
        const char *p = end;
        f[i] = strtod(p, &end);
        if (end == p)
            return false;
    }
    return *work > 0;
}

/* ---- the model ---- */

/* The columns the fit sees: every feature, then the squares of those where an
 * optimum lies inside the range (tile sizes, parallel grain, reuse). */
static const int squared[] = {TM_INNER_TRIPS, TM_VEC_REGS, TM_UNROLL, TM_ACC_REGS, TM_PAR_PER_THREAD,
                              TM_LOCAL_BYTES, TM_THREADS, TM_REUSE_L1, TM_REUSE_L2, TM_REUSE_L3};
enum { NSQ = sizeof squared / sizeof squared[0], NCOL = TM_NFEAT + NSQ };

static void columns(const double *f, double *x)
{
    memcpy(x, f, sizeof *f * TM_NFEAT);
    for (int i = 0; i < NSQ; i++)
        x[TM_NFEAT + i] = f[squared[i]] * f[squared[i]];
}

void tm_init(TuneModel *m)
{
    memset(m, 0, sizeof *m);
}

void tm_free(TuneModel *m)
{
    free(m->x);
    free(m->y);
    free(m->group);
    free(m->w);
    free(m->mu);
    free(m->sd);
    memset(m, 0, sizeof *m);
}

void tm_add(TuneModel *m, const double *f, double work, double median_ms, uint64_t group)
{
    if (!(median_ms > 0) || !(work > 0))
        return;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->x = xrealloc(m->x, sizeof *m->x * (size_t)m->cap * NCOL);
        m->y = xrealloc(m->y, sizeof *m->y * (size_t)m->cap);
        m->group = xrealloc(m->group, sizeof *m->group * (size_t)m->cap);
    }
    columns(f, m->x + (size_t)m->n * NCOL);
    m->y[m->n] = log(median_ms) - log(work);
    m->group[m->n] = group;
    m->n++;
}

void tm_thin(TuneModel *m, int max)
{
    if (max <= 0 || m->n <= max)
        return;
    int k = 0;
    for (int i = 0; i < max; i++) {
        int j = (int)((int64_t)i * m->n / max);
        memmove(m->x + (size_t)k * NCOL, m->x + (size_t)j * NCOL, sizeof *m->x * NCOL);
        m->y[k] = m->y[j];
        m->group[k] = m->group[j];
        k++;
    }
    m->n = k;
}

/* The normal equations of the rows `rows` (n of them): G = X'X / n (p x p) and
 * c = X'y / n.  Coordinate descent needs nothing else, so each update costs p
 * operations instead of 2n: with 200 rows and 36 columns the fit went from 0.2 s,
 * all of it ahead of the search's first candidate, to a few milliseconds. */
static void normal_eq(const double *X, const double *y, const int *rows, int n, int p, double *G, double *c)
{
    memset(G, 0, sizeof *G * (size_t)p * p);
    memset(c, 0, sizeof *c * (size_t)p);
    for (int i = 0; i < n; i++) {
        const double *xi = X + (size_t)rows[i] * p;
        for (int j = 0; j < p; j++) {
            c[j] += xi[j] * y[rows[i]];
            for (int k = 0; k <= j; k++)
                G[(size_t)j * p + k] += xi[j] * xi[k];
        }
    }
    for (int j = 0; j < p; j++) {
        c[j] /= n ? n : 1;
        for (int k = 0; k <= j; k++)
            G[(size_t)k * p + j] = G[(size_t)j * p + k] /= n ? n : 1;
    }
}

/* Coordinate descent for min 1/(2n) |y - X b|^2 + lam |b|_1 on standardised,
 * centred X, from the warm start b, in the normal equations' terms:
 * rho_j = c_j - (G b)_j + G_jj b_j, kept current in gb as b changes. */
static void lasso_cd(const double *G, const double *c, int p, double lam, double *b)
{
    double *gb = xmalloc(sizeof *gb * (size_t)p);
    for (int j = 0; j < p; j++) {
        double s = 0;
        for (int k = 0; k < p; k++)
            s += G[(size_t)j * p + k] * b[k];
        gb[j] = s;
    }
    for (int it = 0; it < 200; it++) {
        double delta = 0;
        for (int j = 0; j < p; j++) {
            double xx = G[(size_t)j * p + j];
            if (xx <= 0)
                continue;
            double rho = c[j] - gb[j] + xx * b[j];
            double nb = rho > lam ? (rho - lam) / xx : rho < -lam ? (rho + lam) / xx : 0;
            double d = nb - b[j];
            if (d != 0) {
                for (int k = 0; k < p; k++)
                    gb[k] += G[(size_t)k * p + j] * d;
                b[j] = nb;
                delta = fmax(delta, fabs(d));
            }
        }
        if (delta < 1e-6)
            break;
    }
    free(gb);
}

bool tm_fit(TuneModel *m)
{
    m->fitted = false;
    if (m->n < TM_MIN_ROWS)
        return false;
    int n = m->n, p = NCOL;
    double *X = xmalloc(sizeof *X * (size_t)n * p);
    double *y = xmalloc(sizeof *y * (size_t)n);
    memcpy(X, m->x, sizeof *X * (size_t)n * p);
    memcpy(y, m->y, sizeof *y * (size_t)n);
    /* centre within each key: what differs between schedules of one kernel */
    int *done = xcalloc((size_t)n, sizeof *done);
    double *mean = xmalloc(sizeof *mean * (size_t)(p + 1));
    m->ngroups = 0;
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        m->ngroups++;
        memset(mean, 0, sizeof *mean * (size_t)(p + 1));
        int c = 0;
        for (int j = i; j < n; j++)
            if (m->group[j] == m->group[i]) {
                for (int q = 0; q < p; q++)
                    mean[q] += X[(size_t)j * p + q];
                mean[p] += y[j];
                c++;
            }
        for (int j = i; j < n; j++)
            if (m->group[j] == m->group[i]) {
                for (int q = 0; q < p; q++)
                    X[(size_t)j * p + q] -= mean[q] / c;
                y[j] -= mean[p] / c;
                done[j] = 1;
            }
    }
    free(done);
    free(mean);
    /* standardise (the centring above made every mean zero) */
    m->mu = xrealloc(m->mu, sizeof *m->mu * p);
    m->sd = xrealloc(m->sd, sizeof *m->sd * p);
    m->w = xrealloc(m->w, sizeof *m->w * p);
    for (int q = 0; q < p; q++) {
        double s = 0;
        for (int i = 0; i < n; i++)
            s += X[(size_t)i * p + q] * X[(size_t)i * p + q];
        m->sd[q] = sqrt(s / n);
        m->mu[q] = 0;
        for (int i = 0; i < n; i++)
            X[(size_t)i * p + q] = m->sd[q] > 1e-9 ? X[(size_t)i * p + q] / m->sd[q] : 0;
    }
    double lmax = 0;
    for (int q = 0; q < p; q++) {
        double s = 0;
        for (int i = 0; i < n; i++)
            s += X[(size_t)i * p + q] * y[i];
        lmax = fmax(lmax, fabs(s) / n);
    }
    enum { NLAM = 24, FOLDS = 5 };
    double lams[NLAM], cv[NLAM];
    for (int l = 0; l < NLAM; l++) {
        lams[l] = lmax * pow(1e-3, (double)l / (NLAM - 1));
        cv[l] = 0;
    }
    int *tr = xmalloc(sizeof *tr * (size_t)n), *te = xmalloc(sizeof *te * (size_t)n);
    double *b = xmalloc(sizeof *b * p);
    double *G = xmalloc(sizeof *G * (size_t)p * p), *c = xmalloc(sizeof *c * p);
    for (int fo = 0; fo < FOLDS; fo++) {
        int ntr = 0, nte = 0;
        for (int i = 0; i < n; i++) {
            if (i % FOLDS == fo)
                te[nte++] = i;
            else
                tr[ntr++] = i;
        }
        memset(b, 0, sizeof *b * p);
        normal_eq(X, y, tr, ntr, p, G, c);
        for (int l = 0; l < NLAM; l++) {
            lasso_cd(G, c, p, lams[l], b);
            for (int i = 0; i < nte; i++) {
                double s = y[te[i]];
                for (int q = 0; q < p; q++)
                    s -= X[(size_t)te[i] * p + q] * b[q];
                cv[l] += s * s;
            }
        }
    }
    int bestl = 0;
    for (int l = 1; l < NLAM; l++)
        if (cv[l] < cv[bestl])
            bestl = l;
    for (int i = 0; i < n; i++)
        tr[i] = i;
    memset(b, 0, sizeof *b * p);
    normal_eq(X, y, tr, n, p, G, c);
    for (int l = 0; l <= bestl; l++)
        lasso_cd(G, c, p, lams[l], b);
    free(G);
    free(c);
    memcpy(m->w, b, sizeof *b * p);
    m->lambda = lams[bestl];
    double sst = 0;
    for (int i = 0; i < n; i++)
        sst += y[i] * y[i];
    m->cv_r2 = sst > 0 ? 1 - cv[bestl] / sst : 0;
    m->nonzero = 0;
    for (int q = 0; q < p; q++)
        m->nonzero += b[q] != 0;
    m->ncols = p;
    free(tr);
    free(te);
    free(b);
    free(X);
    free(y);
    m->fitted = true;
    return true;
}

double tm_predict(const TuneModel *m, const double *f)
{
    if (!m->fitted)
        return 0;
    double x[NCOL], s = 0;
    columns(f, x);
    for (int q = 0; q < m->ncols; q++)
        if (m->w[q] != 0 && m->sd[q] > 1e-9)
            s += m->w[q] * (x[q] - m->mu[q]) / m->sd[q];
    return s;
}

void tm_describe(const TuneModel *m, StrBuf *out)
{
    sb_printf(out, "LASSO on %d rows of %d searches: %d of %d weights nonzero, lambda %.3g, cross-validated R^2 %.2f",
              m->n, m->ngroups, m->nonzero, m->ncols, m->lambda, m->cv_r2);
    /* the three heaviest weights, so a reader sees what it learned */
    int used[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++) {
        int best = -1;
        for (int q = 0; q < m->ncols; q++) {
            if (m->w[q] == 0 || q == used[0] || q == used[1])
                continue;
            if (best < 0 || fabs(m->w[q]) > fabs(m->w[best]))
                best = q;
        }
        if (best < 0)
            break;
        used[k] = best;
        const char *nm = best < TM_NFEAT ? names[best] : names[squared[best - TM_NFEAT]];
        sb_printf(out, "%s%s%s %+.2f", k ? ", " : "; heaviest: ", nm, best < TM_NFEAT ? "" : "^2", m->w[best]);
    }
}
