/* SPDX-License-Identifier: MIT */
/*
 * tools/litmus.h - what the parts of `scalekit litmus` share: a parsed
 * litmus test (locations, processes as arrays of pre-decoded operations,
 * the final clause) and the entry points of the parser (litmus_parse.c),
 * the executor (litmus_exec.c) and the report (litmus.c).
 *
 * Values are longs.  A location's cell holds either a number or the
 * address of another cell of the same iteration (a pointer, as in
 * "int *p = &x;"); the report shows such an address as the location's
 * name.
 */
#ifndef SK_LITMUS_H
#define SK_LITMUS_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

#define LT_MAX_PROCS 8	/* processes per test */
#define LT_MAX_REGS 32	/* registers per process (hidden ones too) */
#define LT_MAX_LOCS 16	/* shared locations per test */
#define LT_MAX_OBS 16	/* registers and locations the final clause names */
#define LT_MAX_OPS 4096 /* operations per process */
#define LT_MAX_EXPRS 8192
#define LT_MAX_CONDS 1024
#define LT_NAME 40
#define LT_ERR 512

/* A pointer to location k, as the final clause and the report see it. */
#define LT_PTR_TAG (LONG_MIN / 2)
#define LT_IS_PTR(v) ((v) >= LT_PTR_TAG && (v) < LT_PTR_TAG + LT_MAX_LOCS)

enum lt_kind { LT_INT, LT_LOCK, LT_SRCU };

/* What the test's "Result:" comment says.  LT_DEADLOCK: every execution
 * deadlocks (herd7 finds none), LT_FLAG: herd7 flags the test (t->flag
 * names the flag, "srcu-bad-nesting"); neither says anything of the
 * condition. */
enum lt_expect { LT_EXPECT_NONE, LT_NEVER, LT_SOMETIMES, LT_ALWAYS,
		 LT_DEADLOCK, LT_FLAG };

enum lt_quant { LT_EXISTS, LT_NOT_EXISTS, LT_FORALL };

struct lt_loc {
	char name[LT_NAME];
	enum lt_kind kind;
	int init_ptr; /* 1: init is a location index (a pointer to it) */
	long init;    /* initial value, or the location pointed to */
};

/* Expression nodes (arrays indexed by int; -1 = none). */
enum lt_ekind { LT_E_IMM, LT_E_REG, LT_E_ADDR, LT_E_BIN, LT_E_NOT, LT_E_NEG };

struct lt_expr {
	unsigned char kind; /* enum lt_ekind */
	unsigned char op;   /* LT_E_BIN: the operator's token */
	int l, r;	    /* operands (LT_E_BIN, LT_E_NOT, LT_E_NEG) */
	long v;		    /* IMM: value; REG: register; ADDR: location */
};

/* Operations of a process, run by the executor's switch. */
enum lt_code {
	LT_OP_SET,	/* dst = a */
	LT_OP_LOAD,	/* dst = *addr (order) */
	LT_OP_STORE,	/* *addr = a (order) */
	LT_OP_FENCE,	/* order: which fence */
	LT_OP_RMW,	/* dst = rmw(addr, a, b) (rmw, order) */
	LT_OP_JZ,	/* if (!a) goto target */
	LT_OP_JMP,	/* goto target */
	LT_OP_RCU_LOCK,
	LT_OP_RCU_UNLOCK,
	LT_OP_SYNC_RCU, /* order 1: expedited */
	LT_OP_SRCU_LOCK,   /* dst = srcu_read_lock(domain loc) */
	LT_OP_SRCU_UNLOCK, /* srcu_read_unlock(domain loc, a) */
	LT_OP_SYNC_SRCU,
	LT_OP_SPIN_LOCK,
	LT_OP_SPIN_UNLOCK,
	LT_OP_SPIN_IS_LOCKED, /* dst = spin_is_locked(lock loc) */
	LT_OP_SRCU_DOWN,      /* dst = srcu_down_read(domain loc) */
	LT_OP_SRCU_UP,	      /* srcu_up_read(domain loc, a) */
	LT_OP_SPIN_TRYLOCK,   /* dst = spin_trylock(lock loc) */
};

/* Access orders (LOAD, STORE, RMW) and fences (FENCE). */
enum lt_order {
	LT_ONCE,     /* READ_ONCE / WRITE_ONCE / _relaxed RMW */
	LT_ACQUIRE,  /* smp_load_acquire / _acquire RMW */
	LT_RELEASE,  /* smp_store_release / rcu_assign_pointer / _release */
	LT_DEREF,    /* rcu_dereference */
	LT_FULL,     /* value-returning RMW: fully ordered */
	LT_F_MB,     /* fences */
	LT_F_RMB,
	LT_F_WMB,
	LT_F_BEFORE_ATOMIC,
	LT_F_AFTER_ATOMIC,
	LT_F_MEMB,   /* smp_memb(): the heavy side of sk_fence_heavy/light */
	LT_PLAIN,    /* a plain C access: *x = v, r = *x */
	LT_F_COMPILER, /* barrier(), smp_read_barrier_depends(): a compiler
			  barrier (the executor keeps dependencies) */
};

/* Read-modify-write kinds. */
enum lt_rmw {
	LT_RMW_XCHG,
	LT_RMW_CMPXCHG, /* a = old, b = new */
	LT_RMW_ADD,
	LT_RMW_SUB,
	LT_RMW_AND,
	LT_RMW_OR,
	LT_RMW_XOR,
	LT_RMW_ADD_UNLESS, /* *addr += a unless *addr == b; returns old */
};

