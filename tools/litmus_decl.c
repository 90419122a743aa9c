/* SPDX-License-Identifier: MIT */
/*
 * What surrounds the processes of a litmus test, for the parser of
 * `scalekit litmus` (litmus_parse.c, which parses the processes): the
 * types, the header line, the initial state (locations and registers)
 * and the final clause (locations [...], filter, exists/~exists/forall);
 * and the tables both front ends (C, LISA) fill: processes, operations
 * and expressions.
 */
#include "litmus_lex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- types ---------------------------------------------------------- */

/* A type (int, long, unsigned ..., atomic_t, spinlock_t, struct
 * srcu_struct, intptr_t) and its stars; returns 0 when the current token
 * starts no type. */
static const char *const ints[] = { "int", "long", "unsigned", "signed",
				    "short", "char", "void", "intptr_t",
				    "uintptr_t", "atomic_t", "atomic_long_t",
				    "bool", "u32", "u64", "s32", "s64",
				    "const", "volatile" };

#define NINTS (sizeof(ints) / sizeof(ints[0]))

int lp_parse_type(struct ps *ps, enum lt_kind *kind, int *stars)
{
	size_t i;
	int any = 0;

	*kind = LT_INT;
	*stars = 0;
	if (lp_is_id(ps, "spinlock_t")) {
		*kind = LT_LOCK;
		any = 1;
		lp_lex(ps);
	} else if (lp_is_id(ps, "struct")) {
		lp_lex(ps);
		if (!lp_is_id(ps, "srcu_struct"))
			FAIL(ps, "unsupported: struct %s", lp_tok_desc(ps));
		*kind = LT_SRCU;
		any = 1;
		lp_lex(ps);
	} else {
		for (;;) {
			for (i = 0; i < NINTS; i++)
				if (lp_is_id(ps, ints[i]))
					break;
			if (i == NINTS)
				break;
			any = 1;
			lp_lex(ps);
		}
	}
	if (!any)
		return 0;
	while (lp_accept(ps, "*"))
		++*stars;
	return 1;
}

void lp_parse_type_opt(struct ps *ps)
{
	enum lt_kind kind;
	int stars;

	lp_parse_type(ps, &kind, &stars);
}

int lp_is_type_name(const char *w)
{
	size_t i;

	for (i = 0; i < NINTS; i++)
		if (strcmp(w, ints[i]) == 0)
			return 1;
	return strcmp(w, "spinlock_t") == 0 || strcmp(w, "struct") == 0;
}

int lp_is_type_start(const struct ps *ps)
{
	return ps->tok.kind == TK_ID && lp_is_type_name(ps->tok.text);
}

/* ---- processes, operations, expressions ---------------------------- */

void lp_new_proc(struct ps *ps)
{
	struct lt_test *t = ps->t;

	if (t->nprocs >= LT_MAX_PROCS)
		FAIL(ps, "too many processes (at most %d)", LT_MAX_PROCS);
	ps->p = &t->proc[t->nprocs++];
	ps->p->ops = calloc(LT_MAX_OPS, sizeof(struct lt_op));
	if (!ps->p->ops)
		FAIL(ps, "out of memory");
}

struct lt_op *lp_emit(struct ps *ps, int code)
{
	struct lt_proc *p = ps->p;
	struct lt_op *op;

	if (p->nops >= LT_MAX_OPS)
		FAIL(ps, "process too long (at most %d operations)",
		     LT_MAX_OPS);
	op = &p->ops[p->nops++];
	memset(op, 0, sizeof(*op));
	op->code = (unsigned char)code;
	op->dst = op->loc = op->areg = -1;
	op->a = op->b = -1;
	op->line = ps->tok.line;
	return op;
}

int lp_new_expr(struct ps *ps, int kind, long v, int l, int r)
{
	struct lt_test *t = ps->t;
	struct lt_expr *e;

	if (t->nexprs >= LT_MAX_EXPRS)
		FAIL(ps, "test too large (expressions)");
	e = &t->expr[t->nexprs];
	e->kind = (unsigned char)kind;
	e->v = v;
	e->l = l;
	e->r = r;
	e->op = 0;
	return t->nexprs++;
}

/* ---- the header and the initial state ------------------------------ */

/* Whether the line at p is "Key=..." (a name, then '='). */
static int is_meta_line(const char *p, const char *end)
{
	if (p >= end || !(isalpha((unsigned char)*p) || *p == '_'))
		return 0;
	while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
		p++;
	return p < end && *p == '=';
}

/* The lines that herd7's generated tests put between the header and the
 * initial state (a quoted description, "Prefetch=...", "Com=...",
 * "Orig=..."): skipped, as herd7 does. */
