/* SPDX-License-Identifier: MIT */
/*
 * The parser of `scalekit litmus`: the C litmus format of the Linux-kernel
 * memory model (LKMM), read by a recursive-descent parser over the lexer
 * of litmus_lex.c into a struct lt_test whose processes are arrays of
 * pre-decoded operations.
 *
 * Every error is "file:line: message" and ends the parse (longjmp back to
 * lt_parse(), which frees what was built).
 */
#include "litmus_lex.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- expressions ---------------------------------------------------- */


static int parse_expr_prec(struct ps *ps, int prec, int depth);
static int parse_primary(struct ps *ps, int depth);
static int parse_primary_cast(struct ps *ps, int depth);
static void parse_call(struct ps *ps, const char *name, int dst, int line);

/* A hidden register of the process for a value that an expression reads
 * from memory ("*p", a call): numbered per statement, named so that no
 * test can name it ('%' is no character of a name). */
static int temp_reg(struct ps *ps)
{
	char name[LT_NAME];

	snprintf(name, sizeof(name), "%%t%d", ps->ntemps++);
	return lp_reg_add(ps, name);
}

/* The location a name in a process body stands for: a parameter, else a
 * location the initial state declares that is no register of the process
 * (herd7 takes a global by its name: manual/plain/C-OOTA.litmus writes
 * "*y" in a process without a parameter y); -1 otherwise. */
static int global_find(struct ps *ps, const char *name)
{
	int k = lp_param_find(ps, name);

	if (k >= 0 || lp_reg_find(ps->p, name) >= 0)
		return k;
	k = lp_loc_find(ps->t, name);
	return k < ps->ninit_locs ? k : -1;
}

/* op's address from the expression e: a parameter or a register. */
static void addr_of_expr(struct ps *ps, int e, struct lt_op *op)
{
	const struct lt_expr *x = &ps->t->expr[e];

	if (x->kind == LT_E_ADDR)
		op->loc = (short)x->v;
	else if (x->kind == LT_E_REG)
		op->areg = (short)x->v;
	else
		FAIL(ps, "unsupported: '*' on an expression other than a "
			 "parameter or a register");
}

/* "*p" in an expression: a plain load into a hidden register, emitted
 * before the operation that uses the expression (which its caller emits
 * after parsing it). */
static int parse_deref(struct ps *ps, int depth)
{
	int e = parse_primary_cast(ps, depth + 1), r = temp_reg(ps);
	struct lt_op *op = lp_emit(ps, LT_OP_LOAD);

	addr_of_expr(ps, e, op);
	op->order = LT_PLAIN;
	op->dst = (short)r;
	ps->t->plain = 1;
	return lp_new_expr(ps, LT_E_REG, r, -1, -1);
}

/* A call inside an expression: its result in a hidden register. */
static int parse_call_expr(struct ps *ps, const char *name)
{
	int r = temp_reg(ps);

	parse_call(ps, name, r, ps->tok.line);
	return lp_new_expr(ps, LT_E_REG, r, -1, -1);
}

/* A cast, "(int *)e" or "(void)e": the type goes, e stays. */
static int is_cast(struct ps *ps)
{
	struct tok t;

	if (!lp_is_punct(ps, "("))
		return 0;
	t = lp_peek_tok(ps);
	return t.kind == TK_ID && lp_is_type_name(t.text);
}

static int parse_primary_cast(struct ps *ps, int depth)
{
	if (depth > 100)
		FAIL(ps, "expression nested too deeply");
	if (is_cast(ps)) {
		lp_lex(ps);
		lp_parse_type_opt(ps);
		lp_expect(ps, ")");
	}
	return parse_primary(ps, depth);
}

