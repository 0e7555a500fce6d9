/* Prints the AST back as PDL (`perfc FILE -emit ast`), fully parenthesised where
 * precedence matters, with what sema inferred shown in comments: the dtype of each
 * statement's value, the range of each index, the shape of each temporary.  It is
 * how a user sees what the checker understood. */
#include <stdio.h>

#include "ast.h"

static int prec(const AstExpr *e)
{
    if (e->kind == AST_REDUCE)
        return 0;
    if (e->kind == AST_UNARY)
        return 7;
    if (e->kind != AST_BINARY)
        return 8;
    switch (e->binary.op) {
    case OP_OR: return 1;
    case OP_AND: return 2;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE: return 3;
    case OP_ADD: case OP_SUB: return 4;
    default: return 5;
    }
}

static void print_sub(const AstExpr *e, int min, StrBuf *b)
{
    bool paren = prec(e) < min;
    if (paren)
        sb_putc(b, '(');
    ast_print_expr(e, b);
    if (paren)
        sb_putc(b, ')');
}

static void print_float(double v, StrBuf *b)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    /* shortest form that reads back exactly */
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        double back;
        if (sscanf(buf, "%lf", &back) == 1 && back == v)
            break;
    }
    if (v == 1.0 / 0.0) {
        sb_puts(b, "inf");
        return;
    }
    if (v == -1.0 / 0.0) {
        sb_puts(b, "-inf");
        return;
    }
    sb_puts(b, buf);
    bool has_point = false;
    for (char *c = buf; *c; c++)
        has_point |= *c == '.' || *c == 'e' || *c == 'n' || *c == 'i';
    if (!has_point)
        sb_puts(b, ".0");
}

void ast_print_expr(const AstExpr *e, StrBuf *b)
{
    switch (e->kind) {
    case AST_INT:
        sb_printf(b, "%lld", (long long)e->ival);
        break;
    case AST_FLOAT:
        print_float(e->fval, b);
        break;
    case AST_NAME:
        sb_puts(b, e->name.name);
        break;
    case AST_ACCESS:
        sb_puts(b, e->access.name);
        if (e->access.nidx || !e->access.tensor || e->access.tensor->rank) {
            sb_putc(b, '[');
            for (int i = 0; i < e->access.nidx; i++) {
                if (i)
                    sb_puts(b, ", ");
                ast_print_expr(e->access.idx[i], b);
            }
            sb_putc(b, ']');
        }
        break;
    case AST_CALL:
        sb_printf(b, "%s(", e->call.fn);
        for (int i = 0; i < e->call.nargs; i++) {
            if (i)
                sb_puts(b, ", ");
            ast_print_expr(e->call.args[i], b);
        }
        sb_putc(b, ')');
        break;
    case AST_UNARY:
        sb_puts(b, ast_op_name(e->unary.op));
        print_sub(e->unary.a, 7, b);
        break;
    case AST_BINARY: {
        int p = prec(e);
        print_sub(e->binary.a, p, b);
        sb_printf(b, " %s ", ast_op_name(e->binary.op));
        print_sub(e->binary.b, p + 1, b);
        break;
    }
    case AST_REDUCE:
        sb_printf(b, "%s(", reduce_name(e->reduce.op));
        for (int i = 0; i < e->reduce.nvars; i++) {
            const AstRedVar *v = &e->reduce.vars[i];
            if (i)
                sb_puts(b, ", ");
            sb_puts(b, v->name);
            if (v->lo) {
                sb_puts(b, " in ");
                ast_print_expr(v->lo, b);
                sb_puts(b, "..");
                ast_print_expr(v->hi, b);
            }
        }
        sb_puts(b, ") ");
        ast_print_expr(e->reduce.body, b);
        break;
    }
}

static const char *kind_word(TensorKind k)
{
    switch (k) {
    case TENSOR_IN: return "in";
    case TENSOR_OUT: return "out";
    case TENSOR_LOCAL: return "local";
    default: return "temp";
    }
}

static void print_tensor(const AstTensor *t, StrBuf *b)
{
    sb_printf(b, "  %s %s: %s", t->kind == TENSOR_TEMP ? "#" : kind_word(t->kind), t->name,
              t->dtype_known ? dtype_name(t->dtype) : "?");
    if (t->shape) {
        sb_putc(b, '[');
        for (int i = 0; i < t->rank; i++) {
            if (i)
                sb_puts(b, ", ");
            if (t->shape[i])
                ast_print_expr(t->shape[i], b);
            else
                sb_putc(b, '?');
        }
        sb_putc(b, ']');
    }
    if (t->has_pad) {
        sb_puts(b, " pad(");
        print_float(t->pad_value, b);
        sb_putc(b, ')');
    }
    if (t->dom_lo) {
        sb_puts(b, t->dom_distinct ? " distinct(" : " range(");
        ast_print_expr(t->dom_lo, b);
        sb_puts(b, ", ");
        ast_print_expr(t->dom_hi, b);
        sb_putc(b, ')');
    }
    if (t->kind == TENSOR_TEMP)
        sb_puts(b, "  (temporary, inferred)");
    sb_putc(b, '\n');
}