static void skip_meta(struct ps *ps)
{
	for (;;) {
		const char *p = ps->s;

		while (p < ps->end && (*p == '\n' || *p == '\r' ||
				       *p == ' ' || *p == '\t')) {
			if (*p == '\n')
				ps->line++;
			p++;
		}
		ps->s = p;
		if (p >= ps->end || (*p != '"' && !is_meta_line(p, ps->end)))
			return;
		while (ps->s < ps->end && *ps->s != '\n')
			ps->s++;
	}
}

void lp_parse_header(struct ps *ps)
{
	size_t n = 0;

	ps->lisa = lp_is_id(ps, "LISA");
	if (!lp_is_id(ps, "C") && !ps->lisa)
		FAIL(ps, "a C litmus test starts with 'C <name>' (herd7's LISA "
			 "format with 'LISA <name>'), found '%s'",
		     lp_tok_desc(ps));
	/* The name is the rest of the line (it may hold + - . =), up to a
	 * (* comment. */
	while (ps->s < ps->end && (*ps->s == ' ' || *ps->s == '\t'))
		ps->s++;
	while (ps->s < ps->end && *ps->s != '\n' && *ps->s != '\r' &&
	       !(*ps->s == '(' && ps->s + 1 < ps->end && ps->s[1] == '*')) {
		if (n + 1 < sizeof(ps->t->name))
			ps->t->name[n++] = *ps->s;
		ps->s++;
	}
	while (n > 0 && isspace((unsigned char)ps->t->name[n - 1]))
		n--;
	ps->t->name[n] = '\0';
	if (n == 0)
		FAIL(ps, "the test has no name after 'C'");
	skip_meta(ps);
	lp_lex(ps);
}

/* A value in the initial state or the final clause: a number, -number,
 * a location (a pointer to it) or &location.  Returns the location index
 * in *loc, or -1 with the number in *v. */
void lp_parse_value(struct ps *ps, long *v, int *loc)
{
	int neg = lp_accept(ps, "-"), amp = !neg && lp_accept(ps, "&");

	*loc = -1;
	if (!neg && !amp && lp_is_id(ps, "ATOMIC_INIT")) {
		lp_lex(ps);
		lp_expect(ps, "(");
		lp_parse_value(ps, v, loc);
		lp_expect(ps, ")");
		return;
	}
	if (ps->tok.kind == TK_NUM && !amp) {
		*v = neg ? -ps->tok.num : ps->tok.num;
		lp_lex(ps);
		return;
	}
	if (ps->tok.kind != TK_ID || neg)
		FAIL(ps, "expected a value, found '%s'", lp_tok_desc(ps));
	*loc = lp_loc_add(ps, ps->tok.text, LT_INT);
	lp_lex(ps);
}

int lp_is_proc_name(const struct ps *ps)
{
	return ps->tok.kind == TK_ID && ps->tok.text[0] == 'P' &&
	       isdigit((unsigned char)ps->tok.text[1]);
}

/* "0:r1=x;" (or P0:r1): kept until process 0 is parsed (lp_reg_inits()). */
static void parse_init_reg(struct ps *ps)
{
	struct lp_reginit *ri;
	long proc = ps->tok.kind == TK_NUM ? ps->tok.num :
					     strtol(ps->tok.text + 1, NULL, 10);
	int loc;

	if (proc < 0 || proc >= LT_MAX_PROCS)
		FAIL(ps, "no process %ld", proc);
	if (ps->nreginit >= LT_MAX_PROCS * LT_MAX_REGS)
		FAIL(ps, "too many initial register values");
	ri = &ps->reginit[ps->nreginit++];
	ri->proc = (int)proc;
	lp_lex(ps);
	lp_expect(ps, ":");
	lp_parse_type_opt(ps);
	lp_expect_id(ps, ri->name);
	lp_expect(ps, "=");
	lp_parse_value(ps, &ri->v, &loc);
	ri->loc = loc >= 0;
	if (loc >= 0)
		ri->v = loc;
	if (!lp_accept(ps, ";") && !lp_is_punct(ps, "}"))
		FAIL(ps, "expected ';' after the initial value of '%s'",
		     ri->name);
}

/* After the processes: give each its initial register values. */
void lp_reg_inits(struct ps *ps)
{
	int i, r;

	for (i = 0; i < ps->nreginit; i++) {
		const struct lp_reginit *ri = &ps->reginit[i];

		if (ri->proc >= ps->t->nprocs)
			FAIL(ps, "no process %d (initial value of %d:%s)",
			     ri->proc, ri->proc, ri->name);
		ps->p = &ps->t->proc[ri->proc];
		r = lp_reg_add(ps, ri->name);
		ps->p->reg_init[r] = ri->v;
		ps->p->reg_init_ptr[r] = (unsigned char)ri->loc;
	}
}

