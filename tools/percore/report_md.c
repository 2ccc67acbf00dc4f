/* SPDX-License-Identifier: MIT */
/* percore report: the document as Markdown (report.md) and as plain text
 * (what `percore compare` prints by default). Charts are left out of both:
 * every figure they draw is in a table next to them. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"

static void md_cell(FILE *out, const struct pc_cell *c)
{
	const char *wrap = "";

	if (*c->text && c->mark == PC_MARK_CODE)
		wrap = "`";
	else if (*c->text && c->mark == PC_MARK_STRONG)
		wrap = "**";
	fputs(wrap, out);
	for (const char *p = c->text; *p; p++) {
		if (*p == '|')
			fputc('\\', out);
		fputc(*p == '\n' ? ' ' : *p, out);
	}
	fputs(wrap, out);
}

static void md_table(FILE *out, const struct pc_table *t)
{
	for (size_t i = 0; i < t->ncols; i++)
		fprintf(out, "| %s ", t->head[i]);
	fputs("|\n", out);
	for (size_t i = 0; i < t->ncols; i++)
		fputs(t->align[i] == 'r' ? "|---:" : "|---", out);
	fputs("|\n", out);
	for (size_t r = 0; r < pc_table_rows(t); r++) {
		for (size_t i = 0; i < t->ncols; i++) {
			fputs("| ", out);
			md_cell(out, pc_table_cell(t, r, i));
			fputc(' ', out);
		}
		fputs("|\n", out);
	}
	fputc('\n', out);
}

/* Inline marks dropped: `code` and **strong** read fine without them. */
static void text_plain(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '`' || (s[0] == '*' && s[1] == '*')) {
			s += *s == '*';
			continue;
		}
		fputc(*s, out);
	}
}

/* Columns measured in characters, not bytes: UTF-8 continuation bytes do
 * not take a column. */
static size_t width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void pad(FILE *out, const char *s, size_t w, char align)
{
	size_t n = width(s);

	if (align == 'r')
		fprintf(out, "%*s%s", (int)(w - n), "", s);
	else
		fprintf(out, "%s%*s", s, (int)(w - n), "");
}

/* One table line, without trailing blanks. */
static void text_line(FILE *out, const struct pc_table *t, const size_t *w, size_t row)
{
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);

	if (!f)
		return;
	for (size_t i = 0; i < t->ncols; i++) {
		fputs(i ? "  " : "", f);
		pad(f, row == SIZE_MAX ? t->head[i] : pc_table_cell(t, row, i)->text, w[i], t->align[i]);
	}
	if (fclose(f) == 0) {
		while (len && line[len - 1] == ' ')
			line[--len] = 0;
		fprintf(out, "%s\n", line);
	}
	free(line);
}

static void text_table(FILE *out, const struct pc_table *t)
{
	size_t *w = calloc(t->ncols, sizeof(*w)), rows = pc_table_rows(t);

	if (!w)
		return;
	for (size_t i = 0; i < t->ncols; i++) {
		w[i] = width(t->head[i]);
		for (size_t r = 0; r < rows; r++) {
			size_t cw = width(pc_table_cell(t, r, i)->text);
			w[i] = cw > w[i] ? cw : w[i];
		}
	}
	text_line(out, t, w, SIZE_MAX);
	for (size_t r = 0; r < rows; r++)
		text_line(out, t, w, r);
	fputc('\n', out);
	free(w);
}

/* Markdown and plain text differ only in how each kind of block is
 * written; the walk over the document is the same. */
static int walk(const struct pc_doc *d, FILE *out, bool md)
{
	if (d->failed)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const struct pc_block *b = d->b[i];
		switch (b->kind) {
		case PC_BLOCK_HEADING:
			if (md)
				fprintf(out, "%.*s ", b->level, "###");
			/* fall through */
		case PC_BLOCK_PARA:
			if (md)
				fputs(b->text, out);
			else
				text_plain(out, b->text);
			fputs("\n\n", out);
			break;
		case PC_BLOCK_LIST:
			for (size_t k = 0; k < b->nitems; k++) {
				fputs(md ? "- " : "  - ", out);
				if (md)
					fputs(b->items[k], out);
				else
					text_plain(out, b->items[k]);
				fputc('\n', out);
			}
			if (b->nitems)
				fputc('\n', out);
			break;
		case PC_BLOCK_TABLE:
			if (md)
				md_table(out, b->table);
			else
				text_table(out, b->table);
			break;
		case PC_BLOCK_CHART:
			break;
		}
	}
	return ferror(out) ? -EIO : 0;
}

int pc_doc_write_md(const struct pc_doc *d, FILE *out)
{
	return walk(d, out, true);
}

int pc_doc_write_text(const struct pc_doc *d, FILE *out)
{
	return walk(d, out, false);
}