static void print_stmt(const AstStmt *s, StrBuf *b)
{
    sb_printf(b, "  %s", s->lhs_name);
    if (s->nlhs) {
        sb_putc(b, '[');
        for (int i = 0; i < s->nlhs; i++) {
            if (i)
                sb_puts(b, ", ");
            ast_print_expr(s->lhs_idx[i], b);
        }
        sb_putc(b, ']');
    }
    sb_puts(b, " = ");
    ast_print_expr(s->rhs, b);
    if (s->where) {
        sb_puts(b, " where ");
        ast_print_expr(s->where, b);
    }
    if (s->indices) {
        const AstExpr *v = s->rhs->kind == AST_REDUCE ? s->rhs->reduce.body : s->rhs;
        sb_printf(b, "    # %s;", v->dtype < DT_COUNT ? dtype_name(v->dtype) : "?");
        for (int i = 0; i < s->nindices; i++) {
            const AstIndex *ix = s->indices[i];
            sb_printf(b, "%s %s in ", i ? "," : "", ix->name);
            if (ix->lo)
                ast_print_expr(ix->lo, b);
            else
                sb_putc(b, '0');
            sb_puts(b, "..");
            if (ix->extent) {
                if (ix->lo) {
                    /* extent is hi - lo: print hi */
                    ast_print_expr(ix->extent->kind == AST_BINARY ? ix->extent->binary.a : ix->extent, b);
                } else {
                    ast_print_expr(ix->extent, b);
                }
            } else {
                sb_putc(b, '?');
            }
        }
    }
    sb_putc(b, '\n');
}

static void print_sarg(const SchedArg *a, StrBuf *b)
{
    if (a->key)
        sb_printf(b, "%s=", a->key);
    switch (a->kind) {
    case SARG_NAME: sb_puts(b, a->name); break;
    case SARG_STRING: sb_printf(b, "\"%s\"", a->name); break;
    case SARG_INT: sb_printf(b, "%lld", (long long)a->ival); break;
    case SARG_FLOAT: print_float(a->fval, b); break;
    case SARG_LIST:
        sb_putc(b, '[');
        for (int i = 0; i < a->list.n; i++) {
            if (i)
                sb_puts(b, ", ");
            print_sarg(&a->list.items[i], b);
        }
        sb_putc(b, ']');
        break;
    }
}

void ast_print_schedule(const AstSchedule *s, StrBuf *b)
{
    sb_printf(b, "schedule %s", s->kernel ? s->kernel : "?");
    if (s->target)
        sb_printf(b, " for %s", s->target);
    if (s->variant)
        sb_printf(b, " as %s", s->variant);
    if (s->when_param) {
        sb_printf(b, " when %s in [", s->when_param);
        for (int i = 0; i < s->nwhen; i++)
            sb_printf(b, "%s%s", i ? ", " : "", dtype_name(s->when_dtypes[i]));
        sb_putc(b, ']');
    }
    sb_puts(b, " {\n");
    for (int i = 0; i < s->nitems; i++) {
        const SchedItem *it = &s->items[i];
        if (it->kind == SCHED_PARAM) {
            sb_printf(b, "  param %s in [", it->name);
            for (int j = 0; j < it->nargs; j++) {
                if (j)
                    sb_puts(b, ", ");
                print_sarg(&it->args[j], b);
            }
            sb_puts(b, "]\n");
        } else {
            sb_printf(b, "  %s(", it->name);
            for (int j = 0; j < it->nargs; j++) {
                if (j)
                    sb_puts(b, ", ");
                print_sarg(&it->args[j], b);
            }
            sb_puts(b, ")\n");
        }
    }
    sb_puts(b, "}\n");
}

void ast_print_kernel(const AstKernel *k, StrBuf *b)
{
    sb_printf(b, "kernel %s(", k->name);
    for (int i = 0; i < k->nparams; i++) {
        if (i)
            sb_puts(b, ", ");
        sb_puts(b, k->params[i].name);
        if (k->params[i].has_default)
            sb_printf(b, " = %lld", (long long)k->params[i].def);
    }
    for (int i = 0; i < k->ndtparams; i++)
        sb_printf(b, "%s%s = %s", i || k->nparams ? ", " : "", k->dtparams[i].name, dtype_name(k->dtparams[i].dtype));
    sb_puts(b, ") {\n");
    for (int i = 0; i < k->ntensors; i++)
        print_tensor(k->tensors[i], b);
    for (int i = 0; i < k->nstmts; i++)
        print_stmt(k->stmts[i], b);
    sb_puts(b, "}\n");
}

void ast_print_program(const Program *p, StrBuf *b)
{
    for (int i = 0; i < p->nkernels; i++) {
        if (i)
            sb_putc(b, '\n');
        ast_print_kernel(p->kernels[i], b);
    }
    for (int i = 0; i < p->nschedules; i++) {
        sb_putc(b, '\n');
        ast_print_schedule(p->schedules[i], b);
    }
}
