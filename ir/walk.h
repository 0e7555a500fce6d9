/* One visitor over the IR tree, and the predicates that passes kept writing as
 * their own recursive walks: "does this expression use that variable", "does this
 * subtree read (or write) that buffer", "is there a load in here".
 *
 * A walk visits nodes in program order: for each node, pre, then its expressions
 * (loop bounds, guard condition, statement indices and value, prefetch box) when
 * an expression callback is given, then its body (a guard's else body after the
 * body), then post.  pre may skip a node's children or stop the whole walk. */
#ifndef PERFC_IR_WALK_H
#define PERFC_IR_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

typedef enum WalkAct {
    WALK_GO,    /* visit the children */
    WALK_SKIP,  /* not the children (post still runs) */
    WALK_STOP,  /* end the walk now */
} WalkAct;

typedef struct IrVisitor {
    WalkAct (*pre)(void *ctx, Node *n);     /* NULL: WALK_GO */
    void (*post)(void *ctx, Node *n);       /* NULL: nothing */
    /* Each expression, outermost first, load indices included; NULL: none. */
    WalkAct (*expr)(void *ctx, Expr *e);
    void *ctx;
} IrVisitor;

/* Walk a list, a node or an expression; false when a callback stopped it. */
bool ir_walk_list(const NodeList *l, const IrVisitor *v);
bool ir_walk_node(Node *n, const IrVisitor *v);
bool ir_walk_expr(Expr *e, const IrVisitor *v);

/* ---- predicates ---- */

/* Whether e reads buffer b (load indices included). */
bool ir_expr_reads(const Expr *e, const Buffer *b);
/* Whether e holds a load of any buffer. */
bool ir_expr_has_load(const Expr *e);
/* Whether a statement, loop bound, guard or index in the subtree n reads b. */
bool ir_node_reads(const Node *n, const Buffer *b);
/* Whether a statement in the subtree n writes b. */
bool ir_node_writes(const Node *n, const Buffer *b);
/* Whether loop l holds, under guards only, one `+=` statement: a contraction's sum
 * loop (where online_softmax starts). */
bool ir_sum_loop(const Node *l);
/* The buffer the last statement of the subtree n writes, or NULL. */
const Buffer *ir_last_written(const Node *n);
/* Whether any index of statement s uses variable v. */
bool ir_stmt_index_uses(const Node *s, const Var *v);
/* The buffers the subtree n reads and writes: rd[b->id] and wr[b->id] set to 1
 * (arrays of Kernel.nbufs bytes, not cleared here).  An update reads what it
 * writes; loads in loop bounds, guard conditions and indices are reads; a guard's
 * else body is not visited (only CPU versioning makes one). */
void ir_node_access(const Node *n, uint8_t *rd, uint8_t *wr);

#endif
