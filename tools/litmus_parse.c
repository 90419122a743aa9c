/* SPDX-License-Identifier: MIT */
/*
 * The parser of `scalekit litmus`: the C litmus format of the Linux-kernel
 * memory model (LKMM), read by a lexer and a recursive-descent parser into
 * a struct lt_test whose processes are arrays of pre-decoded operations.
 *
 * Every error is "file:line: message" and ends the parse (longjmp back to
 * lt_parse(), which frees what was built).  The lexer never reads past the
 * end of the text, which need not end in NUL (the fuzz harness passes raw
 * bytes).
 */
#include "litmus.h"

#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind { TK_EOF, TK_ID, TK_NUM, TK_PUNCT };

struct tok {
	int kind;
	int line;
	long num;
	char text[LT_NAME];
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
	char *err;
	jmp_buf fail;
};

void lt_verror(char out[LT_ERR], const char *file, int line,
	       const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(out, LT_ERR, "%s:%d: %s", file, line, msg);
}

static __attribute__((noreturn, format(printf, 3, 4))) void
fail_at(struct ps *ps, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lt_verror(ps->err, ps->file, line, fmt, ap);
	va_end(ap);
	longjmp(ps->fail, 1);
}

#define FAIL(ps, ...) fail_at((ps), (ps)->tok.line, __VA_ARGS__)

/* ---- lexer ---------------------------------------------------------- */

static int peekc(struct ps *ps, int k)
{
	return ps->s + k < ps->end ? (unsigned char)ps->s[k] : -1;
}

/* The comment's "Result: Never|Sometimes|Always", if it has one. */
static void comment_result(struct ps *ps, const char *b, const char *e)
{
	static const char *const words[] = { "Never", "Sometimes", "Always" };
	static const enum lt_expect val[] = { LT_NEVER, LT_SOMETIMES,
					      LT_ALWAYS };
	const char *q;
	int i;

	for (q = b; q + 7 <= e; q++) {
		if (memcmp(q, "Result:", 7) != 0)
			continue;
		q += 7;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		for (i = 0; i < 3; i++) {
			size_t n = strlen(words[i]);

			if ((size_t)(e - q) >= n && memcmp(q, words[i], n) == 0 &&
			    ps->t->expect == LT_EXPECT_NONE)
				ps->t->expect = val[i];
		}
		return;
	}
}

/* Skip blanks and comments: // and C comments anywhere, (* ... *) (nested)
 * outside parentheses and braces, where "(*" cannot start "(*x)". */
static void skip_space(struct ps *ps)
{
	for (;;) {
		int c = peekc(ps, 0);

		if (c == '\n') {
			ps->line++;
			ps->s++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
			   c == '\v') {
			ps->s++;
		} else if (c == '/' && peekc(ps, 1) == '/') {
			while (ps->s < ps->end && *ps->s != '\n')
				ps->s++;
		} else if (c == '/' && peekc(ps, 1) == '*') {
			int line = ps->line;

			for (ps->s += 2;; ps->s++) {
				if (ps->s >= ps->end)
					fail_at(ps, line, "unterminated comment");
				if (*ps->s == '\n')
					ps->line++;
				if (*ps->s == '*' && peekc(ps, 1) == '/')
					break;
			}
			ps->s += 2;
		} else if (c == '(' && peekc(ps, 1) == '*' && !ps->paren &&
			   !ps->brace) {
			const char *b = ps->s;
			int depth = 0, line = ps->line;

			do {
				if (ps->s >= ps->end)
					fail_at(ps, line,
						"unterminated (* comment");
				if (*ps->s == '\n')
					ps->line++;
				if (*ps->s == '(' && peekc(ps, 1) == '*') {
					depth++;
					ps->s++;
				} else if (*ps->s == '*' && peekc(ps, 1) == ')') {
					depth--;
					ps->s++;
				}
				ps->s++;
			} while (depth > 0);
			comment_result(ps, b, ps->s);
		} else {
			return;
		}
	}
}