static int parse_primary(struct ps *ps, int depth)
{
	char name[LT_NAME];
	int i;

	if (ps->tok.kind == TK_NUM) {
		i = lp_new_expr(ps, LT_E_IMM, ps->tok.num, -1, -1);
		lp_lex(ps);
		return i;
	}
	if (is_cast(ps))
		return parse_primary_cast(ps, depth + 1);
	if (lp_accept(ps, "(")) {
		i = parse_expr_prec(ps, 0, depth + 1);
		lp_expect(ps, ")");
		return i;
	}
	if (lp_accept(ps, "*"))
		return parse_deref(ps, depth);
	if (lp_accept(ps, "-"))
		return lp_new_expr(ps, LT_E_NEG, 0,
				parse_primary_cast(ps, depth + 1), -1);
	if (lp_accept(ps, "!"))
		return lp_new_expr(ps, LT_E_NOT, 0,
				parse_primary_cast(ps, depth + 1), -1);
	if (lp_accept(ps, "&")) {
		lp_expect_id(ps, name);
		if ((i = global_find(ps, name)) < 0)
			FAIL(ps, "'&%s': '%s' is not a parameter", name, name);
		return lp_new_expr(ps, LT_E_ADDR, i, -1, -1);
	}
	if (ps->tok.kind != TK_ID)
		FAIL(ps, "expected an expression, found '%s'", lp_tok_desc(ps));
	lp_expect_id(ps, name);
	if (lp_is_punct(ps, "("))
		return parse_call_expr(ps, name);
	if ((i = global_find(ps, name)) >= 0)
		return lp_new_expr(ps, LT_E_ADDR, i, -1, -1);
	/* A register never assigned: herd7 declares it, holding 0. */
	return lp_new_expr(ps, LT_E_REG, lp_reg_add(ps, name), -1, -1);
}

/* Binary operators from the lowest precedence up; an operator is numbered
 * prec * 4 + k, the numbers eval_bin() in litmus_exec.c switches on. */
static const char *const binops[][4] = {
	{ "||" }, { "&&" }, { "|" }, { "^" }, { "&" }, { "==", "!=" },
	{ "<", ">", "<=", ">=" }, { "+", "-" }, { "*" },
};

#define NPREC ((int)(sizeof(binops) / sizeof(binops[0])))

static int binop_at(const struct ps *ps, int prec)
{
	int k;

	for (k = 0; k < 4 && binops[prec][k]; k++)
		if (lp_is_punct(ps, binops[prec][k]))
			return k;
	return -1;
}

static int parse_expr_prec(struct ps *ps, int prec, int depth)
{
	int l, k;

	if (depth > 100)
		FAIL(ps, "expression nested too deeply");
	if (prec == NPREC)
		return parse_primary_cast(ps, depth);
	l = parse_expr_prec(ps, prec + 1, depth);
	while ((k = binop_at(ps, prec)) >= 0) {
		int op = prec * 4 + k, r;

		lp_lex(ps);
		r = parse_expr_prec(ps, prec + 1, depth + 1);
		l = lp_new_expr(ps, LT_E_BIN, 0, l, r);
		ps->t->expr[l].op = (unsigned char)op;
	}
	return l;
}

static int parse_expr(struct ps *ps)
{
	return parse_expr_prec(ps, 0, 0);
}


/* ---- operations ----------------------------------------------------- */


/* A pointer argument: a parameter, a register holding a pointer, &param,
 * in parentheses or not.  Sets op->loc or op->areg. */
static void parse_ptr(struct ps *ps, struct lt_op *op)
{
	char name[LT_NAME];

	if (lp_accept(ps, "(")) {
		parse_ptr(ps, op);
		lp_expect(ps, ")");
		return;
	}
	lp_accept(ps, "&");
	lp_expect_id(ps, name);
	if ((op->loc = (short)global_find(ps, name)) >= 0)
		return;
	if ((op->areg = (short)lp_reg_find(ps->p, name)) < 0)
		FAIL(ps, "unknown name '%s'", name);
}

static void parse_lvalue(struct ps *ps, struct lt_op *op, const char *fn)
{
	if (!lp_accept(ps, "*"))
		FAIL(ps, "%s() wants '*pointer' as its first argument", fn);
	parse_ptr(ps, op);
}

static void parse_kind_ptr(struct ps *ps, struct lt_op *op, enum lt_kind k,
			   const char *fn)
{
	static const char *const what[] = { "", "a spinlock_t",
					     "a struct srcu_struct" };

	parse_ptr(ps, op);
	if (op->loc < 0 || ps->t->loc[op->loc].kind != k)
		FAIL(ps, "%s() wants %s parameter", fn, what[k]);
}

