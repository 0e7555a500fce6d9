/* The PDL grammar, for the Lemon parser generator (generated into the build folder).
 *
 * Each action makes one builder call (parser/build.c), as in SQLite's parse.y, so
 * this file stays a readable statement of the syntax.  docs/language.md is the
 * reference; the comments here only say why a rule is shaped as it is. */

%name perfcParse
%token_prefix TK_
%token_type {Token}
%extra_context {ParseCtx *ctx}
%stack_size 0

%include {
#include <assert.h>
#include <stdlib.h>
#include "parse.h"
}

%syntax_error {
    if (!ctx->failed) {
        if (yymajor == 0)
            diag_error(ctx->d, TOKEN.span, "unexpected end of file: something is unfinished (a missing '}' or ')'?)");
        else if (TOKEN.kind == TK_IDENT)
            diag_error(ctx->d, TOKEN.span, "syntax error: unexpected name '%s'", TOKEN.text);
        else
            diag_error(ctx->d, TOKEN.span, "syntax error: unexpected %s", token_name(TOKEN.kind));
    }
    ctx->failed = true;
}
%parse_failure { ctx->failed = true; }

/* Precedence, lowest first.  A reduction's body extends as far as it can:
 * `sum(k) A[i,k] * B[k,j] + C[i,j]` sums the whole right-hand side. */
%right REDUCE.
%left OROR.
%left ANDAND.
%nonassoc EQ NE LT LE GT GE.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right NOT.
%right POW.      /* binds tighter than unary minus, as in Python: -x**2 is -(x**2) */

/* ---- files ---- */

program ::= items.
program ::= SCHED_ONLY sitems(L).          { ctx->sched_only = mk_schedule(ctx, (Token){0}, (Token){0}, NULL, L, (Token){0}); }

items ::= .
items ::= items item.
item ::= kernel(K).                         { add_kernel(ctx, K); }
item ::= schedule(S).                       { add_schedules(ctx, S); }
item ::= SEMI.

/* ---- kernels ---- */

%type kernel {AstKernel *}
kernel(A) ::= KERNEL IDENT(N) LP params(P) RP LBRACE kitems(I) RBRACE(R).
                                            { A = mk_kernel(ctx, N, P, I, R); }

%type params {PtrVec *}
params(A) ::= .                             { A = list_new(ctx); }
params(A) ::= paramlist(L).                 { A = L; }
%type paramlist {PtrVec *}
paramlist(A) ::= param(P).                  { A = list_add(ctx, list_new(ctx), P); }
paramlist(A) ::= paramlist(L) COMMA param(P). { A = list_add(ctx, L, P); }
%type param {AstParam *}
param(A) ::= IDENT(N).                      { A = mk_param(ctx, N, false, N, false); }
param(A) ::= IDENT(N) ASSIGN INT(V).        { A = mk_param(ctx, N, true, V, false); }
param(A) ::= IDENT(N) ASSIGN MINUS INT(V).  { A = mk_param(ctx, N, true, V, true); }
/* a dtype parameter, `T = f32`: the default is a name, so it is never a size */
param(A) ::= IDENT(N) ASSIGN IDENT(V).      { A = mk_dtparam(ctx, N, V); }

/* Declarations and statements, in any order; mk_kernel sorts them out.  Items are
 * tagged pointers: a declaration is stored as an AstTensor, a statement as an
 * AstStmt, told apart by the low bit (both are 16-byte aligned arena objects). */
%type kitems {PtrVec *}
kitems(A) ::= .                             { A = list_new(ctx); }
kitems(A) ::= kitems(L) kitem(I).           { A = I ? list_add(ctx, L, I) : L; }

%type kitem {void *}
kitem(A) ::= SEMI.                          { A = NULL; }
kitem(A) ::= decl(D).                       { A = D; }
kitem(A) ::= stmt(S).                       { A = (void *)((uintptr_t)S | 1); }

%type decl {AstTensor *}
decl(A) ::= declkind(K) IDENT(N) COLON IDENT(D) shape(S).
                                            { A = mk_tensor(ctx, K.ival, N, D, S, S == NULL); }
decl(A) ::= decl(T) PAD(K) LP expr(P) RP.   { A = T; tensor_set_pad(ctx, A, P, K); }
/* An input's domain (what the harness draws it from) follows the declaration:
 * range(lo, hi) or distinct(lo, hi); the lexer makes RANGE and DISTINCT only of
 * those words directly before '(', so they remain ordinary names elsewhere. */