static void parse_init_item(struct ps *ps)
{
	struct lt_test *t = ps->t;
	enum lt_kind kind = LT_INT;
	char name[LT_NAME];
	int stars, l, target;
	long v = 0;

	if (ps->tok.kind == TK_NUM || lp_is_proc_name(ps)) {
		parse_init_reg(ps);
		return;
	}
	lp_parse_type(ps, &kind, &stars);
	/* "int 0:r1 = z;": a register typed before its process, as herd7
	 * takes it (paulmckrcu/litmus's C-RCU-remove); registers are not
	 * typed here. */
	if (ps->tok.kind == TK_NUM || lp_is_proc_name(ps)) {
		parse_init_reg(ps);
		return;
	}
	lp_expect_id(ps, name);
	if (lp_is_punct(ps, "["))
		FAIL(ps, "unsupported: arrays");
	l = lp_loc_add(ps, name, kind);
	if (lp_accept(ps, "=")) {
		if (kind != LT_INT)
			FAIL(ps, "'%s' cannot be given an initial value", name);
		lp_parse_value(ps, &v, &target);
		t->loc[l].init_ptr = target >= 0;
		t->loc[l].init = target >= 0 ? target : v;
	}
	if (!lp_accept(ps, ";") && !lp_is_punct(ps, "}"))
		FAIL(ps, "expected ';' after the initial value of '%s'", name);
}

void lp_parse_init(struct ps *ps)
{
	if (!lp_accept(ps, "{"))
		return;
	while (!lp_accept(ps, "}")) {
		if (ps->tok.kind == TK_EOF)
			FAIL(ps, "unterminated initial state");
		if (lp_accept(ps, ";"))
			continue;
		parse_init_item(ps);
	}
}


/* ---- the final clause ----------------------------------------------- */

static int obs_add(struct ps *ps, int proc, int idx)
{
	struct lt_test *t = ps->t;
	int i;

	for (i = 0; i < t->nobs; i++)
		if (t->obs[i].proc == proc && t->obs[i].idx == idx)
			return i;
	if (t->nobs >= LT_MAX_OBS)
		FAIL(ps, "the final clause names too many items (at most %d)",
		     LT_MAX_OBS);
	t->obs[t->nobs].proc = proc;
	t->obs[t->nobs].idx = idx;
	return t->nobs++;
}

/* A register of a process starts here: "0:" or "P0:". */
static int is_item_start(struct ps *ps)
{
	struct tok t;

	if (ps->tok.kind != TK_NUM && !lp_is_proc_name(ps))
		return 0;
	t = lp_peek_tok(ps);
	return t.kind == TK_PUNCT && strcmp(t.text, ":") == 0;
}

/* 0:r0 (or P0:r0) or a location; shown_only: an item of locations [...],
 * where a register the process does not have is left out. */
static int parse_item(struct ps *ps, int shown_only)
{
	struct lt_test *t = ps->t;
	char name[LT_NAME];
	long proc;
	int r;

	if (ps->tok.kind == TK_NUM || lp_is_proc_name(ps)) {
		proc = ps->tok.kind == TK_NUM ? ps->tok.num :
						strtol(ps->tok.text + 1, NULL, 10);
		if (proc < 0 || proc >= t->nprocs)
			FAIL(ps, "no process %ld", proc);
		lp_lex(ps);
		lp_expect(ps, ":");
		lp_expect_id(ps, name);
		r = lp_reg_find(&t->proc[proc], name);
		if (r < 0 && shown_only) /* locations [...]: herd7 shows it */
			return -1;
		if (r < 0)
			FAIL(ps, "P%ld has no register '%s'", proc, name);
		return obs_add(ps, (int)proc, r);
	}
	lp_accept(ps, "*");
	lp_expect_id(ps, name);
	if ((r = lp_loc_find(t, name)) < 0)
		FAIL(ps, "unknown location '%s'", name);
	if (t->loc[r].kind != LT_INT)
		FAIL(ps, "'%s' cannot be observed", name);
	return obs_add(ps, -1, r);
}

static int new_cond(struct ps *ps, int kind, int l, int r)
{
	struct lt_test *t = ps->t;

	if (t->nconds >= LT_MAX_CONDS)
		FAIL(ps, "final clause too large");
	t->cond[t->nconds].kind = (unsigned char)kind;
	t->cond[t->nconds].l = l;
	t->cond[t->nconds].r = r;
	return t->nconds++;
}

static int parse_cond(struct ps *ps, int depth);

