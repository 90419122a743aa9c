/* SPDX-License-Identifier: MIT */
/*
 * The processes of a litmus test in herd7's LISA format, for the parser
 * of `scalekit litmus` (lt_parse() calls lp_parse_lisa() after the header
 * "LISA <name>" and the initial state; the final clause is the C format's).
 *
 * The processes are the columns of a table: a first row "P0 | P1 ;", then
 * one instruction (or nothing) per column, '|' between the columns and
 * ';' at the end of each row.  The instructions, and what each one runs
 * as (the operations of the C format, so through scalekit's primitives):
 *
 *   r[once|acquire|deref|lderef] reg addr   READ_ONCE, smp_load_acquire,
 *                                           rcu_dereference
 *   w[once|release|assign] addr value       WRITE_ONCE, smp_store_release,
 *                                           rcu_assign_pointer
 *   f[mb|rmb|wmb|rb_dep]                    smp_mb, smp_rmb, smp_wmb,
 *                                           smp_read_barrier_depends
 *   f[lock], f[unlock]                      rcu_read_lock, rcu_read_unlock
 *   f[sync], call[sync]                     synchronize_rcu
 *   mov reg expr                            reg = expr; expr is a value or
 *                                           (add|sub|xor|and|or|mul|eq|ne e e)
 *   b[] reg label, label:                   if (reg) goto label
 *
 * A register is r<digits>; any other name is a shared location; addr may
 * be a register that holds a location's address.
 */
#include "litmus_lex.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define LISA_LABELS 32

struct lisa_label {
	char name[LT_NAME];
	int proc, at;	/* process, and its operation (JZ, or the label's) */
	int line;	/* the branch's or the label's line (for errors) */
};

struct lisa {
	int nlabels, nbranches;
	struct lisa_label label[LISA_LABELS];
	struct lisa_label branch[LISA_LABELS];
};

static int is_reg_name(const char *w)
{
	if (w[0] != 'r' || !w[1])
		return 0;
	for (w++; *w; w++)
		if (!isdigit((unsigned char)*w))
			return 0;
	return 1;
}

/* An address operand: a register (holding an address) or a location. */
static void lisa_addr(struct ps *ps, struct lt_op *op)
{
	char name[LT_NAME];

	lp_expect_id(ps, name);
	if (is_reg_name(name))
		op->areg = (short)lp_reg_add(ps, name);
	else
		op->loc = (short)lp_loc_add(ps, name, LT_INT);
}

static int lisa_expr(struct ps *ps, int depth);

/* "(op e e)": the operator's token number in struct lt_expr (eval_bin). */
static int lisa_binop(struct ps *ps, int depth)
{
	static const struct { const char *name; unsigned char op; } ops[] = {
		{ "or", 8 }, { "xor", 12 }, { "and", 16 }, { "eq", 20 },
		{ "ne", 21 }, { "neq", 21 }, { "add", 28 }, { "sub", 29 },
		{ "mul", 32 },
	};
	char name[LT_NAME];
	size_t i;
	int l, r, e;

	lp_expect_id(ps, name);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, name) == 0)
			break;
	if (i == sizeof(ops) / sizeof(ops[0]))
		FAIL(ps, "unsupported: the LISA operator '%s'", name);
	l = lisa_expr(ps, depth + 1);
	r = lisa_expr(ps, depth + 1);
	lp_expect(ps, ")");
	e = lp_new_expr(ps, LT_E_BIN, 0, l, r);
	ps->t->expr[e].op = ops[i].op;
	return e;
}

/* A value: a number, a register, a location (its address), (op e e). */
static int lisa_expr(struct ps *ps, int depth)
{
	char name[LT_NAME];
	long v;

	if (depth > 64)
		FAIL(ps, "expression nested too deeply");
	if (lp_accept(ps, "("))
		return lisa_binop(ps, depth);
	if (ps->tok.kind == TK_NUM || lp_is_punct(ps, "-")) {
		int neg = lp_accept(ps, "-");

		if (ps->tok.kind != TK_NUM)
			FAIL(ps, "expected a number, found '%s'",
			     lp_tok_desc(ps));
		v = neg ? -ps->tok.num : ps->tok.num;
		lp_lex(ps);
		return lp_new_expr(ps, LT_E_IMM, v, -1, -1);
	}
	lp_expect_id(ps, name);
	if (is_reg_name(name))
		return lp_new_expr(ps, LT_E_REG, lp_reg_add(ps, name), -1, -1);
	return lp_new_expr(ps, LT_E_ADDR, lp_loc_add(ps, name, LT_INT), -1,
			   -1);
}

