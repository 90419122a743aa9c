/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the threaded and multi-process test programs: short
 * atomics, thread start/join that die on failure, sleeping, forked and
 * re-executed children whose stderr is read back, and stderr capture.
 * Every helper exits with status 2 when the system refuses a resource
 * (a harness failure, not a test failure).  The definitions are in
 * tests/support/sk_test_util.c (the test support library).
 */
#ifndef SK_TEST_UTIL_H
#define SK_TEST_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sk_test.h"

/* Acquire load, release store and acq_rel increment of a plain variable. */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define INC(x) __atomic_fetch_add(&(x), 1, __ATOMIC_ACQ_REL)

/* The structure of type that holds member at ptr (container_of). */
#define OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* pthread_create() with attributes, or exit(2). */
void sk_test_thread_start_attr(pthread_t *t,
			       const pthread_attr_t *attr,
			       void *(*fn)(void *), void *arg);

/* pthread_create() with default attributes, or exit(2). */
void sk_test_thread_start(pthread_t *t, void *(*fn)(void *),
			  void *arg);

/* pthread_join(); returns the thread's return value. */
void *sk_test_thread_join(pthread_t t);

/* The kernel thread id of the caller (as the library's messages print it). */
long sk_test_gettid(void);

/* Sleep us microseconds, resuming after signals. */
void sk_test_sleep_us(unsigned long us);

/*
 * Install fn as the handler of sig (SA_RESTART, nothing else blocked while
 * it runs); a test failure if sigaction() fails.
 */
void sk_test_on_signal(int sig, void (*fn)(int));

/* Sleep ms milliseconds, resuming after signals. */
void sk_test_sleep_ms(unsigned long ms);

/* Wait (sleeping 1 ms at a time) until *flag (read with acquire) is nonzero. */
void sk_test_wait_flag(int *flag);

/* How many times needle occurs in hay, without overlaps. */
int sk_test_count_substr(const char *hay, const char *needle);

/* fork() after flushing stdio (no output is doubled), or exit(2). */
pid_t sk_test_fork(void);

/*
 * Read fd to its end into out (at most len - 1 bytes, NUL-terminated; the
 * rest is drained so the writer never blocks), then close it.  Returns the
 * number of bytes kept.
 */
size_t sk_test_read_all(int fd, char *out, size_t len);

/* waitpid() for pid, resuming after signals; returns the wait status. */
int sk_test_wait(pid_t pid);

/* A pipe whose write end becomes the child's stderr, or exit(2). */
void sk_test_pipe(int p[2]);

/*
 * Nonzero (after printing why) when this test runs under qemu-i386 and
 * creates a thread while another thread is inside a signal handler: qemu's
 * user-mode i386 target keeps one process-wide GDT, so the handler's
 * sigreturn reloads %gs with the TLS base of the newest thread (a ten-line
 * program shows it), and the interrupted thread then reads another
 * thread's thread-local variables.  Tests that do that skip themselves
 * there; they run natively and under qemu-aarch64.
 */
int sk_test_qemu_i386_tls_bug(const char *test);

/*
 * Replace this process by this program again, with argv and envp; returns
 * only when that fails.  Under a user-mode emulator (the aarch64 job of
 * make check runs the tests under qemu-user) the kernel cannot execute the
 * program itself, so CTest sets SK_TEST_EMULATOR to the emulator's command
 * line, e.g. "/usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu" (absolute
 * path, words separated by spaces), and the program runs under it again;
 * /proc/self/exe then names the emulated program, not the emulator.
 */
void sk_test_execve_self(char *const argv[], char *const envp[]);

/*
 * Run this program again (/proc/self/exe) with argv and envp, stderr on a
 * pipe; fork + exec, so the child starts single-threaded, also under the
 * sanitizers.  Returns the wait status and the child's stderr in out.
 */
int sk_test_exec_self(char *const argv[], char *const envp[],
		      char *out, size_t len);

/*
 * Run this program again (sk_test_exec_self()) as "prog --child=mode",
 * with the environment variable name set to value (removed when value is
 * NULL; the environment as is when name is NULL); returns the wait status
 * and the child's stderr in out.
 */
int sk_test_run_child(const char *prog, const char *mode,
		      const char *name, const char *value,
		      char *out, size_t len);

