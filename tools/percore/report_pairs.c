/* percore report: which rows stand beside which, and the Micro benchmarks
 * and Integration sections built from that.
 *
 * The pairing table below is the only place that knows benchmark names.
 * Each rule matches our row's name with a POSIX extended regular
 * expression; its peers are the rows whose names match the peer pattern
 * after \1..\9 are replaced by what our pattern captured (quoted, so a
 * captured "64" matches only "64"). Pinned rows meet pinned peers; where
 * only one side carries a configuration tag, the peers are matched again
 * without it. The first rule that matches decides the section. A name no rule knows lands in Micro benchmarks without peers, so
 * a new benchmark shows up without any change here; a new peer needs a rule
 * (or an existing rule's alternatives) to stand beside its counterpart. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "report.h"
#include "svg.h"
#include "stats.h"

struct pair_rule {
	enum pc_section sec;
	const char *ours;
	const char *peers;      /* NULL: no peers */
	/* the peer's time counts this many times in the speedup: a one-way
	 * latency stands against half the round-trip limit */
	double scale;
};

#define RULE(sec, ours, peers) { sec, ours, peers, 1.0 }

/* Configuration tags the harness appends; every rule lets them through and
 * passes them on, so pinned rows meet pinned peers. */
#define TAGS "((/affinity:o[nf]+)?(/pm_qos:on)?)$"
/* Any configuration tags, for the second try of a peer pattern. */
#define ANY_TAGS "(/affinity:o[nf]+)?(/pm_qos:on)?$"

static const struct pair_rule rules[] = {
	/* peers and whole-section families first */
	RULE(PC_SEC_PEER, "^Peer/", NULL),
	RULE(PC_SEC_ARCH, "^Arch/", NULL),
	RULE(PC_SEC_NOISE, "^Noise/", NULL),
	/* integration: against the physical limit, raw SPSC, a plain server */
	RULE(PC_SEC_INTEGRATION, "^CrossCore/RTT(/idle:[a-z]+)?" TAGS, "^Peer/core2core/RTT\\2$"),
	{ PC_SEC_INTEGRATION, "^CrossCore/OneWay(/idle:[a-z]+)?" TAGS, "^Peer/core2core/RTT\\2$",
	  0.5 },
	/* the queue of 8-byte items and the bare 64-byte ring the mesh is built on */
	RULE(PC_SEC_INTEGRATION, "^CrossCore/Throughput" TAGS,
	     "^(SpscQueue|Peer/spsc64)/Concurrent\\1$"),
	RULE(PC_SEC_INTEGRATION, "^CrossCore/", NULL),
	RULE(PC_SEC_INTEGRATION, "^FramePipeline/", NULL),
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/Latency/([0-9]+)(/idle:[a-z]+)?" TAGS,
	     "^Peer/epoll_echo/Latency/\\1\\3$"),
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/([0-9]+)" TAGS, "^Peer/epoll_echo/\\1\\2$"),
	RULE(PC_SEC_INTEGRATION, "^Session/Create" TAGS, "^Peer/epoll_echo/Create\\1$"),
	RULE(PC_SEC_INTEGRATION, "^Session(Echo)?/", NULL),
	/* micro benchmarks beside their peers */
	RULE(PC_SEC_MICRO, "^SlabAlloc/([0-9]+(/batch)?)" TAGS,
	     "^Peer/(glibc|malloc|jemalloc|mimalloc|tcmalloc)/\\1\\3$"),
	RULE(PC_SEC_MICRO, "^SpscQueue/(Throughput/[0-9]+|Latency|Concurrent)(/batch:[0-9]+)?" TAGS,
	     "^Peer/ck_ring/\\1\\3$"),
	RULE(PC_SEC_MICRO, "^MpscQueue/(.+)", "^Peer/ck_ring/mpsc/\\1$"),
	RULE(PC_SEC_MICRO, "^Counter/Striped/(.+)", "^Counter/Atomic/\\1$"),
	RULE(PC_SEC_MICRO, "^FalseSharing/Padded(.*)", "^FalseSharing/SameLine\\1$"),
	RULE(PC_SEC_MICRO, "^RingBuffer/WriteRead/([0-9]+)", "^Peer/memcpy/\\1$"),
	RULE(PC_SEC_MICRO, "^RingBuffer/Linearize/([0-9]+)/mirrored",
	     "^RingBuffer/Linearize/\\1/plain$"),
	RULE(PC_SEC_MICRO, "^FlatMap/(.+)", "^Peer/(absl|glib)/\\1$"),
	RULE(PC_SEC_MICRO, "^TimingWheel/(.+)", "^Peer/libuv/\\1$"),
};

