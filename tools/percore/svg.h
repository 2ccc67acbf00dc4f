/* SPDX-License-Identifier: MIT */
/* percore report: charts, and their drawing as inline SVG.
 *
 * Two kinds, enough for a benchmark report: a line chart (throughput
 * against cores, one line per design and affinity setting) and a horizontal
 * bar chart (speedups against peers on a log scale around 1x, or CVs from 0
 * with the noise threshold marked). The SVG needs no script, font or file:
 * it is drawn once by our code and embedded in the HTML. */
#ifndef PERCORE_TOOL_SVG_H
#define PERCORE_TOOL_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "doc.h"

enum pc_chart_kind { PC_CHART_LINE, PC_CHART_BARS };
enum pc_bar_format { PC_BARFMT_RATIO, PC_BARFMT_PCT };

struct pc_series {
	char *name;
	unsigned color;         /* index into the palette */
	bool dashed;
	size_t n;
	double *x, *y;
};

struct pc_bar {
	char *label;
	double value;
	enum pc_mark mark;      /* colour: good, bad, warn, or none */
};

struct pc_chart {
	enum pc_chart_kind kind;
	char *title, *xlabel, *ylabel;
	size_t nseries;
	struct pc_series *series;
	size_t nbars;
	struct pc_bar *bars;
	/* bars: PC_BARFMT_RATIO draws a log scale with bars growing from 1x;
	 * PC_BARFMT_PCT a linear scale from 0. ref, when finite, is drawn as a
	 * dashed line labelled ref_label (the 5% noise threshold, say). */
	enum pc_bar_format barfmt;
	double ref;
	char *ref_label;
	bool failed;            /* memory ran out while building */
};

/* A new empty chart; NULL when memory runs out. */
struct pc_chart *pc_chart_new(enum pc_chart_kind kind, const char *title,
			      const char *xlabel, const char *ylabel);
void pc_chart_free(struct pc_chart *c);
/* Add a line; returns its index, or -1 (and sets c->failed). */
int pc_chart_series(struct pc_chart *c, const char *name, unsigned color, bool dashed);
void pc_chart_point(struct pc_chart *c, int series, double x, double y);
void pc_chart_bar(struct pc_chart *c, const char *label, double value, enum pc_mark mark);
void pc_chart_ref(struct pc_chart *c, double ref, const char *label);

/* Write the chart as one <svg> element. Returns 0 or -EIO. */
int pc_svg_write(const struct pc_chart *c, FILE *out);

/* Write s with &, <, > and " escaped for HTML and SVG text. */
void pc_xml_escape(FILE *out, const char *s);

#endif
