/* SPDX-License-Identifier: MIT */
/* percore report: building charts and drawing them as SVG. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "svg.h"

/* Colour-blind-safe categorical palette (Tableau 10 order). */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

#define INK     "#1f2933"
#define GRID    "#e4e7eb"
#define AXIS    "#9aa5b1"

struct pc_chart *pc_chart_new(enum pc_chart_kind kind, const char *title,
			      const char *xlabel, const char *ylabel)
{
	struct pc_chart *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->kind = kind;
	c->ref = NAN;
	c->title = strdup(title ? title : "");
	c->xlabel = strdup(xlabel ? xlabel : "");
	c->ylabel = strdup(ylabel ? ylabel : "");
	if (!c->title || !c->xlabel || !c->ylabel) {
		pc_chart_free(c);
		return NULL;
	}
	return c;
}

void pc_chart_free(struct pc_chart *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nseries; i++) {
		free(c->series[i].name);
		free(c->series[i].x);
		free(c->series[i].y);
	}
	for (size_t i = 0; i < c->nbars; i++)
		free(c->bars[i].label);
	free(c->series);
	free(c->bars);
	free(c->title);
	free(c->xlabel);
	free(c->ylabel);
	free(c->ref_label);
	free(c);
}

int pc_chart_series(struct pc_chart *c, const char *name, unsigned color, bool dashed)
{
	struct pc_series *ns;

	if (c->failed || !(ns = realloc(c->series, (c->nseries + 1) * sizeof(*ns)))) {
		c->failed = true;
		return -1;
	}
	c->series = ns;
	ns = &c->series[c->nseries];
	*ns = (struct pc_series){ .name = strdup(name), .color = color, .dashed = dashed };
	if (!ns->name) {
		c->failed = true;
		return -1;
	}
	return (int)c->nseries++;
}

void pc_chart_point(struct pc_chart *c, int series, double x, double y)
{
	struct pc_series *s;
	double *nx, *ny;

	if (c->failed || series < 0 || (size_t)series >= c->nseries)
		return;
	s = &c->series[series];
	nx = realloc(s->x, (s->n + 1) * sizeof(*nx));
	if (nx)
		s->x = nx;
	ny = nx ? realloc(s->y, (s->n + 1) * sizeof(*ny)) : NULL;
	if (!ny) {
		c->failed = true;
		return;
	}
	s->y = ny;
	s->x[s->n] = x;
	s->y[s->n++] = y;
}

void pc_chart_bar(struct pc_chart *c, const char *label, double value, enum pc_mark mark)
{
	struct pc_bar *nb;

	if (c->failed || !(nb = realloc(c->bars, (c->nbars + 1) * sizeof(*nb)))) {
		c->failed = true;
		return;
	}
	c->bars = nb;
	nb[c->nbars] = (struct pc_bar){ .label = strdup(label), .value = value, .mark = mark };
	if (!nb[c->nbars].label) {
		c->failed = true;
		return;
	}
	c->nbars++;
}

void pc_chart_ref(struct pc_chart *c, double ref, const char *label)
{
	free(c->ref_label);
	c->ref = ref;
	if (!(c->ref_label = strdup(label ? label : "")))
		c->failed = true;
}

void pc_xml_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}

/* The smallest 1, 2, 2.5 or 5 times a power of ten at or above v, and how
 * many equal steps divide it into round tick values. */
static double nice_ceil(double v, int *steps)
{
	double e, f;

	if (!(v > 0)) {
		*steps = 5;
		return 1;
	}
	e = pow(10, floor(log10(v)));
	f = v / e;
	if (f <= 1.0 + 1e-9) {
		*steps = 5;
		return e;
	}
	if (f <= 2) {
		*steps = 4;
		return 2 * e;
	}
	if (f <= 2.5) {
		*steps = 5;
		return 2.5 * e;
	}
	*steps = 5;
	return f <= 5 ? 5 * e : 10 * e;
}

static void svg_open(FILE *out, const struct pc_chart *c, int w, int h)
{
	fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
		     "role=\"img\" aria-label=\"", w, h, w, h);
	pc_xml_escape(out, c->title);
	fprintf(out, "\" font-size=\"12\" fill=\"" INK "\">\n");
	fprintf(out, "<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"600\">", 12);
	pc_xml_escape(out, c->title);
	fputs("</text>\n", out);
}

/* ---- line chart ------------------------------------------------------- */

enum { LW = 780, LH = 380, LML = 80, LMR = 200, LMT = 40, LMB = 54 };

struct frame {
	double x0, x1, y1;      /* data range: x0..x1, 0..y1 */
	double px0, px1, py0, py1;
};

static double fx(const struct frame *f, double x)
{
	return f->px0 + (x - f->x0) / (f->x1 - f->x0) * (f->px1 - f->px0);
}

