/* SPDX-License-Identifier: MIT */
/* sk_test_util.h: threads, sleeping, forked and re-executed children, stderr capture. */
#define _GNU_SOURCE
#include "sk_test_util.h"

#include <fcntl.h>
#include <poll.h>

void sk_test_thread_start_attr(pthread_t *t,
			       const pthread_attr_t *attr,
			       void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(t, attr, fn, arg);

	if (rc != 0) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		exit(2);
	}
}

void sk_test_thread_start(pthread_t *t, void *(*fn)(void *),
			  void *arg)
{
	sk_test_thread_start_attr(t, NULL, fn, arg);
}

void *sk_test_thread_join(pthread_t t)
{
	void *ret = NULL;

	pthread_join(t, &ret);
	return ret;
}

long sk_test_gettid(void)
{
	return syscall(SYS_gettid);
}

void sk_test_sleep_us(unsigned long us)
{
	struct timespec ts = { (time_t)(us / 1000000),
			       (long)(us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void sk_test_sleep_ms(unsigned long ms)
{
	sk_test_sleep_us(ms * 1000UL);
}

void sk_test_wait_flag(int *flag)
{
	while (!LOAD(*flag))
		sk_test_sleep_ms(1);
}

int sk_test_count_substr(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

pid_t sk_test_fork(void)
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

size_t sk_test_read_all(int fd, char *out, size_t len)
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

int sk_test_wait(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

void sk_test_pipe(int p[2])
{
	if (pipe(p) != 0) {
		perror("pipe");
		exit(2);
	}
}

int sk_test_qemu_i386_tls_bug(const char *test)
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

void sk_test_execve_self(char *const argv[], char *const envp[])
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
 * Start this program again with argv and envp, its stderr on a pipe whose
 * read end goes to *fd.  The pipe is close-on-exec, so no other child
 * started meanwhile keeps it open.  Returns the child's pid.
 */
static pid_t exec_self_piped(char *const argv[], char *const envp[], int *fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0) {
		perror("pipe2");
		exit(2);
	}
	pid = sk_test_fork();
	if (pid == 0) {
		dup2(p[1], 2); /* fd 2 itself stays open at exec */
		sk_test_execve_self(argv, envp);
		_exit(127);
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

int sk_test_exec_self(char *const argv[], char *const envp[],
		      char *out, size_t len)
{
	int fd;
	pid_t pid = exec_self_piped(argv, envp, &fd);

	sk_test_read_all(fd, out, len); /* closes fd */
	return sk_test_wait(pid);
}

/*
 * The environment for a child: ours without the variable name (when
 * name is not NULL), plus name=value (when value is not NULL) in var.
 * Free the array.
 */
static char **child_envp(const char *name, const char *value, char *var,
			 size_t var_len)
{
	extern char **environ;
	size_t n = 0, i, nl = name ? strlen(name) : 0;
	char **envp;

	for (i = 0; environ[i]; i++)
		;
	envp = calloc(i + 2, sizeof(*envp));
	if (!envp)
		abort();
	for (i = 0; environ[i]; i++)
		if (!name || strncmp(environ[i], name, nl) != 0 ||
		    environ[i][nl] != '=')
			envp[n++] = environ[i];
	if (name && value) {
		snprintf(var, var_len, "%s=%s", name, value);
		envp[n++] = var;
	}
	envp[n] = NULL;
	return envp;
}

int sk_test_run_child(const char *prog, const char *mode,
		      const char *name, const char *value,
		      char *out, size_t len)
{
	struct sk_test_run r = { mode, name, value, out, len, 0 };

	sk_test_run_children(prog, &r, 1);
	return r.status;
}

void sk_test_run_children(const char *prog, struct sk_test_run *r, size_t n)
{
	struct pollfd pf[SK_TEST_RUN_MAX];
	size_t got[SK_TEST_RUN_MAX], i, open_fds = n;
	pid_t pid[SK_TEST_RUN_MAX];
	char flag[64], var[128], sink[256];

	if (n > SK_TEST_RUN_MAX) {
		fprintf(stderr, "sk_test_run_children: %zu children, at most "
				"%d\n", n, SK_TEST_RUN_MAX);
		exit(2);
	}
	for (i = 0; i < n; i++) {
		char *argv[3], **envp;

		envp = child_envp(r[i].name, r[i].value, var, sizeof(var));
		snprintf(flag, sizeof(flag), "--child=%s", r[i].mode);
		argv[0] = (char *)prog;
		argv[1] = flag;
		argv[2] = NULL;
		pid[i] = exec_self_piped(argv, envp, &pf[i].fd);
		free(envp);
		pf[i].events = POLLIN;
		got[i] = 0;
	}
	/* Read every pipe as data comes, so that no child waits for us. */
	while (open_fds) {
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("poll");
			exit(2);
		}
		for (i = 0; i < n; i++) {
			size_t room = got[i] + 1 < r[i].len
					      ? r[i].len - 1 - got[i]
					      : 0;
			ssize_t k;

			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			k = room ? read(pf[i].fd, r[i].out + got[i], room)
				 : read(pf[i].fd, sink, sizeof(sink));
			if (k < 0 && errno == EINTR)
				continue;
			if (k > 0) {
				if (room)
					got[i] += (size_t)k;
				continue;
			}
			close(pf[i].fd); /* end of file or error */
			pf[i].fd = -1;
			open_fds--;
		}
	}
	for (i = 0; i < n; i++) {
		if (r[i].len)
			r[i].out[got[i]] = '\0';
		r[i].status = sk_test_wait(pid[i]);
	}
}

/*
 * gcc 12's ASan takes none of its allocator's locks across fork() (its
 * runtime has no fork interceptor): when another thread of the parent is
 * inside malloc() or free() at the fork, the child inherits that lock
 * taken, and its first thread start or allocation waits for it forever.
 * The ASan job saw it in test_rcu_cb_own_fork (a child thread's start-up
 * stuck on the allocator's lock; here 3 times in 621 runs of that case
 * beside three busy-loop processes).  There, a child that hangs (SIGALRM)
 * is forked again, up to this many times in all; a hang of the library
 * repeats and still fails.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SK_TEST_FORK_TRIES 3
#else
#define SK_TEST_FORK_TRIES 1
#endif

static void fork_child_once(void (*fn)(void), unsigned hang_s, int quick,
			    struct sk_test_child *c)
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

void sk_test_fork_child(void (*fn)(void), unsigned hang_s,
			int quick, struct sk_test_child *c)
{
	int tries;

	for (tries = 1;; tries++) {
		fork_child_once(fn, hang_s, quick, c);
		if (tries == SK_TEST_FORK_TRIES || !hang_s ||
		    !WIFSIGNALED(c->status) || WTERMSIG(c->status) != SIGALRM)
			return;
		fprintf(stderr, "  child %d hung (SIGALRM after %u s): under "
				"ASan, forked again (%d of %d)\n",
			(int)c->pid, hang_s, tries + 1, SK_TEST_FORK_TRIES);
	}
}

void sk_test_expect_abort(void (*fn)(void), unsigned hang_s, const char *m1,
			  const char *m2)
{
	/* Static: 8 KiB of stderr, and only the main thread runs children. */
	static struct sk_test_child c;

	sk_test_fork_child(fn, hang_s, 1, &c);
	if (WIFEXITED(c.status))
		fprintf(stderr, "  the misuse was not detected: the child "
				"exited with status %d\n",
			WEXITSTATUS(c.status));
	SK_CHECK_ABORTED(c.status);
	if (m1)
		SK_CHECK_STR_CONTAINS(c.err, m1);
	if (m2)
		SK_CHECK_STR_CONTAINS(c.err, m2);
}

static const char *deadline_what = "the test"; /* set before alarm() */
static char deadline_secs[24];			 /* decimal, set with it */

static void deadline_write(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		_exit(2);
}

static void deadline_expired(int sig)
{
	(void)sig;
	deadline_write("HANG: ");
	deadline_write(deadline_what);
	deadline_write(" did not end within ");
	deadline_write(deadline_secs);
	deadline_write(" s\n");
	_exit(2);
}

void sk_test_deadline(const char *what, unsigned int s)
{
	deadline_what = what;
	snprintf(deadline_secs, sizeof(deadline_secs), "%u", s);
	signal(SIGALRM, deadline_expired);
	alarm(s);
}

void sk_test_capture_begin(struct sk_test_capture *c)
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

const char *sk_test_capture_end(struct sk_test_capture *c,
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

void sk_test_on_signal(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	SK_CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}
