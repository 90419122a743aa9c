// SPDX-License-Identifier: MIT
/*
 * results/bench.json: the environment, every figure (with its
 * repetitions' values) and every target, for programs that read the
 * bench's results (the CSV holds the same figures without the raw
 * repetitions).
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>

/* s as a JSON string (quotes, backslashes and control characters). */
static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* ", "key": "value"" (sep: what comes before the key). */
static void jkv(FILE *f, const char *sep, const char *key, const char *v)
{
	fprintf(f, "%s\"%s\": ", sep, key);
	jstr(f, v);
}

/* A number, or null for NaN/inf (JSON has neither). */
static void jnum(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void jstat(FILE *f, struct sk_bench_stat s)
{
	fputs("\"median\": ", f);
	jnum(f, s.n ? s.median : NAN);
	fputs(", \"min\": ", f);
	jnum(f, s.n ? s.min : NAN);
	fputs(", \"max\": ", f);
	jnum(f, s.n ? s.max : NAN);
	fprintf(f, ", \"reps\": %d", s.n);
}

static void env_json(FILE *f, const struct sk_bench_env *e)
{
	jkv(f, "  \"env\": {", "cpu", e->cpu);
	fprintf(f, ", \"cpus\": %d, \"l2_kib\": %ld, \"l3_kib\": %ld",
		e->ncpus, e->l2_kib, e->l3_kib);
	jkv(f, ", ", "rtm", e->rtm);
	fprintf(f, ", \"membarrier\": %s", e->membarrier ? "true" : "false");
	jkv(f, ", ", "kernel", e->kernel);
	jkv(f, ", ", "compiler", e->compiler);
	jkv(f, ", ", "peers", e->peers);
	jkv(f, ", ", "commit", e->commit);
	jkv(f, ", ", "date", e->date);
	fputs("},\n", f);
}

static void row_json(FILE *f, const struct sk_bench_row *row, int i)
{
	int r;

	jkv(f, "    {", "scenario", row->scenario);
	jkv(f, ", ", "variant", row->variant);
	fprintf(f, ", \"threads\": %d", row->threads);
	/* The sweep's percent reads; null for the other rows. */
	if (row->mix)
		fprintf(f, ", \"mix\": %d", row->mix);
	else
		fputs(", \"mix\": null", f);
	jkv(f, ", ", "impl", row->impl[i]->name);
	jkv(f, ", ", "unit", row->unit);
	fputs(", ", f);
	jstat(f, sk_bench_row_stat(row, i));
	fputs(", \"values\": [", f);
	for (r = 0; r < row->nrep; r++) {
		fputs(r ? ", " : "", f);
		jnum(f, row->rep[i][r]);
	}
	fputs("]}", f);
}

static void target_json(FILE *f, const struct sk_bench_target *t)
{
	jkv(f, "    {", "id", t->id);
	jkv(f, ", ", "what", t->what);
	fprintf(f, ", \"threads\": %d", t->threads);
	jkv(f, ", ", "ratio", t->ratio_name);
	jkv(f, ", ", "direction", t->at_most ? "at most" : "at least");
	fputs(", \"limit\": ", f);
	jnum(f, t->limit);
	fputs(", ", f);
	jstat(f, t->ratio);
	fprintf(f, ", \"verdict\": \"%s\"", sk_bench_target_verdict(t));
	if (t->na)
		jkv(f, ", ", "why", t->na);
	fputs("}", f);
}

int sk_bench_write_json(FILE *f, const struct sk_bench_results *res,
			const struct sk_bench_env *env)
{
	int r, i, first = 1;

	fputs("{\n", f);
	env_json(f, env);
	fputs("  \"figures\": [\n", f);
	for (r = 0; r < res->nrows; r++)
		for (i = 0; i < res->rows[r]->nimpl; i++) {
			if (!sk_bench_row_stat(res->rows[r], i).n)
				continue;
			fputs(first ? "" : ",\n", f);
			row_json(f, res->rows[r], i);
			first = 0;
		}
	fputs("\n  ],\n  \"targets\": [\n", f);
	for (i = 0; i < res->ntargets; i++) {
		fputs(i ? ",\n" : "", f);
		target_json(f, &res->targets[i]);
	}
	fputs("\n  ]\n}\n", f);
	return ferror(f) ? -1 : 0;
}