#define NRULES (sizeof(rules) / sizeof(rules[0]))
#define MAX_GROUPS 10

/* The peer pattern with \N replaced by capture N, regex-quoted. */
static char *peer_pattern(const char *tmpl, const char *name, const regmatch_t *m)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (const char *p = tmpl; *p; p++) {
		if (p[0] == '\\' && p[1] >= '1' && p[1] <= '9') {
			const regmatch_t *g = &m[p[1] - '0'];
			for (regoff_t k = g->rm_so; g->rm_so >= 0 && k < g->rm_eo; k++) {
				if (strchr(".[]()*+?{}|^$\\", name[k]))
					fputc('\\', f);
				fputc(name[k], f);
			}
			p++;
		} else {
			fputc(*p, f);
		}
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

static int find_peers(const struct pc_results *res, size_t self, const char *pattern,
		      struct pc_pairing *pp)
{
	struct pc_pair *me = &pp->p[self];
	regex_t re;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		return -EINVAL; /* only a broken rule can do this */
	for (size_t i = 0; i < res->n; i++) {
		size_t *np;
		if (i == self || regexec(&re, res->b[i].name, 0, NULL, 0) != 0)
			continue;
		if (!(np = realloc(me->peers, (me->npeers + 1) * sizeof(*np)))) {
			regfree(&re);
			return -ENOMEM;
		}
		me->peers = np;
		me->peers[me->npeers++] = i;
		pp->p[i].claimed = true;
	}
	regfree(&re);
	return 0;
}

/* The peers of row i under rule r. First the strict pattern: a pinned row
 * meets pinned peers. When that finds none (one side was measured with an
 * affinity or PM QoS tag, the other without), the rule is applied again to
 * the name without its tags and the peers may carry any tags. */
static int rule_peers(const struct pc_results *res, size_t i, const regex_t *ours, size_t r,
		      struct pc_pairing *pp)
{
	regmatch_t m[MAX_GROUPS];
	char base[512], *pat;
	size_t len;
	int rc;

	if (regexec(ours, res->b[i].name, MAX_GROUPS, m, 0) != 0)
		return 0;
	if (!(pat = peer_pattern(rules[r].peers, res->b[i].name, m)))
		return -ENOMEM;
	rc = find_peers(res, i, pat, pp);
	free(pat);
	if (rc < 0 || pp->p[i].npeers)
		return rc;
	pc_report_base_name(res->b[i].name, base, sizeof(base));
	if (regexec(ours, base, MAX_GROUPS, m, 0) != 0)
		return 0; /* the rule wants the tags */
	if (!(pat = peer_pattern(rules[r].peers, base, m)))
		return -ENOMEM;
	len = strlen(pat);
	if (len && pat[len - 1] == '$') {
		char *loose = NULL;
		if (asprintf(&loose, "%.*s" ANY_TAGS, (int)(len - 1), pat) < 0)
			loose = NULL;
		free(pat);
		if (!(pat = loose))
			return -ENOMEM;
	}
	rc = find_peers(res, i, pat, pp);
	free(pat);
	return rc;
}

static int classify(const struct pc_results *res, size_t i, regex_t *compiled,
		    struct pc_pairing *pp)
{
	pp->p[i].sec = PC_SEC_MICRO;
	pp->p[i].scale = 1;
	for (size_t r = 0; r < NRULES; r++) {
		if (regexec(&compiled[r], res->b[i].name, 0, NULL, 0) != 0)
			continue;
		pp->p[i].sec = rules[r].sec;
		pp->p[i].scale = rules[r].scale;
		return rules[r].peers ? rule_peers(res, i, &compiled[r], r, pp) : 0;
	}
	return 0;
}

int pc_pairing_build(const struct pc_results *res, struct pc_pairing *out)
{
	regex_t compiled[NRULES];
	size_t nc = 0;
	int rc = 0;

	out->n = res->n;
	if (!(out->p = calloc(res->n ? res->n : 1, sizeof(*out->p))))
		return -ENOMEM;
	for (; nc < NRULES; nc++)
		if (regcomp(&compiled[nc], rules[nc].ours, REG_EXTENDED) != 0) {
			rc = -EINVAL;
			break;
		}
	for (size_t i = 0; rc == 0 && i < res->n; i++)
		rc = classify(res, i, compiled, out);
	while (nc)
		regfree(&compiled[--nc]);
	if (rc < 0)
		pc_pairing_free(out);
	return rc;
}

void pc_pairing_free(struct pc_pairing *pp)
{
	for (size_t i = 0; pp->p && i < pp->n; i++)
		free(pp->p[i].peers);
	free(pp->p);
	pp->p = NULL;
	pp->n = 0;
}

/* ---- the tables ------------------------------------------------------- */

/* Whether row i gets a line of its own in section sec: a row that only
 * serves as another row's peer is shown beside that row instead. */
static bool shown(const struct pc_report_ctx *c, size_t i, enum pc_section sec)
{
	const struct pc_pair *p = &c->pairs->p[i];

	return p->sec == sec && !(p->claimed && p->npeers == 0);
}

static enum pc_mark speedup_mark(double r)
{
	return r >= 1.05 ? PC_MARK_GOOD : r <= 0.95 ? PC_MARK_BAD : PC_MARK_NONE;
}

/* A counter's median as people read it: 7.855, 4020, 12000, 1.23 M. */
static void counter_value(FILE *f, double v)
{
	if (fabs(v) >= 1e6)
		fputs(pc_fmt_si(v).s, f);
	else if (fabs(v) >= 1000)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.4g", v);
}

/* Counters of a row as "name value, ..." ("" when none). */
static void counters_cell(struct pc_table *t, const struct pc_rbench *b)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		pc_table_add(t, PC_MARK_NONE, "%s", "");
		return;
	}
	for (size_t k = 0; k < b->ncounters; k++) {
		fprintf(f, "%s%s ", k ? ", " : "", b->c[k].name);
		counter_value(f, pc_rcounter_median(b, &b->c[k]));
	}
	if (fclose(f) == 0 && text)
		pc_table_add(t, PC_MARK_NONE, "%s", text);
	else
		pc_table_add(t, PC_MARK_NONE, "%s", "");
	free(text);
}

