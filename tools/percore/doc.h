/* SPDX-License-Identifier: MIT */
/* percore report/compare: the report as a document model.
 *
 * The report's sections are built once as headings, paragraphs, lists,
 * tables and charts; report_md.c and report_html.c render the same model,
 * so the Markdown and the HTML always say the same thing.
 *
 * Text in paragraphs and list items may use two inline marks, written as in
 * Markdown: `code` and **strong**. Table cells are plain text with a mark
 * for the whole cell.
 *
 * Builders never fail loudly: when memory runs out they set doc->failed and
 * do nothing more; the renderers check it once (as ferror() does for
 * stdio). */
#ifndef PERCORE_TOOL_DOC_H
#define PERCORE_TOOL_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How a cell (or a list) is shown: colour and emphasis in HTML, code or
 * bold in Markdown. */
enum pc_mark {
	PC_MARK_NONE,
	PC_MARK_GOOD,   /* faster, improved, ok */
	PC_MARK_BAD,    /* slower, regressed */
	PC_MARK_WARN,   /* noisy, warning, inconclusive */
	PC_MARK_MUTED,  /* not applicable, unknown */
	PC_MARK_CODE,   /* a name: monospace */
	PC_MARK_STRONG,
};

struct pc_cell {
	char *text;
	enum pc_mark mark;
};

struct pc_table {
	size_t ncols, ncells, cap;
	char **head;
	char *align;            /* 'l' or 'r' per column */
	struct pc_cell *cells;  /* row-major */
	bool *failed;           /* the owning document's flag */
};

struct pc_chart;

enum pc_block_kind {
	PC_BLOCK_HEADING,
	PC_BLOCK_PARA,
	PC_BLOCK_LIST,
	PC_BLOCK_TABLE,
	PC_BLOCK_CHART,
};

struct pc_block {
	enum pc_block_kind kind;
	int level;              /* heading: 1..3 */
	enum pc_mark mark;      /* list: PC_MARK_WARN shows it as a callout */
	char *text;             /* heading, paragraph */
	size_t nitems;
	char **items;           /* list */
	struct pc_table *table;
	struct pc_chart *chart;
};

struct pc_doc {
	size_t n, cap;
	struct pc_block **b;    /* blocks stay where they are as more are added */
	bool failed;
};

struct pc_doc *pc_doc_new(void);
void pc_doc_free(struct pc_doc *d);

void pc_doc_heading(struct pc_doc *d, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void pc_doc_para(struct pc_doc *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Start a list; add items with pc_doc_item(). Returns the block or NULL. */
struct pc_block *pc_doc_list(struct pc_doc *d, enum pc_mark mark);
void pc_doc_item(struct pc_doc *d, struct pc_block *list, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Start a table with ncols columns: head[i] names them, align is a string
 * of 'l'/'r', one per column. Returns NULL when memory runs out. */
struct pc_table *pc_doc_table(struct pc_doc *d, size_t ncols, const char *const *head,
			      const char *align);
/* Append the next cell, row by row. */
void pc_table_add(struct pc_table *t, enum pc_mark mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
size_t pc_table_rows(const struct pc_table *t);
const struct pc_cell *pc_table_cell(const struct pc_table *t, size_t row, size_t col);

/* Move every block of src to the end of d and free src. */
void pc_doc_append(struct pc_doc *d, struct pc_doc *src);

/* Hand a chart to the document (it frees it). */
void pc_doc_chart(struct pc_doc *d, struct pc_chart *c);

/* Renderers. Return 0, or -ENOMEM when the model is incomplete, -EIO when
 * writing failed. */
int pc_doc_write_md(const struct pc_doc *d, FILE *out);
int pc_doc_write_text(const struct pc_doc *d, FILE *out);
int pc_doc_write_html(const struct pc_doc *d, const char *title, FILE *out);

#endif