decl(A) ::= decl(T) RANGE(R) LP expr(L) COMMA expr(H) RP(E).
                                            { A = T; tensor_set_domain(ctx, A, R, L, H, E, false); }
decl(A) ::= decl(T) DISTINCT(R) LP expr(L) COMMA expr(H) RP(E).
                                            { A = T; tensor_set_domain(ctx, A, R, L, H, E, true); }
%type declkind {Token}
declkind(A) ::= IN(T).                      { A = T; A.ival = TENSOR_IN; }
declkind(A) ::= OUT(T).                     { A = T; A.ival = TENSOR_OUT; }
declkind(A) ::= LOCAL(T).                   { A = T; A.ival = TENSOR_LOCAL; }
%type shape {PtrVec *}
shape(A) ::= .                              { A = NULL; }
shape(A) ::= LB exprlist(L) RB.             { A = L; }

%type stmt {AstStmt *}
stmt(A) ::= IDENT(N) LB exprlist(L) RB ASSIGN expr(E) whereopt(W).
                                            { A = mk_stmt(ctx, N, L, E, W); }
stmt(A) ::= IDENT(N) ASSIGN expr(E) whereopt(W).
                                            { A = mk_stmt(ctx, N, NULL, E, W); }
/* a scatter, Y[T[i]] += X[i]: sema turns it into a masked sum (lang/sema.c) */
stmt(A) ::= IDENT(N) LB exprlist(L) RB PLUSEQ expr(E) whereopt(W).
                                            { A = mk_stmt(ctx, N, L, E, W); A->scatter = true; }
%type whereopt {AstExpr *}
whereopt(A) ::= .                           { A = NULL; }
whereopt(A) ::= WHERE expr(E).              { A = E; }

/* ---- expressions ---- */

%type expr {AstExpr *}
expr(A) ::= INT(T).                         { A = mk_int(ctx, T); }
expr(A) ::= FLOAT(T).                       { A = mk_float(ctx, T); }
expr(A) ::= IDENT(T).                       { A = mk_name(ctx, T); }
expr(A) ::= IDENT(T) LB exprlist(L) RB(R).  { A = mk_access(ctx, T, L, R.span); }
expr(A) ::= IDENT(T) LP exprlist(L) RP(R).  { A = mk_call(ctx, T, L, R.span); }
expr(A) ::= LP(L) expr(E) RP(R).            { A = mk_paren(ctx, L, E, R); }
expr(A) ::= REDUCE(T) LP redvars(V) RP expr(E). [REDUCE]
                                            { A = mk_reduce(ctx, T, V, E); }
expr(A) ::= MINUS(T) expr(E). [NOT]         { A = mk_unary(ctx, OP_NEG, T, E); }
expr(A) ::= NOT(T) expr(E).                 { A = mk_unary(ctx, OP_NOT, T, E); }
expr(A) ::= expr(X) PLUS expr(Y).           { A = mk_binary(ctx, OP_ADD, X, Y); }
expr(A) ::= expr(X) MINUS expr(Y).          { A = mk_binary(ctx, OP_SUB, X, Y); }
expr(A) ::= expr(X) STAR expr(Y).           { A = mk_binary(ctx, OP_MUL, X, Y); }
expr(A) ::= expr(X) SLASH expr(Y).          { A = mk_binary(ctx, OP_DIV, X, Y); }
expr(A) ::= expr(X) PERCENT expr(Y).        { A = mk_binary(ctx, OP_MOD, X, Y); }
expr(A) ::= expr(X) POW expr(Y).            { A = mk_pow(ctx, X, Y); }
expr(A) ::= expr(X) LT expr(Y).             { A = mk_binary(ctx, OP_LT, X, Y); }
expr(A) ::= expr(X) LE expr(Y).             { A = mk_binary(ctx, OP_LE, X, Y); }
expr(A) ::= expr(X) GT expr(Y).             { A = mk_binary(ctx, OP_GT, X, Y); }
expr(A) ::= expr(X) GE expr(Y).             { A = mk_binary(ctx, OP_GE, X, Y); }
expr(A) ::= expr(X) EQ expr(Y).             { A = mk_binary(ctx, OP_EQ, X, Y); }
expr(A) ::= expr(X) NE expr(Y).             { A = mk_binary(ctx, OP_NE, X, Y); }
expr(A) ::= expr(X) ANDAND expr(Y).         { A = mk_binary(ctx, OP_AND, X, Y); }
expr(A) ::= expr(X) OROR expr(Y).           { A = mk_binary(ctx, OP_OR, X, Y); }