struct lt_op {
	unsigned char code;  /* enum lt_code */
	unsigned char order; /* enum lt_order */
	unsigned char rmw;   /* enum lt_rmw */
	unsigned char ret_new; /* RMW: 1 returns the new value, 2 whether
				  add_unless added, 3 whether the new
				  value is 0 */
	short dst;	     /* register, or -1 */
	short loc;	     /* location, or -1 when areg holds the address */
	short areg;	     /* register holding the address, or -1 */
	int a, b;	     /* expressions, or -1 */
	int target;	     /* JZ / JMP: index of the next op */
	int line;	     /* source line, for runtime errors */
};

struct lt_proc {
	int nregs;
	char reg[LT_MAX_REGS][LT_NAME];
	int nops;
	struct lt_op *ops;
	long reg_init[LT_MAX_REGS];
	unsigned char reg_init_ptr[LT_MAX_REGS]; /* 1: reg_init is a
						    location (its address) */
};

/* An item the final clause (or a locations [...] line) observes. */
struct lt_obs {
	int proc; /* -1: a location */
	int idx;  /* register or location */
};

/* Condition tree of the final clause. */
enum lt_ckind { LT_C_TRUE, LT_C_EQ, LT_C_NOT, LT_C_AND, LT_C_OR,
		LT_C_EQ_OBS };

struct lt_cond {
	unsigned char kind;
	int obs;    /* LT_C_EQ, LT_C_EQ_OBS: observed item */
	int obs2;   /* LT_C_EQ_OBS: the item it equals (0:r0=1:r0) */
	long value; /* LT_C_EQ: the value (LT_PTR_TAG + k for &k) */
	int l, r;
};

struct lt_test {
	char file[200];
	char name[128];
	enum lt_expect expect;
	enum lt_quant quant;
	int nlocs;
	struct lt_loc loc[LT_MAX_LOCS];
	int nprocs;
	struct lt_proc proc[LT_MAX_PROCS];
	int nexprs;
	struct lt_expr *expr;
	int nconds;
	struct lt_cond *cond;
	int cond_root;
	int filter_root; /* -1: no filter clause */
	int nobs;
	struct lt_obs obs[LT_MAX_OBS];
	char clause[512]; /* the final clause's text, for the report */
	char flag[LT_NAME]; /* LT_FLAG: the flag's name */
	int uses_rcu;	  /* some process runs an RCU primitive */
	int uses_memb;	  /* some process runs smp_memb() */
	int uses_down;	  /* some process runs srcu_down_read/up_read() */
	unsigned int up_procs[LT_MAX_LOCS];   /* bit p: P<p> runs an
						 srcu_up_read() of loc */
	unsigned int sync_procs[LT_MAX_LOCS]; /* bit p: P<p> runs a
						 synchronize_srcu() of loc */
	int plain;	  /* some process makes a plain access */
};

/*
 * lt_parse() - parse the text of a litmus test (len bytes, need not end in
 * NUL) read from file into *t.
 * Returns: 0, or -1 with "file:line: message" in err (t then holds
 * nothing to free).  Never reads outside text[0..len).
 */
int lt_parse(const char *file, const char *text, size_t len,
	     struct lt_test *t, char err[LT_ERR]);

/* lt_verror() - format "file:line: message" into out (parser and
 * executor errors alike). */
void lt_verror(char out[LT_ERR], const char *file, int line,
	       const char *fmt, va_list ap);

/* lt_free() - release what lt_parse() allocated in *t. */
void lt_free(struct lt_test *t);

/* Options of one run. */
struct lt_opts {
	unsigned long iterations; /* stop after this many iterations */
	double seconds;		  /* or after this long, whichever first */
	int threads;		  /* 0: min(processes, online CPUs) */
	int busted;		  /* grace periods that wait for nothing */
	unsigned long seed;
};

/* One distinct final state and how often it was seen. */
struct lt_state {
	long val[LT_MAX_OBS];
	unsigned long count;
	int match; /* the final clause's condition holds */
};

struct lt_result {
	unsigned long iterations;
	unsigned long positive; /* iterations where the condition held */
	unsigned long filtered; /* iterations the filter clause dropped */
	unsigned long null_deref; /* iterations left out: a process
				     dereferenced a pointer that was 0 */
	int nstates;
	int other;		/* states beyond the table: counted apart */
	unsigned long other_count;
	struct lt_state *states;
	double elapsed;
	int threads;
	char error[LT_ERR]; /* runtime error ("" when none) */
	int deadlock;	    /* the error is a deadlock the run detected */
	int flagged;	    /* atomic: a process ended inside an SRCU
			       section, which the test expects (LT_FLAG) */
};

/*
 * lt_run() - run test t with the options; fills *res (free res->states).
 * Returns: 0, or -1 with res->error set (a runtime error of the test such
 * as a deadlock or an unbalanced read section, or no memory).
 */
int lt_run(const struct lt_test *t, const struct lt_opts *o,
	   struct lt_result *res);

/* lt_expects_never() - nonzero when t's outcome must never be seen. */
static inline int lt_expects_never(const struct lt_test *t)
{
	return t->expect == LT_NEVER ||
	       (t->expect == LT_EXPECT_NONE && t->quant == LT_NOT_EXISTS);
}

/* lt_cond_eval() - evaluate condition c of t over the observed values. */
int lt_cond_eval(const struct lt_test *t, int c, const long *val);

#endif /* SK_LITMUS_H */
