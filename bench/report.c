/* SPDX-License-Identifier: MIT */
/*
 * The report: comparison tables on stdout, the targets section and the
 * CSV file.  Consecutive rows with the same scenario, heading, unit and
 * implementations form one table; every figure is "median [min..max]"
 * over repetitions and every ratio is the median of per-repetition
 * ratios.
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CELL 64

void sk_bench_fmt_num(char *buf, size_t len, double v)
{
	double a = fabs(v);

	if (!isfinite(v))
		snprintf(buf, len, "n/a");
	else if (a < 10)
		snprintf(buf, len, "%.2f", v);
	else if (a < 100)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
}

static void fmt_stat(char *buf, size_t len, struct sk_bench_stat s)
{
	char m[16], lo[16], hi[16];

	if (!s.n) {
		snprintf(buf, len, "n/a");
		return;
	}
	sk_bench_fmt_num(m, sizeof(m), s.median);
	sk_bench_fmt_num(lo, sizeof(lo), s.min);
	sk_bench_fmt_num(hi, sizeof(hi), s.max);
	snprintf(buf, len, "%s [%s..%s]", m, lo, hi);
}

/*
 * Consecutive rows share a table when they share a heading: rows of one
 * variant do, and so do variants that a scenario titles together.
 */
static int same_group(const struct sk_bench_row *a,
		      const struct sk_bench_row *b)
{
	int i;

	if (strcmp(a->scenario, b->scenario) != 0 ||
	    strcmp(a->title, b->title) != 0 || strcmp(a->unit, b->unit) != 0 ||
	    a->nimpl != b->nimpl || a->ratios != b->ratios)
		return 0;
	for (i = 0; i < a->nimpl; i++)
		if (a->impl[i] != b->impl[i])
			return 0;
	return 1;
}

/* Number of columns of a group's table and their cells. */
#define FIXED_COLS 3
#define MAX_COLS (FIXED_COLS + 2 * SK_BENCH_MAX_IMPL)

static int group_cols(const struct sk_bench_row *row)
{
	return FIXED_COLS + row->nimpl + (row->ratios ? row->nimpl - 1 : 0);
}

static void header_cells(const struct sk_bench_row *row,
			 char cell[MAX_COLS][CELL])
{
	int i, k = 0;

	snprintf(cell[k++], CELL, "scenario");
	snprintf(cell[k++], CELL, "variant");
	snprintf(cell[k++], CELL, "threads");
	for (i = 0; i < row->nimpl; i++)
		snprintf(cell[k++], CELL, "%s", row->impl[i]->name);
	if (row->ratios)
		for (i = 1; i < row->nimpl; i++)
			snprintf(cell[k++], CELL, "%s/%s",
				 row->ratio_prefix ? row->ratio_prefix : "sk",
				 row->impl[i]->name);
}

int sk_bench_row_best(const struct sk_bench_row *row)
{
	int dir = sk_bench_unit_direction(row->unit), i, best = -1, n = 0;
	double bv = 0;

	for (i = 0; dir && i < row->nimpl; i++) {
		struct sk_bench_stat s = sk_bench_row_stat(row, i);

		if (!s.n)
			continue;
		n++;
		if (best < 0 || (dir > 0 ? s.median > bv : s.median < bv)) {
			best = i;
			bv = s.median;
		}
	}
	return n > 1 ? best : -1;
}

static void row_cells(const struct sk_bench_row *row, char cell[MAX_COLS][CELL])
{
	int i, k = 0, best = sk_bench_row_best(row);

	snprintf(cell[k++], CELL, "%s", row->scenario);
	snprintf(cell[k++], CELL, "%s", row->variant);
	snprintf(cell[k++], CELL, "%d", row->threads);
	for (i = 0; i < row->nimpl; i++) {
		fmt_stat(cell[k], CELL, sk_bench_row_stat(row, i));
		/* The best figure of the row, by the unit's direction. */
		if (i == best && strlen(cell[k]) + 1 < CELL)
			strcat(cell[k], "*");
		k++;
	}
	if (row->ratios) {
		for (i = 1; i < row->nimpl; i++) {
			struct sk_bench_stat s =
				sk_bench_ratio_stat(row, 0, row, i);

			sk_bench_fmt_num(cell[k++], CELL, s.n ? s.median : NAN);
		}
	}
}

