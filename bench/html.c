// SPDX-License-Identifier: MIT
/*
 * results/index.html: one self-contained page (no network, no external
 * file: the charts are inline SVG drawn here) with the environment, the
 * targets as a chart and a table, and every figure grouped by scenario,
 * the best implementation of each line marked.
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s with HTML's special characters escaped. */
static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/*
 * How far the ratio is on the good side of its limit (>= 1: met), the
 * bar's length in the chart: limit/ratio for "at most", ratio/limit for
 * "at least"; clipped to the chart's 1/20..20.
 */
static double score(const struct sk_bench_target *t, double ratio)
{
	double s = t->at_most ? t->limit / ratio : ratio / t->limit;

	if (!(s > 0.05))
		return 0.05;
	return s > 20 ? 20 : s;
}

/* The targets as horizontal bars against each one's own limit. */
static void targets_svg(FILE *f, const struct sk_bench_results *res)
{
	const int lw = 520, cw = 420, rh = 20, top = 30;
	int i, y = top, n = 0;

	for (i = 0; i < res->ntargets; i++)
		n += res->targets[i].ratio.n > 0;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		   "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		lw + cw + 20, top + rh * n + 30);
	/* log axis: x = lw + cw/2 * (1 + log20(score)) */
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		   "stroke=\"black\" stroke-dasharray=\"4\"/>\n",
		lw + cw / 2, top - 10, lw + cw / 2, top + rh * n);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">target"
		   "</text><text x=\"%d\" y=\"%d\">missed &#8592;</text>"
		   "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">&#8594; met"
		   "</text>\n",
		lw + cw / 2, top - 14, lw, top - 14, lw + cw, top - 14);
	for (i = 0; i < res->ntargets; i++) {
		const struct sk_bench_target *t = &res->targets[i];
		double s, x;
		int pass;

		if (!t->ratio.n)
			continue;
		s = score(t, t->ratio.median);
		pass = s >= 1;
		x = lw + cw / 2.0 * (1 + log(s) / log(20));
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">",
			lw - 6, y + 14);
		esc(f, t->what);
		fprintf(f, " %s %.3g: %.3g</text>\n", t->at_most ? "&lt;=" : "&gt;=",
			t->limit, t->ratio.median);
		fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
			   "fill=\"%s\"><title>%s</title></rect>\n",
			pass ? lw + cw / 2.0 : x, y + 3,
			fabs(x - (lw + cw / 2.0)) + 1, rh - 6,
			pass ? "#2e8b57" : "#c0392b", sk_bench_target_verdict(t));
		y += rh;
	}
	fputs("</svg>\n", f);
}

static void targets_table(FILE *f, const struct sk_bench_results *res)
{
	int i;

	fputs("<table><tr><th>target</th><th>limit</th><th>ratio: median "
	      "[min..max]</th><th>verdict</th></tr>\n", f);
	for (i = 0; i < res->ntargets; i++) {
		const struct sk_bench_target *t = &res->targets[i];
		const char *v = sk_bench_target_verdict(t);

		fputs("<tr><td>", f);
		esc(f, t->what);
		fprintf(f, "</td><td>%s %.3g</td><td>",
			t->at_most ? "&lt;=" : "&gt;=", t->limit);
		if (t->ratio.n)
			fprintf(f, "%.3g [%.3g..%.3g]", t->ratio.median,
				t->ratio.min, t->ratio.max);
		else
			fputs("n/a", f);
		fprintf(f, "</td><td class=\"%s\">%s", v, v);
		if (!t->ratio.n && t->na) {
			fputs(" (", f);
			esc(f, t->na);
			fputs(")", f);
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void row_html(FILE *f, const struct sk_bench_row *row)
{
	int i, best = sk_bench_row_best(row);

	fputs("<tr><td>", f);
	esc(f, row->variant);
	fprintf(f, "</td><td>%d</td><td>", row->threads);
	esc(f, row->unit);
	fputs("</td><td>", f);
	for (i = 0; i < row->nimpl; i++) {
		struct sk_bench_stat s = sk_bench_row_stat(row, i);

		fputs(i ? "; " : "", f);
		fputs(i == best ? "<b>" : "", f);
		esc(f, row->impl[i]->name);
		if (s.n)
			fprintf(f, " %.4g", s.median);
		else
			fputs(" n/a", f);
		fputs(i == best ? "</b>" : "", f);
	}
	fputs("</td></tr>\n", f);
}

/* Same scenario, variant and unit: one series of a chart over threads. */
static int same_series(const struct sk_bench_row *a,
		       const struct sk_bench_row *b)
{
	return !strcmp(a->scenario, b->scenario) &&
	       !strcmp(a->variant, b->variant) && !strcmp(a->unit, b->unit) &&
	       a->nimpl == b->nimpl;
}

/*
 * The rows r[0..n) (one per thread count, same implementations) as a line
 * chart: x = threads (log2), y = the figure (log), one line per
 * implementation, labelled at its last point.
 */
static void series_svg(FILE *f, const struct sk_bench_row *const *r, int n)
{
	static const char *const col[] = { "#1f77b4", "#d62728", "#2ca02c",
					   "#9467bd", "#ff7f0e", "#8c564b",
					   "#e377c2", "#7f7f7f" };
	const int W = 520, H = 220, L = 60, R = 150, T = 20, B = 30;
	double lo = INFINITY, hi = 0, tmax = r[n - 1]->threads;
	int i, k;

	for (k = 0; k < n; k++)
		for (i = 0; i < r[k]->nimpl; i++) {
			struct sk_bench_stat s = sk_bench_row_stat(r[k], i);

			if (s.n && s.median > 0) {
				lo = fmin(lo, s.median);
				hi = fmax(hi, s.median);
			}
		}
	if (!(hi > 0) || tmax <= r[0]->threads)
		return;
	if (hi <= lo)
		hi = lo * 2;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		   "height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">"
		   "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		   "fill=\"none\" stroke=\"#999\"/>\n",
		W, H, L, T, W - L - R, H - T - B);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g</text>"
		   "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g</text>"
		   "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">threads "
		   "%d..%d (log scale both ways)</text>\n",
		L - 4, T + 10, hi, L - 4, H - B, lo, (W - R + L) / 2, H - 8,
		r[0]->threads, r[n - 1]->threads);
#define X(t) (L + (W - L - R) * log((double)(t) / r[0]->threads) / \
			  log(tmax / r[0]->threads))
#define Y(v) (H - B - (H - T - B) * log((v) / lo) / log(hi / lo))
	for (i = 0; i < r[0]->nimpl; i++) {
		double lx = -1, ly = 0;

		fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\" "
			   "stroke=\"%s\" points=\"", col[i % 8]);
		for (k = 0; k < n; k++) {
			struct sk_bench_stat s = sk_bench_row_stat(r[k], i);

			if (!s.n || !(s.median > 0))
				continue;
			lx = X(r[k]->threads);
			ly = Y(s.median);
			fprintf(f, "%.1f,%.1f ", lx, ly);
		}
		fputs("\"/>\n", f);
		if (lx >= 0) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">",
				lx + 4, ly + 4, col[i % 8]);
			esc(f, r[0]->impl[i]->name);
			fputs("</text>\n", f);
		}
	}
