/* The tuner's cost model (tune/model.c): features of a scheduled loop nest
 * and a LASSO over them, fitted from the tuning database, that ranks candidates
 * before they are compiled.  docs/autotune.md lists the features and the fit. */
#ifndef PERFC_TUNE_MODEL_H
#define PERFC_TUNE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"

enum TmFeature {
    TM_DEPTH, TM_INNER_TRIPS, TM_CONTIGUOUS, TM_VECTOR, TM_VEC_REGS, TM_UNROLL, TM_ACC_REGS,
    TM_PAR_PER_THREAD, TM_FORKS, TM_LOCAL_BYTES, TM_NLOCAL, TM_SHARED_BYTES, TM_THREADS, TM_BLOCKS,
    TM_TENSOR, TM_PIPELINE, TM_REUSE_L1, TM_REUSE_L2, TM_REUSE_L3,
    TM_NFEAT
};

/* Fewer usable rows than this: no model, the search keeps its usual order. */
enum { TM_MIN_ROWS = 20 };

const char *tm_feature_name(int i);
/* Fills f[TM_NFEAT] from the scheduled kernel k (threads: CPU threads; lanes: f32
 * lanes of one SIMD register; cache_bytes: three cache sizes, smallest first) and
 * returns the executions of its main statement (the work a time is divided by). */
double tm_features(const Kernel *k, int threads, int lanes, const double cache_bytes[3], double *f);
/* "w=WORK f0 f1 ...": how features are kept in the database. */
void tm_features_text(const double *f, double work, StrBuf *out);
bool tm_features_parse(const char *s, double *f, double *work);

typedef struct TuneModel {
    /* training rows: columns (features and chosen squares), log time per unit of work */
    double *x, *y;
    uint64_t *group;        /* rows of one tuning key share a group */
    int n, cap, ngroups;
    /* the fit */
    bool fitted;
    int ncols, nonzero;
    double *w, *mu, *sd;
    double lambda, cv_r2;
} TuneModel;

void tm_init(TuneModel *m);
void tm_free(TuneModel *m);
/* One measured row (ignored when median_ms or work is not positive). */
void tm_add(TuneModel *m, const double *f, double work, double median_ms, uint64_t group);
/* Keeps at most max rows, evenly spaced (the fit's cost grows with the rows; a
 * database of years need not be read whole). */
void tm_thin(TuneModel *m, int max);
/* Fits; false (and no model) with fewer than TM_MIN_ROWS rows. */
bool tm_fit(TuneModel *m);
/* The predicted log time per unit of work, up to a constant per kernel: smaller is
 * faster.  Only comparisons between candidates of one kernel mean anything. */
double tm_predict(const TuneModel *m, const double *f);
/* One line: rows, searches, weights kept, penalty, cross-validated R^2, the heaviest
 * weights. */
void tm_describe(const TuneModel *m, StrBuf *out);

#endif