/* The order of r[tag] (load 1) or w[tag] (load 0), or -1. */
static int lisa_order(const char *tag, int load)
{
	if (!tag[0] || strcmp(tag, "once") == 0)
		return LT_ONCE;
	if (load && strcmp(tag, "acquire") == 0)
		return LT_ACQUIRE;
	if (load && (strcmp(tag, "deref") == 0 || strcmp(tag, "lderef") == 0))
		return LT_DEREF;
	if (!load && (strcmp(tag, "release") == 0 ||
		      strcmp(tag, "assign") == 0))
		return LT_RELEASE;
	return -1;
}

static void lisa_access(struct ps *ps, const char *tag, int load, int line)
{
	int order = lisa_order(tag, load);
	struct lt_op *op;
	char reg[LT_NAME];

	if (order < 0)
		lp_fail_at(ps, line, "unsupported: %s[%s]", load ? "r" : "w",
			   tag);
	op = lp_emit(ps, load ? LT_OP_LOAD : LT_OP_STORE);
	op->line = line;
	op->order = (unsigned char)order;
	if (load) {
		lp_expect_id(ps, reg);
		if (!is_reg_name(reg))
			lp_fail_at(ps, line, "r[%s] loads into a register "
				   "(r<digits>), not '%s'", tag, reg);
		op->dst = (short)lp_reg_add(ps, reg);
	}
	lisa_addr(ps, op);
	if (!load)
		op->a = lisa_expr(ps, 0);
}

/* f[tag] and call[tag]. */
static void lisa_fence(struct ps *ps, const char *tag, int call, int line)
{
	static const struct { const char *tag; unsigned char code, order; }
	fences[] = {
		{ "mb", LT_OP_FENCE, LT_F_MB },
		{ "rmb", LT_OP_FENCE, LT_F_RMB },
		{ "wmb", LT_OP_FENCE, LT_F_WMB },
		{ "rb_dep", LT_OP_FENCE, LT_F_COMPILER },
		{ "lock", LT_OP_RCU_LOCK, 0 },
		{ "unlock", LT_OP_RCU_UNLOCK, 0 },
		{ "sync", LT_OP_SYNC_RCU, 0 },
	};
	size_t i;
	struct lt_op *op;

	for (i = 0; i < sizeof(fences) / sizeof(fences[0]); i++)
		if (strcmp(fences[i].tag, tag) == 0 &&
		    (!call || fences[i].code == LT_OP_SYNC_RCU))
			break;
	if (i == sizeof(fences) / sizeof(fences[0]))
		lp_fail_at(ps, line, "unsupported: %s[%s]", call ? "call" : "f",
			   tag);
	op = lp_emit(ps, fences[i].code);
	op->line = line;
	op->order = fences[i].order;
	if (fences[i].code != LT_OP_FENCE)
		ps->t->uses_rcu = 1;
}

static void lisa_mov(struct ps *ps, int line)
{
	char reg[LT_NAME];
	struct lt_op *op;
	int r, e;

	lp_expect_id(ps, reg);
	if (!is_reg_name(reg))
		lp_fail_at(ps, line, "mov writes a register (r<digits>), not "
			   "'%s'", reg);
	r = lp_reg_add(ps, reg);
	e = lisa_expr(ps, 0);
	op = lp_emit(ps, LT_OP_SET);
	op->line = line;
	op->dst = (short)r;
	op->a = e;
}

static struct lisa_label *lisa_label_add(struct ps *ps, struct lisa_label *l,
					 int *n, const char *name, int line)
{
	struct lisa_label *x;

	if (*n >= LISA_LABELS)
		lp_fail_at(ps, line, "too many labels or branches (at most %d)",
			   LISA_LABELS);
	x = &l[(*n)++];
	memcpy(x->name, name, LT_NAME);
	x->proc = ps->t->nprocs ? (int)(ps->p - ps->t->proc) : 0;
	x->at = ps->p->nops;
	x->line = line;
	return x;
}

/* The first of L's labels named name in process proc, or NULL. */
static const struct lisa_label *lisa_label_find(const struct lisa *L,
						int proc, const char *name)
{
	int l;

	for (l = 0; l < L->nlabels; l++)
		if (L->label[l].proc == proc &&
		    strcmp(L->label[l].name, name) == 0)
			return &L->label[l];
	return NULL;
}

/*
 * "label:": a label of the current process.  A name defined twice in one
 * process is an error: a branch could not say which one it means.
 */
static void lisa_label_define(struct ps *ps, struct lisa *L, const char *name,
			      int line)
{
	const struct lisa_label *x = lisa_label_add(ps, L->label, &L->nlabels,
						    name, line);
	const struct lisa_label *first = lisa_label_find(L, x->proc, name);

	if (first != x)
		lp_fail_at(ps, line, "label '%s' defined twice in P%d (first "
			   "at line %d)", name, x->proc, first->line);
}