#include "litmus_fns.h"

/* Arguments of fn by its pattern, into op (emitted after them: a value
 * argument may emit loads and calls that must come first). */
static void parse_args(struct ps *ps, const struct lt_fn *fn, struct lt_op *op)
{
	const char *a;
	int first = 1, nval = 0;

	lp_expect(ps, "(");
	for (a = fn->args; *a; a++) {
		if (!first)
			lp_expect(ps, ",");
		first = 0;
		switch (*a) {
		case 'L':
			parse_lvalue(ps, op, fn->name);
			break;
		case 'P':
			parse_ptr(ps, op);
			break;
		case 'S':
			parse_kind_ptr(ps, op, LT_SRCU, fn->name);
			break;
		case 'K':
			parse_kind_ptr(ps, op, LT_LOCK, fn->name);
			break;
		default: /* 'V' */
			if (nval++ == 0)
				op->a = parse_expr(ps);
			else
				op->b = parse_expr(ps);
		}
	}
	if (!lp_is_punct(ps, ")"))
		FAIL(ps, "%s() takes %d argument(s)", fn->name,
		     (int)strlen(fn->args));
	lp_lex(ps);
	if (fn->code == LT_OP_RMW && op->a < 0) /* inc, dec */
		op->a = lp_new_expr(ps, LT_E_IMM, 1, -1, -1);
}

/* A process that waits for a grace period of s and ends an
 * srcu_down_read() section of s might wait for its own up: the run would
 * hang (no timeout in a grace period), so it is not supported. */
static void srcu_up_sync(struct ps *ps, int code, int loc, int line)
{
	struct lt_test *t = ps->t;
	unsigned int me = 1u << (t->nprocs - 1);

	if (code == LT_OP_SRCU_UP)
		t->up_procs[loc] |= me;
	else
		t->sync_procs[loc] |= me;
	if (t->up_procs[loc] & t->sync_procs[loc] & me)
		lp_fail_at(ps, line, "unsupported: synchronize_srcu(%s) and "
			   "srcu_up_read(%s) in one process",
			   t->loc[loc].name, t->loc[loc].name);
}

/* A call, as a statement (dst < 0) or the right side of "reg = ". */
static void parse_call(struct ps *ps, const char *name, int dst, int line)
{
	struct lt_fn fn;
	struct lt_op op = { .dst = -1, .loc = -1, .areg = -1, .a = -1,
			    .b = -1 };

	if (lt_fn_find(name, &fn) < 0)
		lp_fail_at(ps, line, "unsupported: %s", name);
	if (dst >= 0 && !fn.returns)
		lp_fail_at(ps, line, "%s() returns no value", name);
	op.code = fn.code;
	op.line = line;
	op.order = (unsigned char)fn.order;
	op.rmw = (unsigned char)fn.rmw;
	op.ret_new = (unsigned char)fn.ret_new;
	op.dst = (short)dst;
	parse_args(ps, &fn, &op);
	*lp_emit(ps, fn.code) = op;
	if (fn.code == LT_OP_RCU_LOCK || fn.code == LT_OP_SYNC_RCU)
		ps->t->uses_rcu = 1;
	if (fn.code == LT_OP_FENCE && fn.order == LT_F_MEMB)
		ps->t->uses_memb = 1;
	if (fn.code == LT_OP_SRCU_DOWN || fn.code == LT_OP_SRCU_UP)
		ps->t->uses_down = 1;
	if (fn.code == LT_OP_SRCU_UP || fn.code == LT_OP_SYNC_SRCU)
		srcu_up_sync(ps, fn.code, op.loc, line);
	if (fn.then_mb) /* smp_store_mb() */
		lp_emit(ps, LT_OP_FENCE)->order = LT_F_MB;
}

/* ---- statements ----------------------------------------------------- */

static void parse_stmt(struct ps *ps, int depth);