/* One child of sk_test_run_children(). */
struct sk_test_run {
	const char *mode;  /* runs "prog --child=mode" */
	const char *name;  /* the environment variable set, or NULL */
	const char *value; /* its value; NULL: removed */
	char *out;	   /* the child's stderr, NUL-terminated */
	size_t len;	   /* size of out */
	int status;	   /* wait status */
};
#define SK_TEST_RUN_MAX 32

/*
 * Run n (at most SK_TEST_RUN_MAX) children as sk_test_run_child() does,
 * all at the same time: for tests whose children mostly sleep.  Each one's
 * stderr is read as it comes (beyond len - 1 bytes it is read and
 * dropped); returns when every child has ended.
 */
void sk_test_run_children(const char *prog, struct sk_test_run *r, size_t n);

/* How a forked child ended and what it wrote on stderr. */
struct sk_test_child {
	pid_t pid;
	int status;	/* from waitpid() */
	char err[8192]; /* its stderr, NUL-terminated */
};

/*
 * Run fn in a forked child with stderr on a pipe and no core file; a child
 * still running after hang_s seconds (0: no limit) dies by SIGALRM (in
 * ASan builds it is then forked again, up to 3 times in all: see
 * tests/support/sk_test_util.c for why).  After
 * fn the child ends by exit(0) (atexit handlers, e.g. the leak checker,
 * run) or, when quick, by fflush(stderr) and _exit(0).  Logs the outcome.
 */
void sk_test_fork_child(void (*fn)(void), unsigned hang_s,
			int quick, struct sk_test_child *c);

/*
 * Run fn in a forked child (sk_test_fork_child(), quick, hang_s as there)
 * and check that it died by SIGABRT with m1 and m2 (each unless NULL) on
 * its stderr.  A child that exited instead is logged with its status.
 */
void sk_test_expect_abort(void (*fn)(void), unsigned hang_s, const char *m1,
			  const char *m2);

/*
 * Check that wait status st is(st) with val(st) == want (e.g. WIFEXITED,
 * WEXITSTATUS, 0).
 */
#define SK_T_CHECK_WAIT(st, is, val, want)                                \
	do {                                                              \
		int sk_st_ = (st);                                        \
		SK_CHECK(is(sk_st_));                                     \
		SK_CHECK_EQ(is(sk_st_) ? val(sk_st_) : -1, want);         \
	} while (0)

/* Check that wait status st is a normal exit with status 0. */
#define SK_CHECK_EXIT_0(st) SK_T_CHECK_WAIT(st, WIFEXITED, WEXITSTATUS, 0)

/* Check that wait status st is a death by SIGABRT. */
#define SK_CHECK_ABORTED(st) \
	SK_T_CHECK_WAIT(st, WIFSIGNALED, WTERMSIG, SIGABRT)

/*
 * Arm SIGALRM: unless alarm(0) disarms it within s seconds, the handler
 * writes "HANG: <what> did not end within <s> s" on stderr (write(2)
 * only: async-signal-safe) and ends the process with _exit(2).  what must
 * outlive the deadline (a string literal).  Replaces the SIGALRM handler.
 */
void sk_test_deadline(const char *what, unsigned int s);

/* Where stderr went while a capture runs. */
struct sk_test_capture {
	FILE *f;   /* the temporary file stderr writes to */
	int saved; /* the real stderr, dup()ed */
};

/* Send stderr to a temporary file until sk_test_capture_end(). */
void sk_test_capture_begin(struct sk_test_capture *c);

/*
 * Restore stderr; returns buf holding what was written meanwhile (at most
 * n - 1 bytes, NUL-terminated), also copied to the log.
 */
const char *sk_test_capture_end(struct sk_test_capture *c,
				char *buf, size_t n);

/*
 * 1 where the child of a fork() in a multithreaded process may start
 * threads: not under TSan, which dies there ("dup thread with used id")
 * or hangs in its allocator.  Such children skip what starts a thread.
 */
#ifdef __SANITIZE_THREAD__
#define SK_TEST_CHILD_THREADS 0
#else
#define SK_TEST_CHILD_THREADS 1
#endif

#endif /* SK_TEST_UTIL_H */