#undef X
#undef Y
	fputs("</svg>\n", f);
}

/*
 * A chart for every scenario/variant/unit measured at two or more thread
 * counts (read scaling, hash lookups, callbacks, lists, ...).
 */
static void charts(FILE *f, const struct sk_bench_results *res)
{
	const struct sk_bench_row *series[16];
	int r, k, n;

	for (r = 0; r < res->nrows; r++) {
		for (k = 0; k < r; k++)
			if (same_series(res->rows[k], res->rows[r]))
				break;
		if (k < r)
			continue; /* drawn with its first row */
		if (res->rows[r]->mix)
			continue; /* the sweep's: one primitive a row */
		for (n = 0, k = r; k < res->nrows && n < 16; k++)
			if (same_series(res->rows[k], res->rows[r]) &&
			    (!n || res->rows[k]->threads > series[n - 1]->threads))
				series[n++] = res->rows[k];
		if (n < 2)
			continue;
		fputs("<div class=\"chart\"><h4>", f);
		esc(f, res->rows[r]->scenario);
		fputs(" / ", f);
		esc(f, res->rows[r]->variant);
		fputs(": ", f);
		esc(f, res->rows[r]->unit);
		fputs(" against threads</h4>\n", f);
		series_svg(f, series, n);
		fputs("</div>\n", f);
	}
}

/* Every figure, one table per scenario (rows keep the run's order). */
static void figures(FILE *f, const struct sk_bench_results *res)
{
	int r;

	for (r = 0; r < res->nrows; r++) {
		const struct sk_bench_row *row = res->rows[r];

		if (!r || strcmp(row->scenario, res->rows[r - 1]->scenario)) {
			fputs(r ? "</table>\n<h3>" : "<h3>", f);
			esc(f, row->scenario);
			fputs("</h3>\n<table><tr><th>variant</th><th>threads"
			      "</th><th>unit</th><th>median per implementation "
			      "(best in bold)</th></tr>\n", f);
		}
		row_html(f, row);
	}
	if (res->nrows)
		fputs("</table>\n", f);
}

/* The environment header's lines, escaped. */
static void env_html(FILE *f, const struct sk_bench_env *env)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	sk_bench_env_print(m, "", env);
	if (fclose(m) == 0)
		esc(f, buf);
	free(buf);
}

int sk_bench_write_html(FILE *f, const struct sk_bench_results *res,
			const struct sk_bench_env *env)
{
	int i, met = 0, measured = 0;

	for (i = 0; i < res->ntargets; i++) {
		measured += res->targets[i].ratio.n > 0;
		met += !strcmp(sk_bench_target_verdict(&res->targets[i]), "PASS");
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<title>scalekit bench</title>\n<style>body{font-family:sans-serif;"
	      "margin:2em}table{border-collapse:collapse;margin:1em 0}"
	      "td,th{border:1px solid #bbb;padding:2px 8px;text-align:left}"
	      ".chart{display:inline-block;vertical-align:top;margin-right:1em}"
	      ".PASS{color:#2e8b57;font-weight:bold}.MISS{color:#c0392b;"
	      "font-weight:bold}.SKIP{color:#777}</style></head><body>\n"
	      "<h1>scalekit bench</h1>\n<h2>Environment</h2>\n<pre>", f);
	env_html(f, env);
	fprintf(f, "</pre>\n<h2>Targets: %d of %d measured met</h2>\n", met,
		measured);
	fputs("<p>Each bar is drawn against its own target: its length is how "
	      "far the ratio is on the good side of the limit (limit/ratio for "
	      "&lt;=, ratio/limit for &gt;=, log scale); right of the dashed "
	      "line met (green), left missed (red).</p>\n", f);
	targets_svg(f, res);
	targets_table(f, res);
	sk_bench_sweep_chooser_html(f, res);
	fputs("<h2>Scaling</h2>\n", f);
	charts(f, res);
	/* scripts/plot.sh puts its gnuplot charts here, inline. */
	fputs("<!-- gnuplot charts -->\n<h2>Figures</h2>\n", f);
	figures(f, res);
	fputs("</body></html>\n", f);
	return ferror(f) ? -1 : 0;
}