static void print_cells(FILE *f, char cell[MAX_COLS][CELL], const int *width,
			int ncols, int ratio_from)
{
	int k;

	for (k = 0; k < ncols; k++) {
		if (k == ratio_from)
			fprintf(f, " |");
		/* Text columns left-aligned, figures right-aligned. */
		if (k < 2)
			fprintf(f, "%s%-*s", k ? "  " : "", width[k], cell[k]);
		else
			fprintf(f, "  %*s", width[k], cell[k]);
	}
	fputc('\n', f);
}

static void print_group(FILE *f, struct sk_bench_row *const *rows, int n)
{
	static char cell[MAX_COLS][CELL];
	int width[MAX_COLS] = { 0 };
	int ncols = group_cols(rows[0]), r, k, total = 0;
	int ratio_from = rows[0]->ratios ? FIXED_COLS + rows[0]->nimpl : -1;

	header_cells(rows[0], cell);
	for (k = 0; k < ncols; k++)
		width[k] = (int)strlen(cell[k]);
	for (r = 0; r < n; r++) {
		row_cells(rows[r], cell);
		for (k = 0; k < ncols; k++)
			if ((int)strlen(cell[k]) > width[k])
				width[k] = (int)strlen(cell[k]);
	}
	for (k = 0; k < ncols; k++)
		total += width[k] + 2;
	fprintf(f, "%s\n", rows[0]->title);
	header_cells(rows[0], cell);
	print_cells(f, cell, width, ncols, ratio_from);
	for (k = 0; k < total + (ratio_from >= 0 ? 2 : 0) - 2; k++)
		fputc('-', f);
	fputc('\n', f);
	for (r = 0; r < n; r++) {
		row_cells(rows[r], cell);
		print_cells(f, cell, width, ncols, ratio_from);
	}
	fputc('\n', f);
}

void sk_bench_print_table(FILE *f, const struct sk_bench_results *res)
{
	const char *missing[SK_BENCH_MAX_IMPL * 4];
	int r = 0, end, i, j, nmissing = 0;

	while (r < res->nrows) {
		/* The sweep's rows have tables of their own. */
		if (res->rows[r]->mix) {
			r++;
			continue;
		}
		for (end = r + 1; end < res->nrows &&
				  same_group(res->rows[r], res->rows[end]);
		     end++)
			;
		print_group(f, res->rows + r, end - r);
		r = end;
	}
	sk_bench_sweep_print(f, res);
	if (res->nrows)
		fprintf(f,
			"Figures: median [min..max] over %d repetitions. "
			"sk/<peer>: the scalekit figure\ndivided by the "
			"peer's, median of per-repetition ratios (every "
			"implementation\nruns once per repetition, back to "
			"back); exp/, poll/, srcu/, compat/: the same for\nthe "
			"table's first column. n/a: not measured. *: the "
			"best figure of its row\n(lowest time or highest "
			"rate).\n",
			res->rows[0]->nrep);
	/* Say once why each missing implementation is missing. */
	for (r = 0; r < res->nrows; r++) {
		for (i = 0; i < res->rows[r]->nimpl; i++) {
			const char *why = res->rows[r]->na[i];

			if (!why)
				continue;
			for (j = 0; j < nmissing; j++)
				if (strcmp(missing[j], why) == 0)
					break;
			if (j < nmissing ||
			    nmissing ==
				    (int)(sizeof(missing) / sizeof(missing[0])))
				continue;
			missing[nmissing++] = why;
			fprintf(f, "n/a %s: %s\n", res->rows[r]->impl[i]->name,
				why);
		}
	}
	if (res->nnotes)
		fprintf(f, "\nnotes\n");
	for (i = 0; i < res->nnotes; i++)
		fprintf(f, "  %s\n", res->notes[i]);
}

