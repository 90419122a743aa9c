/* SPDX-License-Identifier: MIT */
/*
 * valgrind_dlclose.c - dlclose() safety of libscalekit.
 * Not a unit test by itself: tests/valgrind.cmake runs it.
 *
 *   valgrind_dlclose PLUGIN SONAME
 *
 * dlopen()s PLUGIN (which links libscalekit.so; this program does not),
 * runs its sk_test_plugin_run() (callbacks in plugin code, waited for,
 * then SK_FREE_RCU() objects left pending), dlclose()s it, and keeps
 * running for 100 ms while the library's worker wakes up and runs the
 * pending callbacks.  The library is linked with -z nodelete, so it must
 * still be loaded after dlclose() (dlopen(SONAME, RTLD_NOLOAD) finds it)
 * and nothing may crash.  Exit 0 on success.
 *
 *   valgrind_dlclose --expect-unload PLUGIN SONAME
 *
 * The broken twin: PLUGIN links a copy of the library built without
 * -z nodelete.  The same checks must see the library unloaded (or the
 * process crash, in a child): the program exits 0 when they do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Load, run, unload; 1 if the library is still loaded afterwards. */
static int cycle(const char *plugin, const char *soname, int *err)
{
	struct timespec ts = { 0, 100 * 1000000L };
	int (*run)(void);
	void *h, *lib;

	*err = 0;
	h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", plugin, dlerror());
		*err = 1;
		return 0;
	}
	*(void **)&run = dlsym(h, "sk_test_plugin_run");
	if (!run) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		*err = 1;
		return 0;
	}
	if (run() != 0) {
		fprintf(stderr, "sk_test_plugin_run failed\n");
		*err = 1;
	}
	if (dlclose(h) != 0) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		*err = 1;
	}
	/* The worker wakes up (lazy timer) and runs the pending callbacks. */
	nanosleep(&ts, NULL);
	lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
	if (lib)
		dlclose(lib);
	return lib != NULL;
}

int main(int argc, char **argv)
{
	int loaded, err, st = 0;
	pid_t pid;

	if (argc == 3) {
		loaded = cycle(argv[1], argv[2], &err);
		printf("after dlclose: %s %s\n", argv[2],
		       loaded ? "still loaded" : "unloaded");
		return err || !loaded;
	}
	if (argc != 4 || strcmp(argv[1], "--expect-unload") != 0) {
		fprintf(stderr, "usage: %s [--expect-unload] PLUGIN SONAME\n",
			argv[0]);
		return 2;
	}
	/* Twin: in a child, which may well crash. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		loaded = cycle(argv[2], argv[3], &err);
		printf("twin after dlclose: %s %s\n", argv[3],
		       loaded ? "still loaded" : "unloaded");
		fflush(stdout);
		_exit(loaded ? 0 : 3);
	}
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st)) {
		printf("twin: crashed with signal %d, as expected\n",
		       WTERMSIG(st));
		return 0;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
		printf("twin: library unloaded, as expected\n");
		return 0;
	}
	printf("twin: the checks did not notice the missing -z nodelete\n");
	return 1;
}