static void lex_number(struct ps *ps, struct tok *t)
{
	int base = 10, any = 0;
	unsigned long v = 0;

	if (peekc(ps, 0) == '0' && (peekc(ps, 1) == 'x' || peekc(ps, 1) == 'X')) {
		base = 16;
		ps->s += 2;
	}
	for (;; ps->s++) {
		int c = peekc(ps, 0), d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && isxdigit(c))
			d = tolower(c) - 'a' + 10;
		else
			break;
		if (v > ((unsigned long)LONG_MAX - (unsigned long)d) / base)
			FAIL(ps, "number too large");
		v = v * base + d;
		any = 1;
	}
	if (!any)
		FAIL(ps, "malformed number");
	if (isalnum(peekc(ps, 0)) || peekc(ps, 0) == '_')
		FAIL(ps, "malformed number");
	t->kind = TK_NUM;
	t->num = (long)v;
}

static void lex(struct ps *ps)
{
	static const char *const two[] = { "==", "!=", "<=", ">=", "&&",
					    "||", "/\\", "\\/", "<<", ">>" };
	struct tok *t = &ps->tok;
	size_t i, n = 0;
	int c;

	skip_space(ps);
	t->line = ps->line;
	t->text[0] = '\0';
	c = peekc(ps, 0);
	if (c < 0) {
		t->kind = TK_EOF;
		return;
	}
	if (isalpha(c) || c == '_') {
		while (isalnum(peekc(ps, 0)) || peekc(ps, 0) == '_') {
			if (n + 1 >= sizeof(t->text))
				FAIL(ps, "name too long (at most %d characters)",
				     LT_NAME - 1);
			t->text[n++] = *ps->s++;
		}
		t->text[n] = '\0';
		t->kind = TK_ID;
		return;
	}
	if (isdigit(c)) {
		lex_number(ps, t);
		return;
	}
	t->kind = TK_PUNCT;
	for (i = 0; i < sizeof(two) / sizeof(two[0]); i++) {
		if (c == two[i][0] && peekc(ps, 1) == two[i][1]) {
			memcpy(t->text, two[i], 3);
			ps->s += 2;
			return;
		}
	}
	if (!strchr("(){}[];,*&=<>+-|^!~:.", c) || c == 0)
		FAIL(ps, isprint(c) ? "unexpected character '%c'"
				    : "unexpected byte 0x%02x", c);
	t->text[0] = (char)c;
	t->text[1] = '\0';
	ps->s++;
	ps->paren += c == '(' ? 1 : c == ')' ? -1 : 0;
	ps->brace += c == '{' ? 1 : c == '}' ? -1 : 0;
}

static int is_punct(const struct ps *ps, const char *p)
{
	return ps->tok.kind == TK_PUNCT && strcmp(ps->tok.text, p) == 0;
}

static int is_id(const struct ps *ps, const char *id)
{
	return ps->tok.kind == TK_ID && strcmp(ps->tok.text, id) == 0;
}

static const char *tok_desc(const struct ps *ps)
{
	return ps->tok.kind == TK_EOF ? "end of file" :
	       ps->tok.kind == TK_NUM ? "a number" : ps->tok.text;
}

static int accept(struct ps *ps, const char *p)
{
	if (!is_punct(ps, p))
		return 0;
	lex(ps);
	return 1;
}

static void expect(struct ps *ps, const char *p)
{
	if (!accept(ps, p))
		FAIL(ps, "expected '%s', found '%s'", p, tok_desc(ps));
}

static void expect_id(struct ps *ps, char out[LT_NAME])
{
	if (ps->tok.kind != TK_ID)
		FAIL(ps, "expected a name, found '%s'", tok_desc(ps));
	memcpy(out, ps->tok.text, LT_NAME);
	lex(ps);
}

/* The token after the current one (the lexer state is restored). */
static struct tok peek_tok(struct ps *ps)
{
	struct ps save = *ps;
	struct tok t;

	lex(ps);
	t = ps->tok;
	memcpy(ps, &save, sizeof(save));
	return t;
}

/* ---- names ---------------------------------------------------------- */

static int loc_find(const struct lt_test *t, const char *name)
{
	int i;

	for (i = 0; i < t->nlocs; i++)
		if (strcmp(t->loc[i].name, name) == 0)
			return i;
	return -1;
}

