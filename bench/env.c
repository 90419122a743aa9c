// SPDX-License-Identifier: MIT
/*
 * The environment a bench run measured in, for the header of every output
 * (terminal, CSV comment lines, JSON): CPU and the flags that matter
 * (RTM, membarrier), cores, cache sizes, kernel, compiler and flags, the
 * peers' versions, date and commit.  The build-time facts come from
 * tools/CMakeLists.txt (SK_ENV_*).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/barrier.h"
#include "scalekit/elide.h"

#ifndef SK_ENV_CFLAGS
#define SK_ENV_CFLAGS "unknown"
#endif
#ifndef SK_ENV_COMMIT
#define SK_ENV_COMMIT "unknown"
#endif
#ifndef SK_ENV_PEERS
#define SK_ENV_PEERS "unknown"
#endif

/*
 * The CPU's model name from /proc/cpuinfo ("unknown" when it has none),
 * with its family, model and stepping where the file lists them (x86):
 * the same name covers CPUs whose figures differ (docs/benchmarks.md).
 */
static void cpu_model(char *buf, size_t len)
{
	FILE *c = fopen("/proc/cpuinfo", "r");
	char line[256], name[128] = "unknown";
	long fam = -1, model = -1, step = -1;

	snprintf(buf, len, "unknown");
	if (!c)
		return;
	/* The first CPU's block: it ends at the first empty line. */
	while (fgets(line, sizeof(line), c) && line[0] != '\n') {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		v += 1 + strspn(v + 1, " \t");
		v[strcspn(v, "\n")] = 0;
		if (!strncmp(line, "model name", 10))
			snprintf(name, sizeof(name), "%s", v);
		else if (!strncmp(line, "cpu family", 10))
			fam = strtol(v, NULL, 10);
		else if (!strncmp(line, "model\t", 6))
			model = strtol(v, NULL, 10);
		else if (!strncmp(line, "stepping", 8))
			step = strtol(v, NULL, 10);
	}
	fclose(c);
	if (fam >= 0 && model >= 0 && step >= 0)
		snprintf(buf, len, "%s (family %ld, model %ld, stepping %ld)",
			 name, fam, model, step);
	else
		snprintf(buf, len, "%s", name);
}

/* The RTM verdict of the elision dispatch, in words. */
static const char *rtm_words(void)
{
	unsigned int r = sk_elide_cpu_has_rtm();

	if (!(r & SK_ELIDE_CPU_RTM))
		return "no RTM (elided locks run their fallback)";
	if (r & (SK_ELIDE_CPU_ALWAYS_ABORT | SK_ELIDE_CPU_BROKEN))
		return "RTM listed but disabled (fallback)";
	return "RTM usable";
}

/*
 * Bytes of CPU 0's unified cache of that level, from sysfs (the kernel's
 * view, as lscpu prints it); glibc's sysconf() where sysfs has none.
 * sysfs first: on a 2-vCPU AMD EPYC VM, glibc 2.36 reported an L3 of 320
 * MiB for the 32 MiB that sysfs and lscpu show.
 */
static long cache_bytes(int level, int sc_name)
{
	char path[96], buf[32], *end;
	int i;

	for (i = 0; i < 8; i++) {
		FILE *f;
		long n = 0, lv = 0;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (fscanf(f, "%ld", &lv) != 1)
			lv = 0;
		fclose(f);
		if (lv != level)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		f = fopen(path, "r");
		if (!f || !fgets(buf, sizeof(buf), f) ||
		    strncmp(buf, "Unified", 7) != 0) {
			if (f)
				fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f)) {
			n = strtol(buf, &end, 10);
			if (*end == 'K')
				n *= 1024;
			else if (*end == 'M')
				n *= 1024 * 1024;
		}
		if (f)
			fclose(f);
		if (n > 0)
			return n;
	}
	return sysconf(sc_name);
}

void sk_bench_env_get(struct sk_bench_env *e)
{
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;
	long l2 = cache_bytes(2, _SC_LEVEL2_CACHE_SIZE),
	     l3 = cache_bytes(3, _SC_LEVEL3_CACHE_SIZE);

	memset(e, 0, sizeof(*e));
	cpu_model(e->cpu, sizeof(e->cpu));
	e->ncpus = sk_bench_ncpus();
	e->l2_kib = l2 > 0 ? l2 / 1024 : 0;
	e->l3_kib = l3 > 0 ? l3 / 1024 : 0;
	e->rtm = rtm_words();
	e->membarrier = sk_fence_uses_membarrier();
	if (uname(&u) == 0)
		snprintf(e->kernel, sizeof(e->kernel), "%s %s %s", u.sysname,
			 u.release, u.machine);
	else
		snprintf(e->kernel, sizeof(e->kernel), "unknown");
	if (gmtime_r(&now, &tm))
		strftime(e->date, sizeof(e->date), "%Y-%m-%d %H:%M UTC", &tm);
	e->compiler = SK_ENV_CFLAGS;
	e->commit = SK_ENV_COMMIT;
	e->peers = SK_ENV_PEERS;
}

void sk_bench_env_print(FILE *f, const char *prefix,
			const struct sk_bench_env *e)
{
	/*
	 * Ratios depend on the CPU (docs/benchmarks.md): name it, with what
	 * sets the hash rows (cache sizes) and the lock rows (RTM).
	 */
	fprintf(f, "%sCPU: %s, %d CPUs; L2 %ld KiB, L3 %ld KiB; %s; "
		   "membarrier(2) %s\n",
		prefix, e->cpu, e->ncpus, e->l2_kib, e->l3_kib, e->rtm,
		e->membarrier ? "in use" : "unavailable (fences)");
	fprintf(f, "%skernel %s; built by %s\n", prefix, e->kernel,
		e->compiler);
	fprintf(f, "%speers: %s; commit %s; %s\n", prefix, e->peers,
		e->commit, e->date);
}
