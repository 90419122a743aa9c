/* SPDX-License-Identifier: MIT */
/*
 * tools/litmus_lex.h - what the three files of the parser of `scalekit
 * litmus` share: the lexer (litmus_lex.c: the parser's state, the tokens,
 * the error exit, the tables of names), the parts around the processes
 * (litmus_decl.c), the processes of a C test (litmus_parse.c) and of a
 * LISA test (litmus_lisa.c).  Internal to them.
 */
#ifndef SK_LITMUS_LEX_H
#define SK_LITMUS_LEX_H

#include "litmus.h"

#include <setjmp.h>

enum tok_kind { TK_EOF, TK_ID, TK_NUM, TK_PUNCT };

struct tok {
	int kind;
	int line;
	long num;
	char text[LT_NAME];
};

/* A register of the initial state ("0:r1=x;"), given to its process once
 * the process is parsed. */
struct lp_reginit {
	int proc;
	char name[LT_NAME];
	long v;	 /* the value, or the location pointed to */
	int loc; /* 1: v is a location index */
};

struct ps {
	const char *s, *end, *file;
	int line;
	int paren, brace; /* nesting, for telling (* comments from (*x) */
	struct tok tok;	  /* the current token */
	struct lt_test *t;
	struct lt_proc *p;   /* the process being parsed */
	int nparams;
	char param[LT_MAX_LOCS][LT_NAME];
	int param_loc[LT_MAX_LOCS];
	int ntemps; /* hidden registers of the process (loads in expressions) */
	int ninit_locs; /* t->loc[0..ninit_locs): the initial state's */
	int lisa;   /* the test is in herd7's LISA format */
	int nreginit;
	struct lp_reginit reginit[LT_MAX_PROCS * LT_MAX_REGS];
	char *err;
	jmp_buf fail;
};

/* lp_fail_at() - "file:line: message" into ps->err, and back to
 * lt_parse() (longjmp). */
__attribute__((noreturn, format(printf, 3, 4))) void
lp_fail_at(struct ps *ps, int line, const char *fmt, ...);

#define FAIL(ps, ...) lp_fail_at((ps), (ps)->tok.line, __VA_ARGS__)

/* The lexer: lp_lex() reads the next token into ps->tok. */
void lp_lex(struct ps *ps);
int lp_is_punct(const struct ps *ps, const char *p);
int lp_is_id(const struct ps *ps, const char *id);
const char *lp_tok_desc(const struct ps *ps);
int lp_accept(struct ps *ps, const char *p); /* skip p if current */
void lp_expect(struct ps *ps, const char *p); /* skip p, or fail */
void lp_expect_id(struct ps *ps, char out[LT_NAME]);
struct tok lp_peek_tok(struct ps *ps); /* the token after the current */

/* Names: index of a location, a register of p, a parameter's location
 * (-1: none); the _add functions fail when a table is full. */
int lp_loc_find(const struct lt_test *t, const char *name);
int lp_loc_add(struct ps *ps, const char *name, enum lt_kind kind);
int lp_reg_find(const struct lt_proc *p, const char *name);
int lp_reg_add(struct ps *ps, const char *name);
int lp_param_find(const struct ps *ps, const char *name);

/* litmus_decl.c: types ("int *", "struct srcu_struct *": the kind of
 * location and the stars; 0 when no type starts here), the header, the
 * initial state, values (a number, a location, &location), process names
 * and the final clause. */
int lp_parse_type(struct ps *ps, enum lt_kind *kind, int *stars);
void lp_parse_type_opt(struct ps *ps); /* a type if one is there */
int lp_is_type_name(const char *w);
int lp_is_type_start(const struct ps *ps);
void lp_parse_header(struct ps *ps);
void lp_parse_init(struct ps *ps);
void lp_parse_value(struct ps *ps, long *v, int *loc);
int lp_is_proc_name(const struct ps *ps);
void lp_reg_inits(struct ps *ps); /* after the processes: "0:r1=x" */
void lp_parse_final(struct ps *ps);

/* litmus_decl.c too: a new process (ps->p), an operation of ps->p (its
 * fields -1 or 0, its line the current token's), an expression node. */
void lp_new_proc(struct ps *ps);
struct lt_op *lp_emit(struct ps *ps, int code);
int lp_new_expr(struct ps *ps, int kind, long v, int l, int r);

/* litmus_lisa.c: the processes of a test in herd7's LISA format (a table
 * of columns, "P0 | P1 ;" then one instruction per column and row). */
void lp_parse_lisa(struct ps *ps);

#endif /* SK_LITMUS_LEX_H */
