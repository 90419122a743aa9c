/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the threaded and multi-process test programs: short
 * atomics, thread start/join that die on failure, sleeping, forked and
 * re-executed children whose stderr is read back, and stderr capture.
 * Every helper exits with status 2 when the system refuses a resource
 * (a harness failure, not a test failure).  Define _GNU_SOURCE before
 * the first #include, as every test program does.
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
static inline void sk_test_thread_start_attr(pthread_t *t,
					     const pthread_attr_t *attr,
					     void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(t, attr, fn, arg);

	if (rc != 0) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		exit(2);
	}
}

/* pthread_create() with default attributes, or exit(2). */
static inline void sk_test_thread_start(pthread_t *t, void *(*fn)(void *),
					void *arg)
{
	sk_test_thread_start_attr(t, NULL, fn, arg);
}

/* pthread_join(); returns the thread's return value. */
static inline void *sk_test_thread_join(pthread_t t)
{
	void *ret = NULL;

	pthread_join(t, &ret);
	return ret;
}

/* The kernel thread id of the caller (as the library's messages print it). */
static inline long sk_test_gettid(void)
{
	return syscall(SYS_gettid);
}

/* Sleep us microseconds, resuming after signals. */
static inline void sk_test_sleep_us(unsigned long us)
{
	struct timespec ts = { (time_t)(us / 1000000),
			       (long)(us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Sleep ms milliseconds, resuming after signals. */
static inline void sk_test_sleep_ms(unsigned long ms)
{
	sk_test_sleep_us(ms * 1000UL);
}

/* How many times needle occurs in hay, without overlaps. */
static inline int sk_test_count_substr(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* fork() after flushing stdio (no output is doubled), or exit(2). */
static inline pid_t sk_test_fork(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	return pid;
}

/*
 * Read fd to its end into out (at most len - 1 bytes, NUL-terminated; the
 * rest is drained so the writer never blocks), then close it.  Returns the
 * number of bytes kept.
 */
static inline size_t sk_test_read_all(int fd, char *out, size_t len)
{
	char sink[256];
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len &&
	       ((n = read(fd, out + got, len - 1 - got)) > 0 ||
		(n < 0 && errno == EINTR)))
		if (n > 0)
			got += (size_t)n;
	out[got] = '\0';
	while ((n = read(fd, sink, sizeof(sink))) > 0 ||
	       (n < 0 && errno == EINTR))
		;
	close(fd);
	return got;
}

/* waitpid() for pid, resuming after signals; returns the wait status. */
static inline int sk_test_wait(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* A pipe whose write end becomes the child's stderr, or exit(2). */
static inline void sk_test_pipe(int p[2])
{
	if (pipe(p) != 0) {
		perror("pipe");
		exit(2);
	}
}

/*
 * Nonzero (after printing why) when this test runs under qemu-i386 and
 * creates a thread while another thread is inside a signal handler: qemu's
 * user-mode i386 target keeps one process-wide GDT, so the handler's
 * sigreturn reloads %gs with the TLS base of the newest thread (a ten-line
 * program shows it), and the interrupted thread then reads another
 * thread's thread-local variables.  Tests that do that skip themselves
 * there; they run natively and under qemu-aarch64.
 */
static inline int sk_test_qemu_i386_tls_bug(const char *test)
{
	const char *emu = getenv("SK_TEST_EMULATOR");

	if (!emu || !strstr(emu, "qemu-i386"))
		return 0;
	fprintf(stderr,
		"  %s: skipped under qemu-i386 (a thread created during a "
		"signal handler resets the handler thread's TLS base there)\n",
		test);
	return 1;
}

/*
 * Replace this process by this program again, with argv and envp; returns
 * only when that fails.  Under a user-mode emulator (the aarch64 job of
 * make check runs the tests under qemu-user) the kernel cannot execute the
 * program itself, so CTest sets SK_TEST_EMULATOR to the emulator's command
 * line, e.g. "/usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu" (absolute
 * path, words separated by spaces), and the program runs under it again;
 * /proc/self/exe then names the emulated program, not the emulator.
 */
static inline void sk_test_execve_self(char *const argv[], char *const envp[])
{
	const char *emu = getenv("SK_TEST_EMULATOR");
	static char self[4096], words[1024];
	char *args[64], *w;
	ssize_t n;
	int i = 0, j;

	if (!emu || !*emu || strlen(emu) >= sizeof(words)) {
		execve("/proc/self/exe", argv, envp);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	strcpy(words, emu);
	for (w = strtok(words, " "); w && i < 32; w = strtok(NULL, " "))
		args[i++] = w;
	args[i++] = "-0"; /* qemu: the program's argv[0] */
	args[i++] = argv[0];
	args[i++] = self;
	for (j = 1; argv[j] && i < 63; j++)
		args[i++] = argv[j];
	args[i] = NULL;
	execve(args[0], args, envp);
}

/*
 * Run this program again (/proc/self/exe) with argv and envp, stderr on a
 * pipe; fork + exec, so the child starts single-threaded, also under the
 * sanitizers.  Returns the wait status and the child's stderr in out.
 */
static inline int sk_test_exec_self(char *const argv[], char *const envp[],
				    char *out, size_t len)
{
	int p[2];
	pid_t pid;

	sk_test_pipe(p);
	pid = sk_test_fork();
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 2);
		close(p[1]);
		sk_test_execve_self(argv, envp);
		_exit(127);
	}
	close(p[1]);
	sk_test_read_all(p[0], out, len);
	return sk_test_wait(pid);
}

/*
 * Run this program again (sk_test_exec_self()) as "prog --child=mode",
 * with the environment variable name set to value (removed when value is
 * NULL); returns the wait status and the child's stderr in out.
 */
static inline int sk_test_run_child(const char *prog, const char *mode,
				    const char *name, const char *value,
				    char *out, size_t len)
{
	extern char **environ;
	char flag[64], var[128];
	char *argv[3], **envp;
	size_t n = 0, i, nl = strlen(name);
	int st;

	for (i = 0; environ[i]; i++)
		;
	envp = calloc(i + 2, sizeof(*envp));
	if (!envp)
		abort();
	for (i = 0; environ[i]; i++)
		if (strncmp(environ[i], name, nl) != 0 || environ[i][nl] != '=')
			envp[n++] = environ[i];
	if (value) {
		snprintf(var, sizeof(var), "%s=%s", name, value);
		envp[n++] = var;
	}
	envp[n] = NULL;
	snprintf(flag, sizeof(flag), "--child=%s", mode);
	argv[0] = (char *)prog;
	argv[1] = flag;
	argv[2] = NULL;
	st = sk_test_exec_self(argv, envp, out, len);
	free(envp);
	return st;
}

/* How a forked child ended and what it wrote on stderr. */
struct sk_test_child {
	pid_t pid;
	int status;	/* from waitpid() */
	char err[8192]; /* its stderr, NUL-terminated */
};

/*
 * Run fn in a forked child with stderr on a pipe and no core file; a child
 * still running after hang_s seconds (0: no limit) dies by SIGALRM.  After
 * fn the child ends by exit(0) (atexit handlers, e.g. the leak checker,
 * run) or, when quick, by fflush(stderr) and _exit(0).  Logs the outcome.
 */
static inline void sk_test_fork_child(void (*fn)(void), unsigned hang_s,
				      int quick, struct sk_test_child *c)
{
	size_t got;
	int p[2];

	memset(c, 0, sizeof(*c));
	sk_test_pipe(p);
	c->pid = sk_test_fork();
	if (c->pid == 0) {
		struct rlimit no_core = { 0, 0 };

		/* Intended aborts leave no core files behind. */
		setrlimit(RLIMIT_CORE, &no_core);
		close(p[0]);
		dup2(p[1], STDERR_FILENO);
		close(p[1]);
		if (hang_s)
			alarm(hang_s);
		fn();
		if (!quick)
			exit(0);
		fflush(stderr);
		_exit(0);
	}
	close(p[1]);
	got = sk_test_read_all(p[0], c->err, sizeof(c->err));
	c->status = sk_test_wait(c->pid);
	fprintf(stderr, "  child %d: %s %d; stderr: %s%s", (int)c->pid,
		WIFSIGNALED(c->status) ? "signal" : "exit",
		WIFSIGNALED(c->status) ? WTERMSIG(c->status)
				       : WEXITSTATUS(c->status),
		got ? "\n    " : "(nothing)\n", c->err);
}

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

/* Where stderr went while a capture runs. */
struct sk_test_capture {
	FILE *f;   /* the temporary file stderr writes to */
	int saved; /* the real stderr, dup()ed */
};

/* Send stderr to a temporary file until sk_test_capture_end(). */
static inline void sk_test_capture_begin(struct sk_test_capture *c)
{
	fflush(stderr);
	c->f = tmpfile();
	c->saved = dup(2);
	if (!c->f || c->saved < 0) {
		fprintf(stderr, "cannot capture stderr\n");
		exit(2);
	}
	dup2(fileno(c->f), 2);
}

/*
 * Restore stderr; returns buf holding what was written meanwhile (at most
 * n - 1 bytes, NUL-terminated), also copied to the log.
 */
static inline const char *sk_test_capture_end(struct sk_test_capture *c,
					      char *buf, size_t n)
{
	size_t k;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->f);
	k = fread(buf, 1, n - 1, c->f);
	buf[k] = '\0';
	fclose(c->f);
	fprintf(stderr, "  (captured) %s", k ? buf : "(nothing)\n");
	return buf;
}

#endif /* SK_TEST_UTIL_H */