static void counters_row(struct pc_table **t, struct pc_report_ctx *c, size_t i, bool *done)
{
	static const char *const head[] = { "Benchmark", "Counters (median)" };
	const struct pc_rbench *b = &c->res->b[i];

	if (done[i] || !b->ncounters)
		return;
	done[i] = true;
	if (!*t) {
		pc_doc_para(c->doc, "Figures the benchmarks report beside their times:");
		*t = pc_doc_table(c->doc, 2, head, "ll");
	}
	pc_table_add(*t, PC_MARK_CODE, "%s", b->name);
	counters_cell(*t, b);
}

/* One table of every counter in the section, ours and our peers', so the
 * main table stays narrow. */
static void counters_table(struct pc_report_ctx *c, enum pc_section sec)
{
	bool *done = calloc(c->res->n ? c->res->n : 1, sizeof(*done));
	struct pc_table *t = NULL;

	if (!done) {
		c->doc->failed = true;
		return;
	}
	for (size_t i = 0; i < c->res->n; i++) {
		if (!shown(c, i, sec))
			continue;
		counters_row(&t, c, i, done);
		for (size_t k = 0; k < c->pairs->p[i].npeers; k++)
			counters_row(&t, c, c->pairs->p[i].peers[k], done);
	}
	free(done);
}

struct tally {
	size_t rows, faster;
	double *best;           /* speedup against the fastest peer, per row */
};

static void peer_row(struct pc_report_ctx *c, struct pc_table *t, const struct pc_rbench *b,
		     const struct pc_rbench *peer, double scale, bool first)
{
	double r = peer ? scale * peer->st.tpi_ns / b->st.tpi_ns : NAN;

	if (first) {
		pc_table_add(t, PC_MARK_CODE, "%s", b->name);
		pc_report_cells(c, t, b);
	} else {
		for (int k = 0; k < 4; k++)
			pc_table_add(t, PC_MARK_NONE, "%s", "");
	}
	if (peer) {
		pc_table_add(t, PC_MARK_CODE, "%s", peer->name);
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(peer->st.tpi_ns).s);
		pc_report_cv_cell(c, t, peer);
		pc_table_add(t, speedup_mark(r), "%s", pc_fmt_ratio(r).s);
	} else {
		for (int k = 0; k < 4; k++)
			pc_table_add(t, PC_MARK_MUTED, "%s", k == 0 ? "no peer" : "");
	}
}

/* Rows of one section, each with its peers; returns the chart of speedups
 * against the fastest peer, or NULL when no row has a peer. */
static struct pc_chart *pair_table(struct pc_report_ctx *c, enum pc_section sec,
				   struct tally *ty)
{
	static const char *const head[] = { "Benchmark", "Time/item", "Rate", "CV", "Peer",
					    "Peer time/item", "Peer CV", "Speedup" };
	struct pc_table *t = pc_doc_table(c->doc, 8, head, "lrrrlrrr");
	struct pc_chart *ch = pc_report_chart(c, PC_CHART_BARS, "Speedup against the fastest peer",
					      "peer time / our time (log scale; right of 1x: ours faster)",
					      "");

