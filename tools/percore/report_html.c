/* SPDX-License-Identifier: MIT */
/* percore report: the document as one self-contained HTML page.
 *
 * Inline CSS, inline SVG charts, internal links only: no script, font,
 * image or style sheet is fetched, so the file opens from disk anywhere and
 * renders the same offline. */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "doc.h"
#include "svg.h"

static const char css[] =
	":root{--ink:#1f2933;--muted:#7b8794;--line:#e4e7eb;--head:#f3f5f8;--good:#1b7f3b;"
	"--bad:#c0392b;--warn:#8a5a00;--warnbg:#fff4d6;--accent:#4e79a7}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0;background:#eef1f4;color:var(--ink);"
	"font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}\n"
	"main{max-width:1360px;margin:0 auto;padding:28px 40px 56px;background:#fff;"
	"box-shadow:0 1px 3px rgba(0,0,0,.08)}\n"
	"h1{font-size:26px;margin:0 0 6px;letter-spacing:-.01em}\n"
	"h2{font-size:19px;margin:38px 0 12px;padding-bottom:6px;border-bottom:2px solid var(--line)}\n"
	"h3{font-size:15px;margin:24px 0 8px}\n"
	"p{margin:6px 0 12px;max-width:980px}\n"
	"code,td.code{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,'DejaVu Sans Mono',"
	"monospace;font-size:12.5px}\n"
	"p code,li code{background:#f1f3f5;padding:1px 4px;border-radius:3px}\n"
	"nav.toc{margin:10px 0 4px;font-size:13px}\n"
	"nav.toc a{color:var(--accent);text-decoration:none;margin-right:18px}\n"
	".findings{background:#f2f6fb;border-left:4px solid var(--accent);padding:10px 22px;"
	"margin:12px 0 8px;border-radius:0 4px 4px 0}\n"
	".findings ul{margin:4px 0;padding-left:18px}\n"
	".findings li{margin:3px 0}\n"
	".tablewrap{overflow-x:auto;margin:8px 0 18px}\n"
	"table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}\n"
	"th{background:var(--head);text-align:left;font-weight:600;padding:6px 9px;"
	"border-bottom:1px solid #cbd2d9;white-space:nowrap}\n"
	"td{padding:4px 9px;border-bottom:1px solid var(--line);vertical-align:top;white-space:nowrap}\n"
	"td.wrap{white-space:normal;min-width:260px;max-width:520px}\n"
	"th.r,td.r{text-align:right;white-space:nowrap}\n"

	"td.code{white-space:nowrap}\n"
	"tbody tr:hover{background:#f7f9fb}\n"
	"tr.cont td{border-top:0}\n"
	"tr.group td{border-top:1px solid #cbd2d9}\n"
	"td.good{color:var(--good);font-weight:600}\n"
	"td.bad{color:var(--bad);font-weight:600}\n"
	"td.warn{color:var(--warn);background:var(--warnbg)}\n"
	"td.muted{color:var(--muted)}\n"
	"td.strong{font-weight:600;white-space:nowrap}\n"
	"figure{margin:10px 0 26px}\n"
	"svg.chart{max-width:100%;height:auto;font-family:inherit}\n"
	"footer{color:var(--muted);font-size:12px;margin-top:44px;border-top:1px solid var(--line);"
	"padding-top:10px}\n";

static void slug(FILE *out, const char *s)
{
	bool dash = false;

	for (; *s; s++) {
		if (isalnum((unsigned char)*s)) {
			fputc(tolower((unsigned char)*s), out);
			dash = false;
		} else if (!dash) {
			fputc('-', out);
			dash = true;
		}
	}
}

/* Paragraph text: `code` and **strong** become elements, the rest is
 * escaped. An unmatched mark is shown as it is. */
static void inline_text(FILE *out, const char *s)
{
	while (*s) {
		const char *end;
		if (*s == '`' && (end = strchr(s + 1, '`'))) {
			fputs("<code>", out);
			for (s++; s < end; s++) {
				char one[2] = { *s, 0 };
				pc_xml_escape(out, one);
			}
			fputs("</code>", out);
			s++;
		} else if (s[0] == '*' && s[1] == '*' && (end = strstr(s + 2, "**"))) {
			fputs("<strong>", out);
			for (s += 2; s < end; s++) {
				char one[2] = { *s, 0 };
				if (*s == '`')
					continue;
				pc_xml_escape(out, one);
			}
			fputs("</strong>", out);
			s += 2;
		} else {
			char one[2] = { *s++, 0 };
			pc_xml_escape(out, one);
		}
	}
}

static const char *mark_class(enum pc_mark m)
{
	static const char *const cls[] = { "", "good", "bad", "warn", "muted", "code", "strong" };

	return m <= PC_MARK_STRONG ? cls[m] : "";
}