static double fy(const struct frame *f, double y)
{
	return f->py0 - y / f->y1 * (f->py0 - f->py1);
}

static void line_axes(FILE *out, const struct pc_chart *c, const struct frame *f, int ysteps)
{
	double span = f->x1 - f->x0;

	for (int i = 0; i <= ysteps; i++) {
		double v = f->y1 * i / ysteps, y = fy(f, v);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
			f->px0, y, f->px1, y, i ? GRID : AXIS);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			f->px0 - 8, y + 4, i ? pc_fmt_si(v).s : "0");
	}
	/* whole-number ticks (core counts), at most about 12 of them */
	double step = span <= 12 ? 1 : ceil(span / 12);
	for (double x = ceil(f->x0); x <= f->x1 + 1e-9; x += step) {
		double px = fx(f, x);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
			px, f->py0, px, f->py0 + 5, AXIS);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
			px, f->py0 + 19, x);
	}
	fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", (f->px0 + f->px1) / 2, LH - 10);
	pc_xml_escape(out, c->xlabel);
	fprintf(out, "</text>\n<text transform=\"translate(16 %.1f) rotate(-90)\" "
		     "text-anchor=\"middle\">", (f->py0 + f->py1) / 2);
	pc_xml_escape(out, c->ylabel);
	fputs("</text>\n", out);
}

static void line_series(FILE *out, const struct pc_chart *c, const struct frame *f, size_t i)
{
	const struct pc_series *s = &c->series[i];
	const char *col = palette[s->color % NPALETTE];

	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"%s points=\"",
		col, s->dashed ? " stroke-dasharray=\"7 5\"" : "");
	for (size_t k = 0; k < s->n; k++)
		fprintf(out, "%s%.1f,%.1f", k ? " " : "", fx(f, s->x[k]), fy(f, s->y[k]));
	fputs("\"/>\n", out);
	for (size_t k = 0; k < s->n; k++) {
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"#fff\" "
			     "stroke-width=\"1.5\"><title>", fx(f, s->x[k]), fy(f, s->y[k]),
			s->dashed ? "#fff" : col);
		pc_xml_escape(out, s->name);
		fprintf(out, ": %g, %s</title></circle>\n", s->x[k], pc_fmt_si(s->y[k]).s);
		if (s->dashed) /* hollow markers for the dashed lines */
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"none\" "
				     "stroke=\"%s\" stroke-width=\"1.5\"/>\n",
				fx(f, s->x[k]), fy(f, s->y[k]), col);
	}
	/* legend entry */
	double ly = LMT + 8 + 20.0 * (double)i, lx = LW - LMR + 18;
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		     "stroke-width=\"2.5\"%s/>\n<text x=\"%.1f\" y=\"%.1f\">", lx, ly, lx + 26, ly,
		col, s->dashed ? " stroke-dasharray=\"7 5\"" : "", lx + 32, ly + 4);
	pc_xml_escape(out, s->name);
	fputs("</text>\n", out);
}

static void line_chart(FILE *out, const struct pc_chart *c)
{
	struct frame f = { .x0 = INFINITY, .x1 = -INFINITY, .y1 = 0,
			   .px0 = LML, .px1 = LW - LMR, .py0 = LH - LMB, .py1 = LMT };
	int ysteps;

	for (size_t i = 0; i < c->nseries; i++)
		for (size_t k = 0; k < c->series[i].n; k++) {
			f.x0 = fmin(f.x0, c->series[i].x[k]);
			f.x1 = fmax(f.x1, c->series[i].x[k]);
			f.y1 = fmax(f.y1, c->series[i].y[k]);
		}
	if (!isfinite(f.x0)) {
		f.x0 = 0;
		f.x1 = 1;
	}
	/* a little air on each side so the end points are not on the frame */
	double pad = f.x1 > f.x0 ? (f.x1 - f.x0) * 0.06 : 0.5;
	f.x0 -= pad;
	f.x1 += pad;
	f.y1 = nice_ceil(f.y1 * 1.05, &ysteps);
	svg_open(out, c, LW, LH);
	line_axes(out, c, &f, ysteps);
	for (size_t i = 0; i < c->nseries; i++)
		line_series(out, c, &f, i);
	fputs("</svg>\n", out);
}

/* ---- bar chart -------------------------------------------------------- */

enum { BW = 780, BML = 310, BMR = 80, BMT = 40, BMB = 40, BROW = 24 };

static const char *mark_colour(enum pc_mark m)
{
	switch (m) {
	case PC_MARK_GOOD: return "#59a14f";
	case PC_MARK_BAD:  return "#e15759";
	case PC_MARK_WARN: return "#f0a202";
	default:           return "#4e79a7";
	}
}

