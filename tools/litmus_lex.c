/* SPDX-License-Identifier: MIT */
/*
 * The lexer of `scalekit litmus` and its tables of names (see
 * litmus_lex.h).  The lexer never reads past the end of the text, which
 * need not end in NUL (the fuzz harness passes raw bytes).
 */
#include "litmus_lex.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void lt_verror(char out[LT_ERR], const char *file, int line,
	       const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(out, LT_ERR, "%s:%d: %s", file, line, msg);
}

void lp_fail_at(struct ps *ps, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lt_verror(ps->err, ps->file, line, fmt, ap);
	va_end(ap);
	longjmp(ps->fail, 1);
}

#define FAIL(ps, ...) lp_fail_at((ps), (ps)->tok.line, __VA_ARGS__)

/* ---- lexer ---------------------------------------------------------- */

static int peekc(struct ps *ps, int k)
{
	return ps->s + k < ps->end ? (unsigned char)ps->s[k] : -1;
}

/* The comment's "Result: Never|Sometimes|Always|DEADLOCK|Flag name", if it
 * has one. */
static void comment_result(struct ps *ps, const char *b, const char *e)
{
	static const char *const words[] = { "Never", "Sometimes", "Always",
					     "DEADLOCK", "Flag " };
	static const enum lt_expect val[] = { LT_NEVER, LT_SOMETIMES,
					      LT_ALWAYS, LT_DEADLOCK, LT_FLAG };
	struct lt_test *t = ps->t;
	const char *q;
	size_t i, k;

	/* "Result: Never", or "Expected result: Never." */
	for (q = b; q + 7 <= e; q++) {
		if (strncasecmp(q, "result:", 7) != 0)
			continue;
		q += 7;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			size_t n = strlen(words[i]);

			if ((size_t)(e - q) < n || memcmp(q, words[i], n) != 0 ||
			    t->expect != LT_EXPECT_NONE)
				continue;
			t->expect = val[i];
			/* "Flag srcu-bad-nesting": the name, for the report */
			for (k = 0, q += n; val[i] == LT_FLAG && q < e &&
			     k + 1 < sizeof(t->flag) &&
			     (isalnum((unsigned char)*q) || *q == '-' ||
			      *q == '_'); q++)
				t->flag[k++] = *q;
		}
		return;
	}
}

static int is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Skip blanks and comments: // and C comments anywhere, (* ... *) (nested)
 * outside parentheses and braces, where "(*" cannot start "(*x)", and
 * inside them when a blank follows "(*" (a comment in the initial state
 * or the final clause; no C code writes "(* x)"). */
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
					lp_fail_at(ps, line, "unterminated comment");
				if (*ps->s == '\n')
					ps->line++;
				if (*ps->s == '*' && peekc(ps, 1) == '/')
					break;
			}
			ps->s += 2;
		} else if (c == '(' && peekc(ps, 1) == '*' &&
			   ((!ps->paren && !ps->brace) ||
			    is_blank(peekc(ps, 2)))) {
			const char *b = ps->s;
			int depth = 0, line = ps->line;

			do {
				if (ps->s >= ps->end)
					lp_fail_at(ps, line,
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

void lp_lex(struct ps *ps)
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

int lp_is_punct(const struct ps *ps, const char *p)
{
	return ps->tok.kind == TK_PUNCT && strcmp(ps->tok.text, p) == 0;
}

int lp_is_id(const struct ps *ps, const char *id)
{
	return ps->tok.kind == TK_ID && strcmp(ps->tok.text, id) == 0;
}

const char *lp_tok_desc(const struct ps *ps)
{
	return ps->tok.kind == TK_EOF ? "end of file" :
	       ps->tok.kind == TK_NUM ? "a number" : ps->tok.text;
}

int lp_accept(struct ps *ps, const char *p)
{
	if (!lp_is_punct(ps, p))
		return 0;
	lp_lex(ps);
	return 1;
}

void lp_expect(struct ps *ps, const char *p)
{
	if (!lp_accept(ps, p))
		FAIL(ps, "expected '%s', found '%s'", p, lp_tok_desc(ps));
}

void lp_expect_id(struct ps *ps, char out[LT_NAME])
{
	if (ps->tok.kind != TK_ID)
		FAIL(ps, "expected a name, found '%s'", lp_tok_desc(ps));
	memcpy(out, ps->tok.text, LT_NAME);
	lp_lex(ps);
}

/* The token after the current one (the lexer state is restored). */
struct tok lp_peek_tok(struct ps *ps)
{
	struct ps save = *ps;
	struct tok t;

	lp_lex(ps);
	t = ps->tok;
	memcpy(ps, &save, sizeof(save));
	return t;
}

/* ---- names ---------------------------------------------------------- */

int lp_loc_find(const struct lt_test *t, const char *name)
{
	int i;

	for (i = 0; i < t->nlocs; i++)
		if (strcmp(t->loc[i].name, name) == 0)
			return i;
	return -1;
}

int lp_loc_add(struct ps *ps, const char *name, enum lt_kind kind)
{
	struct lt_test *t = ps->t;
	int i = lp_loc_find(t, name);

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

int lp_reg_find(const struct lt_proc *p, const char *name)
{
	int i;

	for (i = 0; i < p->nregs; i++)
		if (strcmp(p->reg[i], name) == 0)
			return i;
	return -1;
}

int lp_reg_add(struct ps *ps, const char *name)
{
	struct lt_proc *p = ps->p;
	int i = lp_reg_find(p, name);

	if (i >= 0)
		return i;
	if (p->nregs >= LT_MAX_REGS)
		FAIL(ps, "too many registers (at most %d)", LT_MAX_REGS);
	memcpy(p->reg[p->nregs], name, LT_NAME);
	return p->nregs++;
}

int lp_param_find(const struct ps *ps, const char *name)
{
	int i;

	for (i = 0; i < ps->nparams; i++)
		if (strcmp(ps->param[i], name) == 0)
			return ps->param_loc[i];
	return -1;
}