/* Long prose in a cell may wrap; figures and names never do. */
#define WRAP_AT 60

static void html_head(FILE *out, const struct pc_table *t)
{
	bool any = false;

	for (size_t i = 0; i < t->ncols; i++)
		any |= *t->head[i] != 0;
	if (!any) /* a key/value table: the first column says what each row is */
		return;
	fputs("<thead><tr>", out);
	for (size_t i = 0; i < t->ncols; i++) {
		fprintf(out, "<th%s>", t->align[i] == 'r' ? " class=\"r\"" : "");
		pc_xml_escape(out, t->head[i]);
		fputs("</th>", out);
	}
	fputs("</tr></thead>\n", out);
}

static void html_table(FILE *out, const struct pc_table *t)
{
	fputs("<div class=\"tablewrap\"><table>\n", out);
	html_head(out, t);
	fputs("<tbody>\n", out);
	for (size_t r = 0; r < pc_table_rows(t); r++) {
		/* a row with an empty first cell continues the group above it */
		bool cont = !*pc_table_cell(t, r, 0)->text;
		bool next_cont = r + 1 < pc_table_rows(t) && !*pc_table_cell(t, r + 1, 0)->text;
		fprintf(out, "<tr%s>", cont ? " class=\"cont\"" : next_cont && r ? " class=\"group\"" : "");
		for (size_t i = 0; i < t->ncols; i++) {
			const struct pc_cell *c = pc_table_cell(t, r, i);
			const char *cls = mark_class(c->mark);
			const char *align = t->align[i] == 'r' ? "r" : strlen(c->text) > WRAP_AT ? "wrap" : "";
			if (*cls || *align)
				fprintf(out, "<td class=\"%s%s%s\">", align, *align && *cls ? " " : "", cls);
			else
				fputs("<td>", out);
			pc_xml_escape(out, c->text);
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
}

static void toc(const struct pc_doc *d, FILE *out)
{
	fputs("<nav class=\"toc\">", out);
	for (size_t i = 0; i < d->n; i++) {
		const struct pc_block *b = d->b[i];
		if (b->kind != PC_BLOCK_HEADING || b->level != 2)
			continue;
		fputs("<a href=\"#", out);
		slug(out, b->text);
		fputs("\">", out);
		pc_xml_escape(out, b->text);
		fputs("</a>", out);
	}
	fputs("</nav>\n", out);
}

static void heading(const struct pc_doc *d, const struct pc_block *b, FILE *out,
		    bool *in_section, bool *toc_done)
{
	if (b->level == 2) {
		if (!*toc_done) {
			toc(d, out);
			*toc_done = true;
		}
		if (*in_section)
			fputs("</section>\n", out);
		fputs("<section id=\"", out);
		slug(out, b->text);
		fputs("\">\n", out);
		*in_section = true;
	}
	fprintf(out, "<h%d>", b->level);
	inline_text(out, b->text);
	fprintf(out, "</h%d>\n", b->level);
}

static void list(const struct pc_block *b, FILE *out)
{
	if (!b->nitems)
		return;
	fputs(b->mark == PC_MARK_WARN ? "<div class=\"findings\"><ul>\n" : "<ul>\n", out);
	for (size_t k = 0; k < b->nitems; k++) {
		fputs("<li>", out);
		inline_text(out, b->items[k]);
		fputs("</li>\n", out);
	}
	fputs(b->mark == PC_MARK_WARN ? "</ul></div>\n" : "</ul>\n", out);
}

int pc_doc_write_html(const struct pc_doc *d, const char *title, FILE *out)
{
	bool in_section = false, toc_done = false;

	if (d->failed)
		return -ENOMEM;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", out);
	pc_xml_escape(out, title);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", css);
	for (size_t i = 0; i < d->n; i++) {
		const struct pc_block *b = d->b[i];
		switch (b->kind) {
		case PC_BLOCK_HEADING:
			heading(d, b, out, &in_section, &toc_done);
			break;
		case PC_BLOCK_PARA:
			fputs("<p>", out);
			inline_text(out, b->text);
			fputs("</p>\n", out);
			break;
		case PC_BLOCK_LIST:
			list(b, out);
			break;
		case PC_BLOCK_TABLE:
			html_table(out, b->table);
			break;
		case PC_BLOCK_CHART:
			fputs("<figure>\n", out);
			pc_svg_write(b->chart, out);
			fputs("</figure>\n", out);
			break;
		}
	}
	if (in_section)
		fputs("</section>\n", out);
	fputs("<footer>Written by <code>percore report</code>. Self-contained: no scripts, "
	      "fonts or external files.</footer>\n</main>\n</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}