/* "reg = expression", the expression's loads and calls first. */
static void parse_assign(struct ps *ps, int reg, int line)
{
	int n = ps->p->nops, e = parse_expr(ps);
	const struct lt_expr *x = &ps->t->expr[e];
	struct lt_op *op;

	/* "r = *p", "r = f(...)": the last operation writes the hidden
	 * register that is the whole expression; it writes r instead. */
	if (ps->p->nops > n && x->kind == LT_E_REG &&
	    ps->p->reg[x->v][0] == '%' &&
	    ps->p->ops[ps->p->nops - 1].dst == x->v) {
		ps->p->ops[ps->p->nops - 1].dst = (short)reg;
		return;
	}
	op = lp_emit(ps, LT_OP_SET);
	op->line = line;
	op->dst = (short)reg;
	op->a = e;
}

/* "*p = expression;" (the '*' already read): a plain store. */
static void parse_plain_store(struct ps *ps, int depth)
{
	struct lt_op op = { .code = LT_OP_STORE, .order = LT_PLAIN,
			    .dst = -1, .loc = -1, .areg = -1, .b = -1,
			    .line = ps->tok.line };

	addr_of_expr(ps, parse_primary_cast(ps, depth + 1), &op);
	lp_expect(ps, "=");
	op.a = parse_expr(ps);
	*lp_emit(ps, LT_OP_STORE) = op;
	ps->t->plain = 1;
}

static void parse_decl(struct ps *ps)
{
	char name[LT_NAME];
	enum lt_kind kind;
	int stars, line;

	lp_parse_type(ps, &kind, &stars);
	if (kind != LT_INT)
		FAIL(ps, "unsupported: a local of this type");
	do {
		while (lp_accept(ps, "*"))
			;
		line = ps->tok.line;
		lp_expect_id(ps, name);
		if (lp_param_find(ps, name) >= 0)
			lp_fail_at(ps, line, "'%s' is a parameter", name);
		if (lp_accept(ps, "="))
			parse_assign(ps, lp_reg_add(ps, name), line);
		else
			lp_reg_add(ps, name);
	} while (lp_accept(ps, ","));
	lp_expect(ps, ";");
}

static void parse_if(struct ps *ps, int depth)
{
	struct lt_op *op;
	int jz, jmp, cond;

	lp_expect(ps, "(");
	cond = parse_expr(ps);
	op = lp_emit(ps, LT_OP_JZ);
	jz = ps->p->nops - 1;
	op->a = cond;
	lp_expect(ps, ")");
	parse_stmt(ps, depth + 1);
	if (!lp_is_id(ps, "else")) {
		ps->p->ops[jz].target = ps->p->nops;
		return;
	}
	lp_lex(ps);
	lp_emit(ps, LT_OP_JMP);
	jmp = ps->p->nops - 1;
	ps->p->ops[jz].target = ps->p->nops;
	parse_stmt(ps, depth + 1);
	ps->p->ops[jmp].target = ps->p->nops;
}

static void parse_stmt(struct ps *ps, int depth)
{
	char name[LT_NAME];
	int line = ps->tok.line;

	if (depth > 64)
		FAIL(ps, "statements nested too deeply");
	ps->ntemps = 0; /* hidden registers live within a statement */
	if (lp_accept(ps, ";"))
		return;
	if (lp_accept(ps, "{")) {
		while (!lp_accept(ps, "}")) {
			if (ps->tok.kind == TK_EOF)
				FAIL(ps, "unterminated block");
			parse_stmt(ps, depth + 1);
		}
		return;
	}
	if (lp_is_type_start(ps)) {
		parse_decl(ps);
		return;
	}
	if (lp_is_id(ps, "if")) {
		lp_lex(ps);
		parse_if(ps, depth);
		return;
	}
	if (lp_accept(ps, "*")) {
		parse_plain_store(ps, depth);
		lp_expect(ps, ";");
		return;
	}
	if (is_cast(ps)) { /* (void)f(...); */
		parse_expr(ps);
		lp_expect(ps, ";");
		return;
	}
	if (ps->tok.kind != TK_ID)
		FAIL(ps, "unsupported: a statement starting with '%s'",
		     lp_tok_desc(ps));
	if (lp_is_id(ps, "while") || lp_is_id(ps, "for") || lp_is_id(ps, "do") ||
	    lp_is_id(ps, "goto") || lp_is_id(ps, "return") || lp_is_id(ps, "switch"))
		FAIL(ps, "unsupported: %s", ps->tok.text);
	lp_expect_id(ps, name);
	if (lp_is_punct(ps, "(")) {
		parse_call(ps, name, -1, line);
	} else if (lp_accept(ps, "=")) {
		if (lp_param_find(ps, name) >= 0)
			lp_fail_at(ps, line, "unsupported: assigning to the "
				"parameter '%s'", name);
		/* An undeclared register: herd7 declares it. */
		parse_assign(ps, lp_reg_add(ps, name), line);
	} else {
		FAIL(ps, "expected '(' or '=' after '%s', found '%s'", name,
		     lp_tok_desc(ps));
	}
	lp_expect(ps, ";");
}