static int loc_add(struct ps *ps, const char *name, enum lt_kind kind)
{
	struct lt_test *t = ps->t;
	int i = loc_find(t, name);

	if (i >= 0) {
		if (kind != LT_INT && t->loc[i].kind != kind) {
			if (t->loc[i].kind != LT_INT || t->loc[i].init)
				FAIL(ps, "'%s' has two different types", name);
			t->loc[i].kind = kind;
		}
		return i;
	}
	if (t->nlocs >= LT_MAX_LOCS)
		FAIL(ps, "too many shared locations (at most %d)", LT_MAX_LOCS);
	i = t->nlocs++;
	memcpy(t->loc[i].name, name, LT_NAME);
	t->loc[i].kind = kind;
	return i;
}

static int reg_find(const struct lt_proc *p, const char *name)
{
	int i;

	for (i = 0; i < p->nregs; i++)
		if (strcmp(p->reg[i], name) == 0)
			return i;
	return -1;
}

static int reg_add(struct ps *ps, const char *name)
{
	struct lt_proc *p = ps->p;
	int i = reg_find(p, name);

	if (i >= 0)
		return i;
	if (p->nregs >= LT_MAX_REGS)
		FAIL(ps, "too many registers (at most %d)", LT_MAX_REGS);
	memcpy(p->reg[p->nregs], name, LT_NAME);
	return p->nregs++;
}

static int param_find(const struct ps *ps, const char *name)
{
	int i;

	for (i = 0; i < ps->nparams; i++)
		if (strcmp(ps->param[i], name) == 0)
			return ps->param_loc[i];
	return -1;
}

/* ---- types ---------------------------------------------------------- */

/* A type (int, long, unsigned ..., atomic_t, spinlock_t, struct
 * srcu_struct, intptr_t) and its stars; returns 0 when the current token
 * starts no type. */
static int parse_type(struct ps *ps, enum lt_kind *kind, int *stars)
{
	static const char *const ints[] = { "int", "long", "unsigned",
					    "signed", "short", "char",
					    "intptr_t", "uintptr_t",
					    "atomic_t", "atomic_long_t",
					    "bool", "u32", "u64", "s32",
					    "s64" };
	size_t i;
	int any = 0;

	*kind = LT_INT;
	*stars = 0;
	if (is_id(ps, "spinlock_t")) {
		*kind = LT_LOCK;
		any = 1;
		lex(ps);
	} else if (is_id(ps, "struct")) {
		lex(ps);
		if (!is_id(ps, "srcu_struct"))
			FAIL(ps, "unsupported: struct %s", tok_desc(ps));
		*kind = LT_SRCU;
		any = 1;
		lex(ps);
	} else {
		for (;;) {
			for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
				if (is_id(ps, ints[i]))
					break;
			if (i == sizeof(ints) / sizeof(ints[0]))
				break;
			any = 1;
			lex(ps);
		}
	}
	if (!any)
		return 0;
	while (accept(ps, "*"))
		++*stars;
	return 1;
}

static int is_type_start(const struct ps *ps)
{
	static const char *const w[] = { "int", "long", "unsigned", "signed",
					 "short", "char", "intptr_t",
					 "uintptr_t", "atomic_t",
					 "atomic_long_t", "bool", "u32",
					 "u64", "s32", "s64", "spinlock_t",
					 "struct" };
	size_t i;

	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (is_id(ps, w[i]))
			return 1;
	return 0;
}

/* ---- the header and the initial state ------------------------------ */

static void parse_header(struct ps *ps)
{
	size_t n = 0;

	if (!is_id(ps, "C"))
		FAIL(ps, "a C litmus test starts with 'C <name>', found '%s'",
		     tok_desc(ps));
	/* The name is the rest of the line (it may hold + - . =). */
	while (ps->s < ps->end && (*ps->s == ' ' || *ps->s == '\t'))
		ps->s++;
	while (ps->s < ps->end && *ps->s != '\n' && *ps->s != '\r') {
		if (n + 1 < sizeof(ps->t->name))
			ps->t->name[n++] = *ps->s;
		ps->s++;
	}
	while (n > 0 && isspace((unsigned char)ps->t->name[n - 1]))
		n--;
	ps->t->name[n] = '\0';
	if (n == 0)
		FAIL(ps, "the test has no name after 'C'");
	lex(ps);
}

/* A value in the initial state or the final clause: a number, -number,
 * a location (a pointer to it) or &location.  Returns the location index
 * in *loc, or -1 with the number in *v. */
