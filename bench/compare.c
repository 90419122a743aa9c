// SPDX-License-Identifier: MIT
/*
 * scalekit bench --compare OLD.csv NEW.csv: the ratio new/old of every row
 * the two CSV files of `scalekit bench --csv` share, and whether the
 * change is beyond the recorded spread (the two runs' [min..max] ranges do
 * not overlap), so that a change's effect can be seen before it lands.
 *
 * A row is keyed by scenario, variant, threads, impl and unit, plus a
 * "mix" column where the file has one and the row fills it; the columns
 * are found by the header's names, so files with more columns compare
 * too.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMP_LINE 4096
#define CMP_FIELDS 16

/* Columns every file must have, in the key's order, then the figures. */
enum { C_SCENARIO, C_VARIANT, C_THREADS, C_IMPL, C_UNIT, C_MIX, C_MEDIAN,
       C_MIN, C_MAX, C_COUNT };
static const char *const col_name[C_COUNT] = {
	"scenario", "variant", "threads", "impl", "unit",
	"mix",	    "median",  "min",	  "max"
};

struct cmp_row {
	char key[CMP_LINE]; /* the key columns joined by ',' */
	double median, min, max;
	int used;	    /* matched by a row of the other file */
};

struct cmp_file {
	const char *path;
	struct cmp_row *rows;
	int n, cap;
};

/* Split line (modified) at ','; returns the number of fields or -1. */
static int split(char *line, char **f)
{
	int n = 0;

	line[strcspn(line, "\r\n")] = 0;
	for (;;) {
		if (n == CMP_FIELDS)
			return -1;
		f[n++] = line;
		line = strchr(line, ',');
		if (!line)
			return n;
		*line++ = 0;
	}
}

/* Map the header's names to columns: 0, or -1 (message printed). */
static int header(struct cmp_file *cf, char *line, int lineno, int *col)
{
	char *f[CMP_FIELDS];
	int n = split(line, f), c, i;

	if (n < 0) {
		fprintf(stderr, "scalekit bench: %s:%d: more than %d columns\n",
			cf->path, lineno, CMP_FIELDS);
		return -1;
	}
	for (c = 0; c < C_COUNT; c++) {
		col[c] = -1;
		for (i = 0; i < n; i++)
			if (strcmp(f[i], col_name[c]) == 0)
				col[c] = i;
		if (col[c] < 0 && c != C_MIX) {
			fprintf(stderr,
				"scalekit bench: %s:%d: not a bench CSV file "
				"(no column '%s')\n",
				cf->path, lineno, col_name[c]);
			return -1;
		}
	}
	return 0;
}

/* A finite number from s into *v: 0, or -1. */
static int number(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return (!*s || *end || errno || !isfinite(*v)) ? -1 : 0;
}

/* One data line into a new row: 0, or -1 (message printed). */
static int data_line(struct cmp_file *cf, char *line, int lineno,
		     const int *col)
{
	char *f[CMP_FIELDS];
	struct cmp_row *r;
	int n = split(line, f), c, short_row = n < 0;

	/* Every column the header named, wherever it put it (f[] beyond
	 * n is not set). */
	for (c = 0; c < C_COUNT; c++)
		short_row |= n <= col[c];
	if (short_row) {
		fprintf(stderr, "scalekit bench: %s:%d: wrong number of "
				"columns\n", cf->path, lineno);
		return -1;
	}
	if (cf->n == cf->cap) {
		int cap = cf->cap ? 2 * cf->cap : 256;
		struct cmp_row *p = realloc(cf->rows, cap * sizeof(*p));

		if (!p) {
			fprintf(stderr, "scalekit bench: %s: out of memory\n",
				cf->path);
			return -1;
		}
		cf->rows = p;
		cf->cap = cap;
	}
	r = &cf->rows[cf->n];
	memset(r, 0, sizeof(*r));
	/* A mix column joins the key only where it says something. */
	for (c = C_SCENARIO; c <= C_MIX; c++)
		if (col[c] >= 0 && (c != C_MIX || *f[col[c]]))
			snprintf(r->key + strlen(r->key),
				 sizeof(r->key) - strlen(r->key), "%s%s%s",
				 c ? "," : "", c == C_MIX ? "mix=" : "",
				 f[col[c]]);
	if (number(f[col[C_MEDIAN]], &r->median) ||
	    number(f[col[C_MIN]], &r->min) || number(f[col[C_MAX]], &r->max) ||
	    r->min > r->median || r->median > r->max) {
		fprintf(stderr, "scalekit bench: %s:%d: median, min and max "
				"must be numbers with min <= median <= max\n",
			cf->path, lineno);
		return -1;
	}
	cf->n++;
	return 0;
}