struct bscale {
	bool log;
	double lo, hi;          /* in log2 units when log */
	double px0, px1;
};

static double bx(const struct bscale *s, double v)
{
	double t = s->log ? log2(v) : v;

	t = fmin(fmax(t, s->lo), s->hi);
	return s->px0 + (t - s->lo) / (s->hi - s->lo) * (s->px1 - s->px0);
}

static struct pc_str bar_value(const struct pc_chart *c, double v)
{
	return c->barfmt == PC_BARFMT_RATIO ? pc_fmt_ratio(v) : pc_fmt_pct(v);
}

static void bar_scale(const struct pc_chart *c, struct bscale *s, int *steps)
{
	bool log = c->barfmt == PC_BARFMT_RATIO;
	double lo = log ? 1 : 0, hi = log ? 1 : 0; /* ratios always show 1x */

	s->px0 = BML;
	s->px1 = BW - BMR;
	s->log = log;
	for (size_t i = 0; i < c->nbars; i++)
		if (isfinite(c->bars[i].value) && c->bars[i].value > 0) {
			lo = fmin(lo, c->bars[i].value);
			hi = fmax(hi, c->bars[i].value);
		}
	if (log) {
		s->lo = floor(log2(fmin(lo, 0.5)));
		s->hi = ceil(log2(fmax(hi * 1.1, 2)));
		*steps = (int)(s->hi - s->lo);
	} else {
		s->lo = 0;
		s->hi = nice_ceil(fmax(hi, isfinite(c->ref) ? c->ref : 0) * 1.1, steps);
	}
}

static void bar_axis(FILE *out, const struct pc_chart *c, const struct bscale *s, int steps, int h)
{
	int every = steps > 10 ? 2 : 1;

	for (int i = 0; i <= steps; i += every) {
		double t = s->lo + (s->hi - s->lo) * i / steps;
		double v = s->log ? exp2(t) : t, x = bx(s, v);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>\n",
			x, BMT, x, h - BMB, GRID);
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x, h - BMB + 16);
		if (s->log)
			fprintf(out, "%gx", v);
		else
			fputs(pc_fmt_pct(v).s, out);
		fputs("</text>\n", out);
	}
	if (isfinite(c->ref)) {
		double x = bx(s, c->ref);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"" INK "\" "
			     "stroke-dasharray=\"4 3\"/>\n<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" "
			     "font-size=\"11\">", x, BMT - 4, x, h - BMB, x, BMT - 8 < 28 ? 34 : BMT - 8);
		pc_xml_escape(out, c->ref_label ? c->ref_label : "");
		fputs("</text>\n", out);
	}
	fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", (s->px0 + s->px1) / 2, h - 8);
	pc_xml_escape(out, c->xlabel);
	fputs("</text>\n", out);
}

static void bar_row(FILE *out, const struct pc_chart *c, const struct bscale *s, size_t i)
{
	const struct pc_bar *b = &c->bars[i];
	double y = BMT + 4 + (double)i * BROW, base = s->log ? bx(s, 1) : bx(s, 0);
	size_t len = strlen(b->label);

	fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-family=\"ui-monospace,"
		     "monospace\" font-size=\"11.5\"><title>", BML - 8, y + 15);
	pc_xml_escape(out, b->label);
	fputs("</title>", out);
	if (len > 44) { /* keep the tail: it holds the parameters */
		fputs("\xe2\x80\xa6", out);
		pc_xml_escape(out, b->label + len - 43);
	} else {
		pc_xml_escape(out, b->label);
	}
	fputs("</text>\n", out);
	if (!isfinite(b->value) || (s->log && b->value <= 0))
		return;
	double end = bx(s, b->value), x = fmin(base, end), w = fabs(end - base);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\">"
		     "<title>%s</title></rect>\n", x, y + 3, fmax(w, 1), BROW - 8,
		mark_colour(b->mark), bar_value(c, b->value).s);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
		fmax(base, end) + 5, y + 15, bar_value(c, b->value).s);
}

static void bar_chart(FILE *out, const struct pc_chart *c)
{
	int h = BMT + BMB + (int)c->nbars * BROW + 8, steps;
	struct bscale s;

	bar_scale(c, &s, &steps);
	svg_open(out, c, BW, h);
	bar_axis(out, c, &s, steps > 0 ? steps : 1, h);
	for (size_t i = 0; i < c->nbars; i++)
		bar_row(out, c, &s, i);
	fputs("</svg>\n", out);
}

int pc_svg_write(const struct pc_chart *c, FILE *out)
{
	if (c->kind == PC_CHART_LINE)
		line_chart(out, c);
	else
		bar_chart(out, c);
	return ferror(out) ? -EIO : 0;
}
