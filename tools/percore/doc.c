/* SPDX-License-Identifier: MIT */
/* percore report/compare: building the document model. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "svg.h"

struct pc_doc *pc_doc_new(void)
{
	return calloc(1, sizeof(struct pc_doc));
}

static void table_free(struct pc_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncols; i++)
		free(t->head[i]);
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i].text);
	free(t->head);
	free(t->align);
	free(t->cells);
	free(t);
}

void pc_doc_free(struct pc_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		struct pc_block *b = d->b[i];
		free(b->text);
		for (size_t k = 0; k < b->nitems; k++)
			free(b->items[k]);
		free(b->items);
		table_free(b->table);
		pc_chart_free(b->chart);
		free(b);
	}
	free(d->b);
	free(d);
}

static bool reserve(struct pc_doc *d, size_t more)
{
	size_t cap = d->cap ? d->cap : 32;

	while (cap < d->n + more)
		cap *= 2;
	if (cap != d->cap) {
		struct pc_block **nb = realloc(d->b, cap * sizeof(*nb));
		if (!nb) {
			d->failed = true;
			return false;
		}
		d->b = nb;
		d->cap = cap;
	}
	return true;
}

void pc_doc_append(struct pc_doc *d, struct pc_doc *src)
{
	if (!src)
		return;
	d->failed |= src->failed;
	if (reserve(d, src->n)) {
		memcpy(d->b + d->n, src->b, src->n * sizeof(*src->b));
		for (size_t i = 0; i < src->n; i++)
			if (src->b[i]->table) /* its flag lived in src */
				src->b[i]->table->failed = &d->failed;
		d->n += src->n;
		src->n = 0;
	}
	pc_doc_free(src);
}

static struct pc_block *push(struct pc_doc *d, enum pc_block_kind kind)
{
	struct pc_block *b;

	if (d->failed || !reserve(d, 1))
		return NULL;
	if (!(b = calloc(1, sizeof(*b)))) {
		d->failed = true;
		return NULL;
	}
	b->kind = kind;
	d->b[d->n++] = b;
	return b;
}

static char *vfmt(bool *failed, const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0) {
		*failed = true;
		return NULL;
	}
	return s;
}

void pc_doc_heading(struct pc_doc *d, int level, const char *fmt, ...)
{
	struct pc_block *b = push(d, PC_BLOCK_HEADING);
	va_list ap;

	if (!b)
		return;
	b->level = level;
	va_start(ap, fmt);
	b->text = vfmt(&d->failed, fmt, ap);
	va_end(ap);
}

void pc_doc_para(struct pc_doc *d, const char *fmt, ...)
{
	struct pc_block *b = push(d, PC_BLOCK_PARA);
	va_list ap;

	if (!b)
		return;
	va_start(ap, fmt);
	b->text = vfmt(&d->failed, fmt, ap);
	va_end(ap);
}

struct pc_block *pc_doc_list(struct pc_doc *d, enum pc_mark mark)
{
	struct pc_block *b = push(d, PC_BLOCK_LIST);

	if (b)
		b->mark = mark;
	return b;
}

void pc_doc_item(struct pc_doc *d, struct pc_block *list, const char *fmt, ...)
{
	char **ni;
	va_list ap;

	if (!list || d->failed)
		return;
	if (!(ni = realloc(list->items, (list->nitems + 1) * sizeof(*ni)))) {
		d->failed = true;
		return;
	}
	list->items = ni;
	va_start(ap, fmt);
	ni[list->nitems] = vfmt(&d->failed, fmt, ap);
	va_end(ap);
	if (ni[list->nitems])
		list->nitems++;
}

struct pc_table *pc_doc_table(struct pc_doc *d, size_t ncols, const char *const *head,
			      const char *align)
{
	struct pc_table *t = calloc(1, sizeof(*t));
	struct pc_block *b;

	if (t) {
		t->ncols = ncols;
		t->head = calloc(ncols, sizeof(char *));
		t->align = calloc(ncols + 1, 1);
	}
	if (!t || !t->head || !t->align)
		goto fail;
	for (size_t i = 0; i < ncols; i++) {
		t->align[i] = align && align[i] == 'r' ? 'r' : 'l';
		if (!(t->head[i] = strdup(head[i]))) {
			t->ncols = i;
			goto fail;
		}
	}
	if (!(b = push(d, PC_BLOCK_TABLE)))
		goto fail;
	b->table = t;
	t->failed = &d->failed;
	return t;
fail:
	d->failed = true;
	table_free(t);
	return NULL;
}

void pc_table_add(struct pc_table *t, enum pc_mark mark, const char *fmt, ...)
{
	va_list ap;

	if (!t || *t->failed)
		return;
	if (t->ncells == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16 * t->ncols;
		struct pc_cell *nc = realloc(t->cells, cap * sizeof(*nc));
		if (!nc) {
			*t->failed = true;
			return;
		}
		t->cells = nc;
		t->cap = cap;
	}
	va_start(ap, fmt);
	t->cells[t->ncells].text = vfmt(t->failed, fmt, ap);
	va_end(ap);
	t->cells[t->ncells].mark = mark;
	if (t->cells[t->ncells].text)
		t->ncells++;
}

size_t pc_table_rows(const struct pc_table *t)
{
	return t->ncells / t->ncols;
}

const struct pc_cell *pc_table_cell(const struct pc_table *t, size_t row, size_t col)
{
	return &t->cells[row * t->ncols + col];
}

void pc_doc_chart(struct pc_doc *d, struct pc_chart *c)
{
	struct pc_block *b;

	if (!c || c->failed) {
		d->failed = true;
		pc_chart_free(c);
		return;
	}
	if (!(b = push(d, PC_BLOCK_CHART))) {
		pc_chart_free(c);
		return;
	}
	b->chart = c;
}