%type exprlist {PtrVec *}
exprlist(A) ::= expr(E).                    { A = list_add(ctx, list_new(ctx), E); }
exprlist(A) ::= exprlist(L) COMMA expr(E).  { A = list_add(ctx, L, E); }

%type redvars {PtrVec *}
redvars(A) ::= redvar(V).                   { A = list_add(ctx, list_new(ctx), V); }
redvars(A) ::= redvars(L) COMMA redvar(V).  { A = list_add(ctx, L, V); }
%type redvar {AstRedVar *}
redvar(A) ::= IDENT(N).                     { A = mk_redvar(ctx, N, NULL, NULL); }
redvar(A) ::= IDENT(N) IN expr(L) DOTDOT expr(H).
                                            { A = mk_redvar(ctx, N, L, H); }

/* ---- schedules ---- */

/* `schedule gemm, gemm_nt for cpu as fast when T in [f32] { ... }`: one block per
 * kernel named.  `as` and `when` are ordinary names that the builders check, so
 * they stay free for tensors and loops; after `NAME NAME`, IN decides which. */
%type schedule {PtrVec *}
schedule(A) ::= SCHEDULE(K) knames(N) target(T) sopts(O) LBRACE sitems(L) RBRACE(R).
                                            { A = mk_schedules(ctx, K, N, T, O, L, R); }
%type knames {PtrVec *}
knames(A) ::= IDENT(N).                     { A = list_add(ctx, list_new(ctx), mk_token(ctx, N)); }
knames(A) ::= knames(L) COMMA IDENT(N).     { A = list_add(ctx, L, mk_token(ctx, N)); }
%type sopts {AstSchedule *}
sopts(A) ::= .                              { A = mk_sched_head(ctx); }
sopts(A) ::= sopts(O) IDENT(W) IDENT(V).    { A = sched_head_as(ctx, O, W, V); }
sopts(A) ::= sopts(O) IDENT(W) IDENT(P) IN LB sargs(L) RB(R).
                                            { A = sched_head_when(ctx, O, W, P, L, R); }
%type target {const char *}
target(A) ::= .                             { A = NULL; }
target(A) ::= FOR tname(T).                 { A = T; }
%type tname {const char *}
tname(A) ::= IDENT(T).                      { A = mk_target(ctx, NULL, T); }
tname(A) ::= STRING(T).                     { A = mk_target(ctx, NULL, T); }
tname(A) ::= tname(P) MINUS IDENT(T).       { A = mk_target(ctx, P, T); }

%type sitems {PtrVec *}
sitems(A) ::= .                             { A = list_new(ctx); }
sitems(A) ::= sitems(L) sitem(I).           { A = I ? list_add(ctx, L, I) : L; }
%type sitem {SchedItem *}
sitem(A) ::= SEMI.                          { A = NULL; }
sitem(A) ::= IDENT(N) LP RP(R).             { A = mk_sched_call(ctx, N, NULL, R); }
sitem(A) ::= IDENT(N) LP sargs(L) RP(R).    { A = mk_sched_call(ctx, N, L, R); }
sitem(A) ::= PARAM(K) IDENT(N) IN LB sargs(L) RB.
                                            { A = mk_sched_param(ctx, K, N, L, NULL); }
sitem(A) ::= PARAM(K) IDENT(N) ASSIGN sarg(V).
                                            { A = mk_sched_param(ctx, K, N, NULL, V); }

%type sargs {PtrVec *}
sargs(A) ::= sarg(V).                       { A = list_add(ctx, list_new(ctx), V); }
sargs(A) ::= sargs(L) COMMA sarg(V).        { A = list_add(ctx, L, V); }
%type sarg {SchedArg *}
sarg(A) ::= IDENT(T).                       { A = mk_sarg_name(ctx, T); }
sarg(A) ::= PAD(T).                         { A = mk_sarg_pad(ctx, T); } /* tail=pad */
sarg(A) ::= INT(T).                         { A = mk_sarg_int(ctx, T, false); }
sarg(A) ::= MINUS INT(T).                   { A = mk_sarg_int(ctx, T, true); }
sarg(A) ::= FLOAT(T).                       { A = mk_sarg_float(ctx, T, false); }
sarg(A) ::= MINUS FLOAT(T).                 { A = mk_sarg_float(ctx, T, true); }
sarg(A) ::= STRING(T).                      { A = mk_sarg_string(ctx, T); }
sarg(A) ::= LB(L) sargs(V) RB(R).           { A = mk_sarg_list(ctx, L, V, R); }
sarg(A) ::= IDENT(K) ASSIGN sarg(V).        { A = sarg_keyword(ctx, K, V); }