	if (ch) {
		ch->barfmt = PC_BARFMT_RATIO;
		pc_chart_ref(ch, 1, "1x");
	}
	for (size_t i = 0; t && i < c->res->n; i++) {
		const struct pc_pair *p = &c->pairs->p[i];
		const struct pc_rbench *b = &c->res->b[i];
		double fastest = INFINITY;
		if (!shown(c, i, sec))
			continue;
		peer_row(c, t, b, p->npeers ? &c->res->b[p->peers[0]] : NULL, p->scale, true);
		for (size_t k = 1; k < p->npeers; k++)
			peer_row(c, t, b, &c->res->b[p->peers[k]], p->scale, false);
		for (size_t k = 0; k < p->npeers; k++)
			fastest = fmin(fastest, p->scale * c->res->b[p->peers[k]].st.tpi_ns);
		if (!p->npeers || !isfinite(fastest / b->st.tpi_ns))
			continue;
		double r = fastest / b->st.tpi_ns, *nb = realloc(ty->best, (ty->rows + 1) * sizeof(*nb));
		if (nb) {
			ty->best = nb;
			ty->best[ty->rows++] = r;
			ty->faster += r > 1;
		}
		if (ch)
			pc_chart_bar(ch, b->name, r, speedup_mark(r));
	}
	if (ch && !ch->nbars) {
		pc_chart_free(ch);
		ch = NULL;
	}
	return ch;
}

static void tally_finding(struct pc_report_ctx *c, const char *what, const char *beats,
			  struct tally *ty)
{
	double lo = INFINITY, hi = -INFINITY;

	if (!ty->rows)
		return;
	for (size_t i = 0; i < ty->rows; i++) {
		lo = fmin(lo, ty->best[i]);
		hi = fmax(hi, ty->best[i]);
	}
	pc_report_finding(c, "%s: %s in **%zu of %zu** rows (speedup from %s to %s, "
			     "median %s).", what, beats, ty->faster, ty->rows,
			  pc_fmt_ratio(lo).s, pc_fmt_ratio(hi).s,
			  pc_fmt_ratio(pc_stat_median(ty->best, ty->rows)).s);
}

static void unpaired_peers(struct pc_report_ctx *c)
{
	static const char *const head[] = { "Peer", "Time/item", "Rate", "CV" };
	struct pc_table *t = NULL;

	for (size_t i = 0; i < c->res->n; i++) {
		if (c->pairs->p[i].sec != PC_SEC_PEER || c->pairs->p[i].claimed)
			continue;
		if (!t) {
			pc_doc_para(c->doc, "Peers measured without a counterpart of ours in these "
				    "results:");
			t = pc_doc_table(c->doc, 4, head, "lrrr");
		}
		pc_table_add(t, PC_MARK_CODE, "%s", c->res->b[i].name);
		pc_report_cells(c, t, &c->res->b[i]);
	}
}

static size_t count_shown(const struct pc_report_ctx *c, enum pc_section sec)
{
	size_t n = 0;

	for (size_t i = 0; i < c->res->n; i++)
		n += shown(c, i, sec);
	return n;
}

static void section(struct pc_report_ctx *c, enum pc_section sec, const char *title,
		    const char *intro, const char *finding, const char *beats)
{
	struct tally ty = { 0 };
	struct pc_chart *ch;

	pc_doc_heading(c->doc, 2, "%s", title);
	if (!count_shown(c, sec)) {
		pc_doc_para(c->doc, "No rows of this kind in these results.");
	} else {
		pc_doc_para(c->doc, "%s", intro);
		ch = pair_table(c, sec, &ty);
		counters_table(c, sec);
		if (ch)
			pc_doc_chart(c->doc, ch);
		tally_finding(c, finding, beats, &ty);
		free(ty.best);
	}
	if (sec == PC_SEC_MICRO)
		unpaired_peers(c);
}

void pc_report_benches(struct pc_report_ctx *c)
{
	section(c, PC_SEC_MICRO, "Micro benchmarks",
		"Our components beside their peers, measured in the same run. Speedup is the "
		"peer's time per item over ours: above 1x ours is faster.",
		"Micro benchmarks", "faster than the fastest peer");
	section(c, PC_SEC_INTEGRATION, "Integration",
		"Whole paths across cores and over TCP: cross-core round trip and one-way "
		"latency beside the physical limit (two threads bouncing one cache line; "
		"one-way rows are measured against half its round trip), "
		"cross-core throughput beside the raw SPSC rings (8-byte items, and the "
		"64-byte ring the mesh is built on), the frame pipeline, and sessions "
		"beside a plain epoll server.",
		"Integration", "faster than the fastest reference");
}