int sk_bench_unit_direction(const char *unit)
{
	if (unit[0] == 'M' && strstr(unit, "/s"))
		return 1;
	if (!strncmp(unit, "ns", 2) || !strncmp(unit, "us", 2) ||
	    !strncmp(unit, "ms", 2))
		return -1;
	return 0;
}

const char *sk_bench_target_verdict(const struct sk_bench_target *t)
{
	if (!t->ratio.n)
		return "SKIP";
	if (t->at_most ? t->ratio.median <= t->limit
		       : t->ratio.median >= t->limit)
		return "PASS";
	return "MISS";
}

void sk_bench_print_targets(FILE *f, const struct sk_bench_results *res)
{
	char fig[CELL], lim[24];
	int i, w = 0;

	if (!res->ntargets)
		return;
	for (i = 0; i < res->ntargets; i++)
		if ((int)strlen(res->targets[i].what) > w)
			w = (int)strlen(res->targets[i].what);
	fprintf(f, "\ntargets (informational; the exit status does not "
		   "depend on them)\n");
	for (i = 0; i < res->ntargets; i++) {
		const struct sk_bench_target *t = &res->targets[i];
		const char *verdict;

		sk_bench_fmt_num(lim, sizeof(lim), t->limit);
		if (!t->ratio.n) {
			fprintf(f, "  %-*s  %s %-5s  %-22s  SKIP (%s)\n", w,
				t->what, t->at_most ? "<=" : ">=", lim, "n/a",
				t->na ? t->na : "not measured");
			continue;
		}
		fmt_stat(fig, sizeof(fig), t->ratio);
		verdict = sk_bench_target_verdict(t);
		fprintf(f, "  %-*s  %s %-5s  %-22s  %s\n", w, t->what,
			t->at_most ? "<=" : ">=", lim, fig, verdict);
	}
}

/*
 * tail: the target columns (",limit,direction") or ",," for a figure;
 * mix: the sweep's percent reads, 0 (an empty column) elsewhere.
 */
static void csv_line(FILE *f, const char *scenario, const char *variant,
		     int threads, const char *impl, struct sk_bench_stat s,
		     const char *unit, const char *tail, int mix)
{
	fprintf(f, "%s,%s,%d,%s,%.6g,%.6g,%.6g,%s,%d%s,", scenario, variant,
		threads, impl, s.median, s.min, s.max, unit, s.n, tail);
	if (mix)
		fprintf(f, "%d", mix);
	fputc('\n', f);
}

int sk_bench_write_csv(FILE *f, const struct sk_bench_results *res)
{
	char name[2 * CELL], tail[48];
	int r, i;

	fprintf(f, "scenario,variant,threads,impl,median,min,max,unit,reps,"
		   "limit,direction,mix\n");
	for (r = 0; r < res->nrows; r++) {
		const struct sk_bench_row *row = res->rows[r];

		for (i = 0; i < row->nimpl; i++) {
			struct sk_bench_stat s = sk_bench_row_stat(row, i);

			if (s.n)
				csv_line(f, row->scenario, row->variant,
					 row->threads, row->impl[i]->name, s,
					 row->unit, ",,", row->mix);
		}
		if (!row->ratios)
			continue;
		for (i = 1; i < row->nimpl; i++) {
			struct sk_bench_stat s =
				sk_bench_ratio_stat(row, 0, row, i);

			snprintf(name, sizeof(name), "%s/%s",
				 row->impl[0]->name, row->impl[i]->name);
			if (s.n)
				csv_line(f, row->scenario, row->variant,
					 row->threads, name, s, "ratio", ",,",
					 row->mix);
		}
	}
	for (i = 0; i < res->ntargets; i++) {
		const struct sk_bench_target *t = &res->targets[i];

		snprintf(tail, sizeof(tail), ",%.6g,%s", t->limit,
			 t->at_most ? "at most" : "at least");
		if (t->ratio.n)
			csv_line(f, "target", t->id, t->threads, t->ratio_name,
				 t->ratio, "ratio", tail, 0);
	}
	return ferror(f) ? -1 : 0;
}