static void parse_value(struct ps *ps, long *v, int *loc)
{
	int neg = accept(ps, "-"), amp = !neg && accept(ps, "&");

	*loc = -1;
	if (ps->tok.kind == TK_NUM && !amp) {
		*v = neg ? -ps->tok.num : ps->tok.num;
		lex(ps);
		return;
	}
	if (ps->tok.kind != TK_ID || neg)
		FAIL(ps, "expected a value, found '%s'", tok_desc(ps));
	*loc = loc_add(ps, ps->tok.text, LT_INT);
	lex(ps);
}

static void parse_init_item(struct ps *ps)
{
	struct lt_test *t = ps->t;
	enum lt_kind kind = LT_INT;
	char name[LT_NAME];
	int stars, l, target;
	long v = 0;

	if (ps->tok.kind == TK_NUM)
		FAIL(ps, "unsupported: initial register values");
	parse_type(ps, &kind, &stars);
	expect_id(ps, name);
	if (is_punct(ps, "["))
		FAIL(ps, "unsupported: arrays");
	l = loc_add(ps, name, kind);
	if (accept(ps, "=")) {
		if (kind != LT_INT)
			FAIL(ps, "'%s' cannot be given an initial value", name);
		parse_value(ps, &v, &target);
		t->loc[l].init_ptr = target >= 0;
		t->loc[l].init = target >= 0 ? target : v;
	}
	if (!accept(ps, ";") && !is_punct(ps, "}"))
		FAIL(ps, "expected ';' after the initial value of '%s'", name);
}

static void parse_init(struct ps *ps)
{
	if (!accept(ps, "{"))
		return;
	while (!accept(ps, "}")) {
		if (ps->tok.kind == TK_EOF)
			FAIL(ps, "unterminated initial state");
		if (accept(ps, ";"))
			continue;
		parse_init_item(ps);
	}
}

/* ---- expressions ---------------------------------------------------- */

static int new_expr(struct ps *ps, int kind, long v, int l, int r)
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

static int parse_expr_prec(struct ps *ps, int prec, int depth);

static int parse_primary(struct ps *ps, int depth)
{
	char name[LT_NAME];
	int i;

	if (ps->tok.kind == TK_NUM) {
		i = new_expr(ps, LT_E_IMM, ps->tok.num, -1, -1);
		lex(ps);
		return i;
	}
	if (accept(ps, "(")) {
		i = parse_expr_prec(ps, 0, depth + 1);
		expect(ps, ")");
		return i;
	}
	if (accept(ps, "-"))
		return new_expr(ps, LT_E_NEG, 0,
				parse_primary(ps, depth + 1), -1);
	if (accept(ps, "!"))
		return new_expr(ps, LT_E_NOT, 0,
				parse_primary(ps, depth + 1), -1);
	if (accept(ps, "&")) {
		expect_id(ps, name);
		if ((i = param_find(ps, name)) < 0)
			FAIL(ps, "'&%s': '%s' is not a parameter", name, name);
		return new_expr(ps, LT_E_ADDR, i, -1, -1);
	}
	if (ps->tok.kind != TK_ID)
		FAIL(ps, "expected an expression, found '%s'", tok_desc(ps));
	expect_id(ps, name);
	if (is_punct(ps, "("))
		FAIL(ps, "unsupported: call to %s inside an expression", name);
	if ((i = param_find(ps, name)) >= 0)
		return new_expr(ps, LT_E_ADDR, i, -1, -1);
	if ((i = reg_find(ps->p, name)) < 0)
		FAIL(ps, "unknown name '%s'", name);
	return new_expr(ps, LT_E_REG, i, -1, -1);
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
		if (is_punct(ps, binops[prec][k]))
			return k;
	return -1;
}

static int parse_expr_prec(struct ps *ps, int prec, int depth)
{
	int l, k;

	if (depth > 100)
		FAIL(ps, "expression nested too deeply");
	if (prec == NPREC)
		return parse_primary(ps, depth);
	l = parse_expr_prec(ps, prec + 1, depth);
	while ((k = binop_at(ps, prec)) >= 0) {
		int op = prec * 4 + k, r;

		lex(ps);
		r = parse_expr_prec(ps, prec + 1, depth + 1);
		l = new_expr(ps, LT_E_BIN, 0, l, r);
		ps->t->expr[l].op = (unsigned char)op;
	}
	return l;
}