/* Read a CSV file of `scalekit bench --csv`: 0, or -1 (message printed). */
static int load(struct cmp_file *cf)
{
	FILE *f = fopen(cf->path, "r");
	char line[CMP_LINE];
	int col[C_COUNT], lineno = 0, ret = 0, ncols = 0;

	if (!f) {
		fprintf(stderr, "scalekit bench: cannot read '%s': %s\n",
			cf->path, strerror(errno));
		return -1;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fprintf(stderr, "scalekit bench: %s:%d: line longer "
					"than %d characters\n",
				cf->path, lineno, CMP_LINE - 2);
			ret = -1;
		} else if (line[0] == '#' && !ncols) {
			continue; /* the environment header */
		} else if (!ncols) {
			ret = header(cf, line, lineno, col);
			ncols = 1;
		} else {
			ret = data_line(cf, line, lineno, col);
		}
	}
	if (!ret && ferror(f)) {
		fprintf(stderr, "scalekit bench: cannot read '%s': %s\n",
			cf->path, strerror(errno));
		ret = -1;
	}
	if (!ret && !ncols) {
		fprintf(stderr, "scalekit bench: %s: empty file\n", cf->path);
		ret = -1;
	}
	fclose(f);
	return ret;
}

/*
 * Which way is better for a unit: -1 lower (times), 1 higher (rates),
 * 0 neither (ratios, whose direction depends on the row, and counts).
 */
static int direction(const char *key)
{
	const char *unit = key;
	int c;

	for (c = 0; c < C_UNIT && unit; c++) {
		unit = strchr(unit, ',');
		unit = unit ? unit + 1 : NULL;
	}
	return unit ? sk_bench_unit_direction(unit) : 0;
}

/* The verdict of one shared row: "" when the spreads overlap. */
static const char *verdict(const struct cmp_row *o, const struct cmp_row *n)
{
	int up = n->min > o->max, down = n->max < o->min,
	    dir = direction(o->key);

	if (!up && !down)
		return "";
	if (!dir)
		return up ? "CHANGED (up)" : "CHANGED (down)";
	return (up ? dir > 0 : dir < 0) ? "BETTER" : "WORSE";
}

static const struct cmp_row *find(struct cmp_file *cf, const char *key)
{
	int i;

	for (i = 0; i < cf->n; i++)
		if (!cf->rows[i].used && strcmp(cf->rows[i].key, key) == 0) {
			cf->rows[i].used = 1;
			return &cf->rows[i];
		}
	return NULL;
}

/* Print the shared rows and the counts: the exit status. */
static int report(struct cmp_file *o, struct cmp_file *n)
{
	int i, shared = 0, better = 0, worse = 0, changed = 0;

	printf("compare: old %s, new %s\n", o->path, n->path);
	printf("%-60s %12s %12s %8s  %s\n", "scenario,variant,threads,impl,unit",
	       "old median", "new median", "new/old", "beyond the spread");
	for (i = 0; i < o->n; i++) {
		const struct cmp_row *r = &o->rows[i], *m = find(n, r->key);
		const char *v;

		if (!m)
			continue;
		shared++;
		v = verdict(r, m);
		better += !strcmp(v, "BETTER");
		worse += !strcmp(v, "WORSE");
		changed += !strncmp(v, "CHANGED", 7);
		printf("%-60s %12.4g %12.4g %8.3f  %s\n", r->key, r->median,
		       m->median, r->median ? m->median / r->median : NAN,
		       v);
	}
	printf("\n%d rows in both files (%d only in old, %d only in new): %d "
	       "better, %d worse, %d ratios changed beyond the spread\n",
	       shared, o->n - shared, n->n - shared, better, worse, changed);
	if (!shared) {
		fprintf(stderr, "scalekit bench: %s and %s share no row\n",
			o->path, n->path);
		return 1;
	}
	return fflush(stdout) ? 1 : 0;
}

int sk_bench_compare(const char *old_path, const char *new_path)
{
	struct cmp_file o = { .path = old_path }, n = { .path = new_path };
	int ret = 1;

	if (!load(&o) && !load(&n))
		ret = report(&o, &n);
	free(o.rows);
	free(n.rows);
	return ret;
}