/* "b[] reg label": if (reg) goto label (JZ on !reg, its target later). */
static void lisa_branch(struct ps *ps, struct lisa *L, const char *tag,
			int line)
{
	char reg[LT_NAME], name[LT_NAME];
	struct lt_op *op;
	int e;

	if (tag[0])
		lp_fail_at(ps, line, "unsupported: b[%s]", tag);
	lp_expect_id(ps, reg);
	if (!is_reg_name(reg))
		lp_fail_at(ps, line, "b[] tests a register (r<digits>), not "
			   "'%s'", reg);
	e = lp_new_expr(ps, LT_E_REG, lp_reg_add(ps, reg), -1, -1);
	lp_expect_id(ps, name);
	lisa_label_add(ps, L->branch, &L->nbranches, name, line);
	op = lp_emit(ps, LT_OP_JZ);
	op->line = line;
	op->a = lp_new_expr(ps, LT_E_NOT, 0, e, -1);
}

/* One cell: an instruction, or "label:". */
static void lisa_instr(struct ps *ps, struct lisa *L)
{
	char ins[LT_NAME], tag[LT_NAME] = "";
	int line = ps->tok.line;

	if (ps->tok.kind != TK_ID)
		FAIL(ps, "expected a LISA instruction, found '%s'",
		     lp_tok_desc(ps));
	lp_expect_id(ps, ins);
	if (lp_accept(ps, ":")) {
		lisa_label_define(ps, L, ins, line);
		return;
	}
	if (lp_accept(ps, "[") && !lp_accept(ps, "]")) {
		lp_expect_id(ps, tag);
		lp_expect(ps, "]");
	}
	if (strcmp(ins, "r") == 0 || strcmp(ins, "w") == 0)
		lisa_access(ps, tag, ins[0] == 'r', line);
	else if (strcmp(ins, "f") == 0 || strcmp(ins, "call") == 0)
		lisa_fence(ps, tag, ins[0] == 'c', line);
	else if (strcmp(ins, "mov") == 0)
		lisa_mov(ps, line);
	else if (strcmp(ins, "b") == 0)
		lisa_branch(ps, L, tag, line);
	else
		lp_fail_at(ps, line, "unsupported: the LISA instruction '%s'",
			   ins);
}

/* Each branch's target: the label of its name in its process. */
static void lisa_resolve(struct ps *ps, const struct lisa *L)
{
	int b;

	for (b = 0; b < L->nbranches; b++) {
		const struct lisa_label *br = &L->branch[b];
		const struct lisa_label *to =
			lisa_label_find(L, br->proc, br->name);

		if (!to)
			lp_fail_at(ps, br->line, "no label '%s' in P%d",
				   br->name, br->proc);
		/* A label at or above its branch would make a loop, which
		 * the runner cannot bound (a run would never end). */
		if (to->at <= br->at)
			lp_fail_at(ps, br->line, "unsupported: b[] to '%s' "
				   "above it in P%d (a loop: branches go "
				   "forward only)", br->name, br->proc);
		ps->t->proc[br->proc].ops[br->at].target = to->at;
	}
}

static int lisa_at_final(const struct ps *ps)
{
	return ps->tok.kind == TK_EOF || lp_is_punct(ps, "~") ||
	       lp_is_id(ps, "exists") || lp_is_id(ps, "forall") ||
	       lp_is_id(ps, "locations") || lp_is_id(ps, "filter");
}

/* One row after the first: a cell per column, ';' at the end ("||" is
 * two separators around an empty cell). */
static void lisa_row(struct ps *ps, struct lisa *L)
{
	int col = 0;

	for (;;) {
		if (col >= ps->t->nprocs)
			FAIL(ps, "a row with more columns than processes");
		ps->p = &ps->t->proc[col];
		if (!lp_is_punct(ps, "|") && !lp_is_punct(ps, "||") &&
		    !lp_is_punct(ps, ";"))
			lisa_instr(ps, L);
		if (lp_accept(ps, "||"))
			col += 2;
		else if (lp_accept(ps, "|"))
			col++;
		else
			break;
	}
	if (col >= ps->t->nprocs)
		FAIL(ps, "a row with more columns than processes");
	lp_expect(ps, ";");
}

void lp_parse_lisa(struct ps *ps)
{
	struct lisa L;

	memset(&L, 0, sizeof(L));
	do {
		char *end = NULL;
		long idx = lp_is_proc_name(ps) ?
				   strtol(ps->tok.text + 1, &end, 10) : -1;

		if (idx != ps->t->nprocs || *end)
			FAIL(ps, "expected process P%d, found '%s'",
			     ps->t->nprocs, lp_tok_desc(ps));
		lp_new_proc(ps);
		lp_lex(ps);
	} while (lp_accept(ps, "|"));
	lp_expect(ps, ";");
	while (!lisa_at_final(ps))
		lisa_row(ps, &L);
	lisa_resolve(ps, &L);
}