static int parse_expr(struct ps *ps)
{
	return parse_expr_prec(ps, 0, 0);
}


/* ---- operations ----------------------------------------------------- */

static struct lt_op *emit(struct ps *ps, int code)
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

/* A pointer argument: a parameter, a register holding a pointer, &param,
 * in parentheses or not.  Sets op->loc or op->areg. */
static void parse_ptr(struct ps *ps, struct lt_op *op)
{
	char name[LT_NAME];

	if (accept(ps, "(")) {
		parse_ptr(ps, op);
		expect(ps, ")");
		return;
	}
	accept(ps, "&");
	expect_id(ps, name);
	if ((op->loc = (short)param_find(ps, name)) >= 0)
		return;
	if ((op->areg = (short)reg_find(ps->p, name)) < 0)
		FAIL(ps, "unknown name '%s'", name);
}

static void parse_lvalue(struct ps *ps, struct lt_op *op, const char *fn)
{
	if (!accept(ps, "*"))
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

/* Arguments of fn by its pattern; the op is already emitted. */
static void parse_args(struct ps *ps, const struct lt_fn *fn, struct lt_op *op)
{
	const char *a;
	int first = 1, nval = 0;

	expect(ps, "(");
	for (a = fn->args; *a; a++) {
		if (!first)
			expect(ps, ",");
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
	if (!is_punct(ps, ")"))
		FAIL(ps, "%s() takes %d argument(s)", fn->name,
		     (int)strlen(fn->args));
	lex(ps);
	if (fn->code == LT_OP_RMW && op->a < 0) /* inc, dec */
		op->a = new_expr(ps, LT_E_IMM, 1, -1, -1);
}

/* A call, as a statement (dst < 0) or the right side of "reg = ". */
static void parse_call(struct ps *ps, const char *name, int dst, int line)
{
	struct lt_fn fn;
	struct lt_op *op;

	if (lt_fn_find(name, &fn) < 0)
		fail_at(ps, line, "unsupported: %s", name);
	if (dst >= 0 && !fn.returns)
		fail_at(ps, line, "%s() returns no value", name);
	op = emit(ps, fn.code);
	op->line = line;
	op->order = (unsigned char)fn.order;
	op->rmw = (unsigned char)fn.rmw;
	op->ret_new = (unsigned char)fn.ret_new;
	op->dst = (short)dst;
	parse_args(ps, &fn, op);
	if (fn.code == LT_OP_RCU_LOCK || fn.code == LT_OP_SYNC_RCU)
		ps->t->uses_rcu = 1;
	if (fn.then_mb) /* smp_store_mb() */
		emit(ps, LT_OP_FENCE)->order = LT_F_MB;
}

/* ---- statements ----------------------------------------------------- */

static void parse_stmt(struct ps *ps, int depth);

static void parse_assign(struct ps *ps, int reg, int line)
{
	if (ps->tok.kind == TK_ID && peek_tok(ps).kind == TK_PUNCT &&
	    strcmp(peek_tok(ps).text, "(") == 0) {
		char name[LT_NAME];

		expect_id(ps, name);
		parse_call(ps, name, reg, line);
	} else {
		struct lt_op *op = emit(ps, LT_OP_SET);
		int e = parse_expr(ps);

		op = &ps->p->ops[ps->p->nops - 1];
		op->dst = (short)reg;
		op->a = e;
	}
}

static void parse_decl(struct ps *ps)
{
	char name[LT_NAME];
	enum lt_kind kind;
	int stars, line;

	parse_type(ps, &kind, &stars);
	if (kind != LT_INT)
		FAIL(ps, "unsupported: a local of this type");
	do {
		while (accept(ps, "*"))
			;
		line = ps->tok.line;
		expect_id(ps, name);
		if (param_find(ps, name) >= 0)
			fail_at(ps, line, "'%s' is a parameter", name);
		if (accept(ps, "="))
			parse_assign(ps, reg_add(ps, name), line);
		else
			reg_add(ps, name);
	} while (accept(ps, ","));
	expect(ps, ";");
}

static void parse_if(struct ps *ps, int depth)
{
	struct lt_op *op;
	int jz, jmp;

	expect(ps, "(");
	op = emit(ps, LT_OP_JZ);
	jz = ps->p->nops - 1;
	op->a = parse_expr(ps);
	expect(ps, ")");
	parse_stmt(ps, depth + 1);
	if (!is_id(ps, "else")) {
		ps->p->ops[jz].target = ps->p->nops;
		return;
	}
	lex(ps);
	emit(ps, LT_OP_JMP);
	jmp = ps->p->nops - 1;
	ps->p->ops[jz].target = ps->p->nops;
	parse_stmt(ps, depth + 1);
	ps->p->ops[jmp].target = ps->p->nops;
}

static void parse_stmt(struct ps *ps, int depth)
{
	char name[LT_NAME];
	int line = ps->tok.line, r;

	if (depth > 64)
		FAIL(ps, "statements nested too deeply");
	if (accept(ps, ";"))
		return;
	if (accept(ps, "{")) {
		while (!accept(ps, "}")) {
			if (ps->tok.kind == TK_EOF)
				FAIL(ps, "unterminated block");
			parse_stmt(ps, depth + 1);
		}
		return;
	}
	if (is_type_start(ps)) {
		parse_decl(ps);
		return;
	}
	if (is_id(ps, "if")) {
		lex(ps);
		parse_if(ps, depth);
		return;
	}
	if (ps->tok.kind != TK_ID)
		FAIL(ps, "unsupported: a statement starting with '%s'",
		     tok_desc(ps));
	if (is_id(ps, "while") || is_id(ps, "for") || is_id(ps, "do") ||
	    is_id(ps, "goto") || is_id(ps, "return") || is_id(ps, "switch"))
		FAIL(ps, "unsupported: %s", ps->tok.text);
	expect_id(ps, name);
	if (is_punct(ps, "(")) {
		parse_call(ps, name, -1, line);
	} else if (accept(ps, "=")) {
		if (param_find(ps, name) >= 0)
			fail_at(ps, line, "unsupported: assigning to the "
				"parameter '%s'", name);
		if ((r = reg_find(ps->p, name)) < 0)
			fail_at(ps, line, "undeclared register '%s'", name);
		parse_assign(ps, r, line);
	} else {
		FAIL(ps, "expected '(' or '=' after '%s', found '%s'", name,
		     tok_desc(ps));
	}
	expect(ps, ";");
}

/* ---- processes ------------------------------------------------------ */

static void parse_params(struct ps *ps)
{
	char name[LT_NAME];
	enum lt_kind kind;
	int stars;

	expect(ps, "(");
	ps->nparams = 0;
	if (accept(ps, ")"))
		return;
	do {
		if (!parse_type(ps, &kind, &stars))
			FAIL(ps, "expected a parameter type, found '%s'",
			     tok_desc(ps));
		if (stars < 1)
			FAIL(ps, "a parameter is a pointer to a shared location");
		expect_id(ps, name);
		if (param_find(ps, name) >= 0)
			FAIL(ps, "parameter '%s' twice", name);
		if (ps->nparams >= LT_MAX_LOCS)
			FAIL(ps, "too many parameters");
		memcpy(ps->param[ps->nparams], name, LT_NAME);
		ps->param_loc[ps->nparams++] = loc_add(ps, name, kind);
	} while (accept(ps, ","));
	expect(ps, ")");
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
	if (t->nprocs >= LT_MAX_PROCS)
		FAIL(ps, "too many processes (at most %d)", LT_MAX_PROCS);
	ps->p = &t->proc[t->nprocs++];
	ps->p->ops = calloc(LT_MAX_OPS, sizeof(struct lt_op));
	if (!ps->p->ops)
		FAIL(ps, "out of memory");
	lex(ps);
	parse_params(ps);
	if (!is_punct(ps, "{"))
		FAIL(ps, "expected '{' to start P%ld's body", idx);
	parse_stmt(ps, 0);
}

static int is_proc_name(const struct ps *ps)
{
	return ps->tok.kind == TK_ID && ps->tok.text[0] == 'P' &&
	       isdigit((unsigned char)ps->tok.text[1]);
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

/* 0:r0 (or P0:r0) or a location. */
static int parse_item(struct ps *ps)
{
	struct lt_test *t = ps->t;
	char name[LT_NAME];
	long proc;
	int r;

	if (ps->tok.kind == TK_NUM || is_proc_name(ps)) {
		proc = ps->tok.kind == TK_NUM ? ps->tok.num :
						strtol(ps->tok.text + 1, NULL, 10);
		if (proc < 0 || proc >= t->nprocs)
			FAIL(ps, "no process %ld", proc);
		lex(ps);
		expect(ps, ":");
		expect_id(ps, name);
		if ((r = reg_find(&t->proc[proc], name)) < 0)
			FAIL(ps, "P%ld has no register '%s'", proc, name);
		return obs_add(ps, (int)proc, r);
	}
	accept(ps, "*");
	expect_id(ps, name);
	if ((r = loc_find(t, name)) < 0)
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
	if (accept(ps, "~"))
		return new_cond(ps, LT_C_NOT, parse_cond_atom(ps, depth + 1),
				-1);
	if (accept(ps, "(")) {
		c = parse_cond(ps, depth + 1);
		expect(ps, ")");
		return c;
	}
	if (is_id(ps, "true") || is_id(ps, "false")) {
		c = new_cond(ps, LT_C_TRUE, -1, -1);
		if (is_id(ps, "false"))
			c = new_cond(ps, LT_C_NOT, c, -1);
		lex(ps);
		return c;
	}
	c = new_cond(ps, LT_C_EQ, -1, -1);
	ps->t->cond[c].obs = parse_item(ps);
	neq = is_punct(ps, "!=");
	if (!neq)
		expect(ps, "=");
	else
		lex(ps);
	parse_value(ps, &v, &loc);
	ps->t->cond[c].value = loc >= 0 ? LT_PTR_TAG + loc : v;
	return neq ? new_cond(ps, LT_C_NOT, c, -1) : c;
}

static int parse_cond(struct ps *ps, int depth)
{
	int l = parse_cond_atom(ps, depth);

	for (;;) {
		if (accept(ps, "/\\"))
			l = new_cond(ps, LT_C_AND, l,
				     parse_cond_atom(ps, depth + 1));
		else if (accept(ps, "\\/"))
			l = new_cond(ps, LT_C_OR, l,
				     parse_cond_atom(ps, depth + 1));
		else
			return l;
	}
}

static void parse_locations(struct ps *ps)
{
	lex(ps);
	expect(ps, "[");
	while (!accept(ps, "]")) {
		if (ps->tok.kind == TK_EOF)
			FAIL(ps, "unterminated locations [...]");
		if (!accept(ps, ";"))
			parse_item(ps);
	}
}

static void parse_final(struct ps *ps)
{
	struct lt_test *t = ps->t;
	const char *b;
	size_t n;

	if (is_id(ps, "locations"))
		parse_locations(ps);
	if (is_id(ps, "filter"))
		FAIL(ps, "unsupported: filter");
	if (accept(ps, "~")) {
		if (!is_id(ps, "exists"))
			FAIL(ps, "expected 'exists' after '~'");
		t->quant = LT_NOT_EXISTS;
	} else if (is_id(ps, "forall")) {
		t->quant = LT_FORALL;
	} else if (is_id(ps, "exists")) {
		t->quant = LT_EXISTS;
	} else {
		FAIL(ps, "expected a process, 'exists', '~exists' or "
			 "'forall', found '%s'", tok_desc(ps));
	}
	b = ps->s; /* just after the keyword */
	lex(ps);
	t->cond_root = parse_cond(ps, 0);
	n = (size_t)(ps->s - b);
	while (n > 0 && isspace((unsigned char)b[0]))
		b++, n--;
	while (n > 0 && isspace((unsigned char)b[n - 1]))
		n--;
	if (n >= sizeof(t->clause))
		n = sizeof(t->clause) - 1;
	memcpy(t->clause, b, n);
	t->clause[n] = '\0';
	if (ps->tok.kind != TK_EOF)
		FAIL(ps, "unexpected '%s' after the final clause", tok_desc(ps));
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
			fail_at(ps, 1, "out of memory");
		lex(ps);
		parse_header(ps);
		parse_init(ps);
		while (is_proc_name(ps))
			parse_proc(ps);
		if (t->nprocs == 0)
			FAIL(ps, "expected process P0, found '%s'",
			     tok_desc(ps));
		parse_final(ps);
	} else {
		lt_free(t);
		rc = -1;
	}
	free(ps);
	return rc;
}