/* ---- processes ------------------------------------------------------ */

static void parse_params(struct ps *ps)
{
	char name[LT_NAME];
	enum lt_kind kind;
	int stars;

	lp_expect(ps, "(");
	ps->nparams = 0;
	if (lp_accept(ps, ")"))
		return;
	do {
		if (!lp_parse_type(ps, &kind, &stars))
			FAIL(ps, "expected a parameter type, found '%s'",
			     lp_tok_desc(ps));
		if (stars < 1)
			FAIL(ps, "a parameter is a pointer to a shared location");
		lp_expect_id(ps, name);
		if (lp_param_find(ps, name) >= 0)
			FAIL(ps, "parameter '%s' twice", name);
		if (ps->nparams >= LT_MAX_LOCS)
			FAIL(ps, "too many parameters");
		memcpy(ps->param[ps->nparams], name, LT_NAME);
		ps->param_loc[ps->nparams++] = lp_loc_add(ps, name, kind);
	} while (lp_accept(ps, ","));
	lp_expect(ps, ")");
}

static void parse_proc(struct ps *ps)
{
	struct lt_test *t = ps->t;
	const char *n = ps->tok.text;
	char *end;
	long idx;

	errno = 0;
	idx = strtol(n + 1, &end, 10);
	if (*end || end == n + 1 || idx != t->nprocs)
		FAIL(ps, "expected process P%d, found '%s'", t->nprocs, n);
	lp_new_proc(ps);
	lp_lex(ps);
	parse_params(ps);
	if (!lp_is_punct(ps, "{"))
		FAIL(ps, "expected '{' to start P%ld's body", idx);
	parse_stmt(ps, 0);
}

/* ---- entry points --------------------------------------------------- */

void lt_free(struct lt_test *t)
{
	int i;

	for (i = 0; i < LT_MAX_PROCS; i++)
		free(t->proc[i].ops);
	free(t->expr);
	free(t->cond);
	memset(t, 0, sizeof(*t));
}

int lt_parse(const char *file, const char *text, size_t len,
	     struct lt_test *t, char err[LT_ERR])
{
	struct ps *ps = calloc(1, sizeof(*ps));
	int rc = 0;

	memset(t, 0, sizeof(*t));
	t->filter_root = -1;
	snprintf(t->file, sizeof(t->file), "%s", file);
	if (!ps) {
		snprintf(err, LT_ERR, "%s: out of memory", file);
		return -1;
	}
	ps->s = text;
	ps->end = text + len;
	ps->file = file;
	ps->line = 1;
	ps->t = t;
	ps->err = err;
	t->expr = calloc(LT_MAX_EXPRS, sizeof(*t->expr));
	t->cond = calloc(LT_MAX_CONDS, sizeof(*t->cond));
	if (setjmp(ps->fail) == 0) {
		if (!t->expr || !t->cond)
			lp_fail_at(ps, 1, "out of memory");
		lp_lex(ps);
		lp_parse_header(ps);
		lp_parse_init(ps);
		ps->ninit_locs = t->nlocs;
		if (ps->lisa)
			lp_parse_lisa(ps);
		while (!ps->lisa && lp_is_proc_name(ps))
			parse_proc(ps);
		if (t->nprocs == 0)
			FAIL(ps, "expected process P0, found '%s'",
			     lp_tok_desc(ps));
		lp_reg_inits(ps);
		lp_parse_final(ps);
	} else {
		lt_free(t);
		rc = -1;
	}
	free(ps);
	return rc;
}