static int parse_cond_atom(struct ps *ps, int depth)
{
	int c, neq, loc;
	long v;

	if (depth > 100)
		FAIL(ps, "final clause nested too deeply");
	if (lp_accept(ps, "~"))
		return new_cond(ps, LT_C_NOT, parse_cond_atom(ps, depth + 1),
				-1);
	if (lp_accept(ps, "(")) {
		c = parse_cond(ps, depth + 1);
		lp_expect(ps, ")");
		return c;
	}
	if (lp_is_id(ps, "true") || lp_is_id(ps, "false")) {
		c = new_cond(ps, LT_C_TRUE, -1, -1);
		if (lp_is_id(ps, "false"))
			c = new_cond(ps, LT_C_NOT, c, -1);
		lp_lex(ps);
		return c;
	}
	c = new_cond(ps, LT_C_EQ, -1, -1);
	ps->t->cond[c].obs = parse_item(ps, 0);
	neq = lp_is_punct(ps, "!=");
	if (neq || lp_is_punct(ps, "==")) /* "==": herd7 takes it too */
		lp_lex(ps);
	else
		lp_expect(ps, "=");
	if (is_item_start(ps)) { /* 0:r0=1:r0 */
		ps->t->cond[c].kind = LT_C_EQ_OBS;
		ps->t->cond[c].obs2 = parse_item(ps, 0);
	} else {
		lp_parse_value(ps, &v, &loc);
		ps->t->cond[c].value = loc >= 0 ? LT_PTR_TAG + loc : v;
	}
	return neq ? new_cond(ps, LT_C_NOT, c, -1) : c;
}

static int parse_cond(struct ps *ps, int depth)
{
	int l = parse_cond_atom(ps, depth);

	for (;;) {
		if (lp_accept(ps, "/\\"))
			l = new_cond(ps, LT_C_AND, l,
				     parse_cond_atom(ps, depth + 1));
		else if (lp_accept(ps, "\\/"))
			l = new_cond(ps, LT_C_OR, l,
				     parse_cond_atom(ps, depth + 1));
		else
			return l;
	}
}

static void parse_locations(struct ps *ps)
{
	lp_lex(ps);
	lp_expect(ps, "[");
	while (!lp_accept(ps, "]")) {
		if (ps->tok.kind == TK_EOF)
			FAIL(ps, "unterminated locations [...]");
		if (lp_accept(ps, ";"))
			continue;
		parse_item(ps, 1);
		lp_accept(ps, "*"); /* "1:r1*": herd7 shows what r1 points to */
	}
}

void lp_parse_final(struct ps *ps)
{
	struct lt_test *t = ps->t;
	const char *b;
	size_t n;

	if (lp_is_id(ps, "locations"))
		parse_locations(ps);
	if (lp_is_id(ps, "filter")) {
		lp_lex(ps);
		t->filter_root = parse_cond(ps, 0);
	}
	if (ps->tok.kind == TK_EOF && t->filter_root < 0) {
		/* No final clause (herd7 takes it; manual/locked/
		 * self-deadlock.litmus): nothing to observe, a condition
		 * that always holds.  A filter needs one. */
		t->quant = LT_EXISTS;
		t->cond_root = new_cond(ps, LT_C_TRUE, -1, -1);
		snprintf(t->clause, sizeof(t->clause), "(none)");
		return;
	}
	if (lp_accept(ps, "~")) {
		if (!lp_is_id(ps, "exists"))
			FAIL(ps, "expected 'exists' after '~'");
		t->quant = LT_NOT_EXISTS;
	} else if (lp_is_id(ps, "forall")) {
		t->quant = LT_FORALL;
	} else if (lp_is_id(ps, "exists")) {
		t->quant = LT_EXISTS;
	} else {
		FAIL(ps, "expected a process, 'exists', '~exists' or "
			 "'forall', found '%s'", lp_tok_desc(ps));
	}
	b = ps->s; /* just after the keyword */
	lp_lex(ps);
	t->cond_root = parse_cond(ps, 0);
	n = (size_t)(ps->s - b);
	while (n > 0 && isspace((unsigned char)b[0]))
		b++, n--;
	while (n > 0 && (isspace((unsigned char)b[n - 1]) ||
			 (b[n - 1] == ';' && lp_is_punct(ps, ";"))))
		n--;
	if (n >= sizeof(t->clause))
		n = sizeof(t->clause) - 1;
	memcpy(t->clause, b, n);
	t->clause[n] = '\0';
	lp_accept(ps, ";"); /* "exists (...);": herd7 takes it */
	if (ps->tok.kind != TK_EOF)
		FAIL(ps, "unexpected '%s' after the final clause", lp_tok_desc(ps));
}
