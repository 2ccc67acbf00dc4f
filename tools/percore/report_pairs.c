/* SPDX-License-Identifier: MIT */
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
#include "report_stats.h"

struct peer_rule {
	const char *pattern;
	enum pc_pair_kind kind;
	/* the other row's time counts this many times in the speedup: a
	 * one-way latency stands against half the round-trip reference */
	double scale;
	/* a key finding of its own for this pair (pc_peer.finding), or NULL */
	const char *finding;
};

#define MAX_PEERS 3

struct pair_rule {
	enum pc_section sec;
	const char *ours;
	struct peer_rule peers[MAX_PEERS];      /* unused ones have no pattern */
};

#define PEER(p) { p, PC_PAIR_PEER, 1.0, NULL }
#define VARIANT(p) { p, PC_PAIR_VARIANT, 1.0, NULL }
#define REFERENCE(p, s) { p, PC_PAIR_REFERENCE, s, NULL }
#define FINDING(p, f) { p, PC_PAIR_VARIANT, 1.0, f }
#define RULE(sec, ours, ...) { sec, ours, { __VA_ARGS__ } }

/* Configuration tags the harness appends; every rule lets them through and
 * passes them on, so pinned rows meet pinned peers. */
#define TAGS "((/affinity:o[nf]+)?(/pm_qos:on)?)$"
/* Any configuration tags, for the second try of a peer pattern. */
#define ANY_TAGS "(/affinity:o[nf]+)?(/pm_qos:on)?$"

/* Fair pairs: a row that spins meets a peer that spins, one that sleeps a
 * peer that sleeps, a batched row a batched peer. Our echo servers poll
 * before they sleep (the adaptive policy, also the untagged rows): they meet
 * the busy-polling epoll server; their idle:sleep rows meet the servers
 * that sleep in epoll_wait and io_uring_submit_and_wait. Rows of ours that
 * only show what a design choice buys (the shared atomic counter, the false
 * sharing layout, the plain ring buffer, the per-item queue beside the
 * batched one, the mesh's packing, a shard's wake-up) are variants: shown,
 * never counted as peers. A row that does only part of the work, or a
 * reference measured another way than ours, is shown with its ratio and
 * never counted. */
static const struct pair_rule rules[] = {
	/* peers and whole-section families first */
	RULE(PC_SEC_PEER, "^Peer/"),
	RULE(PC_SEC_ARCH, "^Arch/"),
	RULE(PC_SEC_ARCH, "^KV/.+/shards:[0-9]+$"),
	RULE(PC_SEC_NOISE, "^Noise/"),
	/* integration. A sleeping shard's round trip is a wake-up's cost:
	 * shown beside the spinning one as a finding of its own, and on
	 * io_uring beside the same on epoll */
	RULE(PC_SEC_INTEGRATION, "^CrossCore/(RTT|OneWay)/idle:sleep/backend:uring" TAGS,
	     FINDING("^CrossCore/\\1/idle:sleep\\2$",
		     "A sleeping shard woken from ring to ring (io_uring), not by eventfd (epoll)")),
	RULE(PC_SEC_INTEGRATION, "^CrossCore/(RTT|OneWay)/idle:sleep" TAGS,
	     FINDING("^CrossCore/\\1/idle:spin\\2$", "Wake-up cost of a sleeping shard")),
	/* two bare threads bouncing one cache line: a reference, not a limit,
	 * as it is measured without the mesh's loop, clock reads and
	 * placement; one-way rows stand against half its round trip */
	RULE(PC_SEC_INTEGRATION, "^CrossCore/RTT(/idle:[a-z]+)?" TAGS,
	     REFERENCE("^Peer/core2core/RTT\\2$", 1.0)),
	RULE(PC_SEC_INTEGRATION, "^CrossCore/OneWay(/idle:[a-z]+)?" TAGS,
	     REFERENCE("^Peer/core2core/RTT\\2$", 0.5)),
	/* pointer messages to alternating functions against a ring of 8-byte
	 * items, the bare 64-byte ring under the mesh as a variant; a stream
	 * to one function (packed fuller) on its own row */
	RULE(PC_SEC_INTEGRATION, "^CrossCore/Throughput/mixed" TAGS,
	     PEER("^Peer/ck_ring/Concurrent\\1$"), VARIANT("^Peer/spsc64/Concurrent\\1$")),
	RULE(PC_SEC_INTEGRATION, "^CrossCore/Throughput" TAGS,
	     VARIANT("^CrossCore/Throughput/mixed\\1$")),
	RULE(PC_SEC_INTEGRATION, "^CrossCore/"),
	RULE(PC_SEC_INTEGRATION, "^FramePipeline/"),
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/Latency/([0-9]+)/idle:(spin|adaptive)" TAGS,
	     PEER("^Peer/epoll_busy/Latency/\\1\\3$")),
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/Latency/([0-9]+)(/idle:sleep)?" TAGS,
	     PEER("^Peer/epoll_echo/Latency/\\1\\3$")),
	/* the same server with its metrics endpoint on and scraped */
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/([0-9]+)/metrics:scraped" TAGS,
	     VARIANT("^SessionEcho/\\1\\2$")),
	/* frames taken in bursts: the sleeping peer, as the sleeping rows,
	 * and the same server handling one frame at a time */
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/([0-9]+)/frames:burst/idle:sleep" TAGS,
	     PEER("^Peer/epoll_echo/\\1\\2$"), VARIANT("^SessionEcho/\\1/idle:sleep\\2$")),
	/* echo throughput and connection rate: sleeping servers beside the
	 * sleeping epoll and io_uring servers, polling ones beside the
	 * busy-polling epoll server */
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/([0-9]+(/conns:64)?)/backend:uring/idle:sleep" TAGS,
	     PEER("^Peer/epoll_echo/\\1\\3$"), PEER("^Peer/uring_echo/\\1\\3$")),
	RULE(PC_SEC_INTEGRATION, "^SessionEcho/([0-9]+(/conns:64)?)/idle:sleep" TAGS,
	     PEER("^Peer/epoll_echo/\\1\\3$")),
	RULE(PC_SEC_INTEGRATION,
	     "^SessionEcho/([0-9]+(/conns:64)?)(/backend:uring)?(/idle:(spin|adaptive))?" TAGS,
	     PEER("^Peer/epoll_busy/\\1\\6$")),
	RULE(PC_SEC_INTEGRATION, "^Session/Create/backend:uring/idle:sleep" TAGS,
	     PEER("^Peer/epoll_echo/Create\\1$"), PEER("^Peer/uring_echo/Create\\1$")),
	RULE(PC_SEC_INTEGRATION, "^Session/Create/idle:sleep" TAGS,
	     PEER("^Peer/epoll_echo/Create\\1$")),
	RULE(PC_SEC_INTEGRATION, "^Session/Create(/backend:uring)?(/idle:(spin|adaptive))?" TAGS,
	     PEER("^Peer/epoll_busy/Create\\4$")),
	/* the Redis-protocol server beside redis-server under the same
	 * redis-benchmark runs: KV/<test>/<depth> and KV/Memory/<keys>, with
	 * random keys on one shard, or on every CPU, as the name says */
	RULE(PC_SEC_INTEGRATION, "^KV/([A-Za-z0-9]+/[A-Za-z0-9]+(/keys:random)?(/cpus:all)?)" TAGS,
	     PEER("^Peer/redis/\\1\\4$")),
	RULE(PC_SEC_INTEGRATION, "^KV/"),
	/* a shard's O_DIRECT files beside fio's io_uring engine, same file,
	 * block size and queue depth */
	RULE(PC_SEC_INTEGRATION, "^File/(Rand(Read|Write)/4096/qd:[0-9]+)" TAGS,
	     PEER("^Peer/fio/\\1\\3$")),
	/* durable appends: the journal's group commit beside RocksDB's
	 * (sync = true from as many threads) and beside one write and one
	 * fdatasync per record from as many writers */
	RULE(PC_SEC_INTEGRATION, "^Journal/(Append/128/writers:[0-9]+)" TAGS,
	     PEER("^Peer/rocksdb/\\1\\2$"), PEER("^Peer/fdatasync/\\1\\2$")),
	RULE(PC_SEC_INTEGRATION, "^Session(Echo)?/"),
	/* micro benchmarks beside their peers */
	RULE(PC_SEC_MICRO, "^SlabAlloc/([0-9]+(/batch)?)" TAGS,
	     PEER("^Peer/(glibc|malloc|jemalloc|mimalloc|tcmalloc)/\\1\\3$")),
	RULE(PC_SEC_MICRO, "^SpscQueue/(Throughput/[0-9]+|Latency|Concurrent)/batch:([0-9]+)" TAGS,
	     PEER("^Peer/ck_ring/\\1/batch:\\2\\3$"), VARIANT("^SpscQueue/\\1\\3$")),
	RULE(PC_SEC_MICRO, "^SpscQueue/(Throughput/[0-9]+|Latency|Concurrent)" TAGS,
	     PEER("^Peer/ck_ring/\\1\\2$")),
	RULE(PC_SEC_MICRO, "^MpscQueue/(.+)", PEER("^Peer/ck_ring/mpsc/\\1$")),
	RULE(PC_SEC_MICRO, "^Counter/Striped/(.+)", VARIANT("^Counter/Atomic/\\1$")),
	RULE(PC_SEC_MICRO, "^FalseSharing/Padded(.*)", VARIANT("^FalseSharing/SameLine\\1$")),
	RULE(PC_SEC_MICRO, "^RingBuffer/WriteRead/([0-9]+)/mirrored",
	     PEER("^Peer/memcpy/\\1$"), VARIANT("^RingBuffer/WriteRead/\\1/plain$")),
	RULE(PC_SEC_MICRO, "^RingBuffer/Linearize/([0-9]+)/mirrored",
	     VARIANT("^RingBuffer/Linearize/\\1/plain$")),
	RULE(PC_SEC_MICRO, "^FlatMap/(.+)", PEER("^Peer/(absl|glib)/\\1$")),
	RULE(PC_SEC_MICRO, "^KvDb/Lookup10/([0-9]+)/ahead", VARIANT("^KvDb/Lookup10/\\1/plain$")),
	/* only Expire times a timer's whole life (insert, advance, fire) on
	 * both sides; the re-arm and schedule rows leave work out */
	RULE(PC_SEC_MICRO, "^TimingWheel/Expire$", PEER("^Peer/libuv/Expire$")),
	RULE(PC_SEC_MICRO, "^TimingWheel/(.+)", REFERENCE("^Peer/libuv/\\1$", 1.0)),
};

#define NRULES (sizeof(rules) / sizeof(rules[0]))

/* What a reader must know beside some rows: shown under the section's
 * table when such a row is in the results. */
static const struct {
	const char *re, *note;
} notes[] = {
	{ "^TimingWheel/(ScheduleOnly|[0-9]+)$",
	  "Not counted, as they leave work out: `TimingWheel/N` (re-arm) never advances time, "
	  "so the wheel's cascading (its cost at expiry) is outside the figure while libuv's "
	  "heap pays its ordering at insert; `TimingWheel/ScheduleOnly` times the inserts "
	  "alone, never the cancel or the expiry. `TimingWheel/Expire` times a timer's whole "
	  "life on both sides (insert, advance, fire): it is the pair that counts." },
	{ "^SessionEcho/|^Session/Create",
	  "Our echo server polls before it sleeps (the adaptive policy; untagged rows are "
	  "adaptive): polling and spinning rows stand beside the busy-polling epoll server, "
	  "`idle:sleep` rows beside the servers that sleep in epoll_wait and "
	  "io_uring_submit_and_wait, both counted as peers." },
	{ "^CrossCore/(RTT|OneWay)/idle:(spin|adaptive)",
	  "`Peer/core2core/RTT` is two bare threads bouncing one cache line, measured without "
	  "the mesh's loop, clock reads and placement: a reference shown with its ratio, not "
	  "a physical limit, and never counted." },
	{ "^CrossCore/Throughput",
	  "`CrossCore/Throughput/mixed` sends pointer messages to two functions in turn, each "
	  "with its function beside its argument (three a slot), the work of a ring of 8-byte "
	  "items, and meets `Peer/ck_ring/Concurrent`; `CrossCore/Throughput` sends every "
	  "message to one function, so the mesh packs up to five a slot: its gain over the "
	  "mixed row is a variant, not a win over a peer." },
};
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
		      const struct peer_rule *pr, struct pc_pairing *pp)
{
	struct pc_pair *me = &pp->p[self];
	regex_t re;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		return -EINVAL; /* only a broken rule can do this */
	for (size_t i = 0; i < res->n; i++) {
		struct pc_peer *np;
		if (i == self || regexec(&re, res->b[i].name, 0, NULL, 0) != 0)
			continue;
		if (!(np = realloc(me->peers, (me->npeers + 1) * sizeof(*np)))) {
			regfree(&re);
			return -ENOMEM;
		}
		me->peers = np;
		me->peers[me->npeers++] = (struct pc_peer){ i, pr->kind, pr->scale, pr->finding };
		pp->p[i].claimed = true;
	}
	regfree(&re);
	return 0;
}

/* The rows that match one peer pattern of rule r. First the strict
 * pattern: a pinned row meets pinned peers. When that finds none (one side
 * was measured with an affinity or PM QoS tag, the other without), the rule
 * is applied again to the name without its tags and the peers may carry any
 * tags. */
static int rule_peer(const struct pc_results *res, size_t i, const regex_t *ours,
		     const struct peer_rule *pr, struct pc_pairing *pp)
{
	regmatch_t m[MAX_GROUPS];
	char base[512], *pat;
	size_t len, before = pp->p[i].npeers;
	int rc;

	if (regexec(ours, res->b[i].name, MAX_GROUPS, m, 0) != 0)
		return 0;
	if (!(pat = peer_pattern(pr->pattern, res->b[i].name, m)))
		return -ENOMEM;
	rc = find_peers(res, i, pat, pr, pp);
	free(pat);
	if (rc < 0 || pp->p[i].npeers > before)
		return rc;
	pc_report_base_name(res->b[i].name, base, sizeof(base));
	if (regexec(ours, base, MAX_GROUPS, m, 0) != 0)
		return 0; /* the rule wants the tags */
	if (!(pat = peer_pattern(pr->pattern, base, m)))
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
	rc = find_peers(res, i, pat, pr, pp);
	free(pat);
	return rc;
}

static int classify(const struct pc_results *res, size_t i, regex_t *compiled,
		    struct pc_pairing *pp)
{
	pp->p[i].sec = PC_SEC_MICRO;
	for (size_t r = 0; r < NRULES; r++) {
		int rc = 0;
		if (regexec(&compiled[r], res->b[i].name, 0, NULL, 0) != 0)
			continue;
		pp->p[i].sec = rules[r].sec;
		for (size_t k = 0; rc == 0 && k < MAX_PEERS && rules[r].peers[k].pattern; k++)
			rc = rule_peer(res, i, &compiled[r], &rules[r].peers[k], pp);
		return rc;
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

const struct pc_judgement *pc_judged_server(const struct pc_judged *jd)
{
	return jd->client_bound && jd->has_cpu ? &jd->cpu : &jd->j;
}

/* Adjust the p-values of every test of the pairs that count together
 * (verdict.h): two a pair where both rows record server CPU. */
static int adjust(const struct pc_pairing *pp, struct pc_judged *js, size_t n,
		  const struct pc_decide *d)
{
	struct pc_judgement **fam = malloc((n ? 2 * n : 1) * sizeof(*fam));
	size_t m = 0;
	int rc;

	if (!fam)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		if (!pc_pair_kind_counts(pp->p[js[k].ours].peers[js[k].peer].kind))
			continue;
		fam[m++] = &js[k].j;
		if (js[k].has_cpu)
			fam[m++] = &js[k].cpu;
	}
	rc = pc_judge_adjust(fam, m, d);
	free(fam);
	return rc;
}

/* Both verdicts on one pair. Returns 0 or -ENOMEM. */
static int judge_one(const struct pc_results *res, const struct pc_peer *pr, size_t i,
		     const struct pc_decide *d, struct pc_judged *j)
{
	const struct pc_rbench *ours = &res->b[i], *other = &res->b[pr->idx];
	int rc = pc_judge_pair(ours, other, pr->scale, d, &j->j);

	if (rc == 0)
		rc = pc_judge_cpu(ours, other, pr->scale, d, &j->cpu);
	j->has_cpu = rc == 0;
	j->client_bound = pc_judge_client_bound(ours, other);
	return rc == -ENOENT ? 0 : rc;
}

int pc_pairing_judge(const struct pc_results *res, const struct pc_pairing *pp,
		     const struct pc_decide *d, struct pc_judged **out, size_t *n)
{
	size_t total = 0;
	int rc = 0;

	*n = 0;
	for (size_t i = 0; i < pp->n; i++)
		total += pp->p[i].npeers;
	if (!(*out = calloc(total ? total : 1, sizeof(**out))))
		return -ENOMEM;
	for (size_t i = 0; rc == 0 && i < pp->n; i++)
		for (size_t k = 0; rc == 0 && k < pp->p[i].npeers; k++) {
			struct pc_judged *j = &(*out)[(*n)++];
			j->ours = i;
			j->peer = k;
			rc = judge_one(res, &pp->p[i].peers[k], i, d, j);
		}
	if (rc == 0)
		rc = adjust(pp, *out, *n, d);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ---- the tables ------------------------------------------------------- */

/* Whether row i gets a line of its own in section sec: a row that only
 * serves as another row's peer is shown beside that row instead. */
static bool shown(const struct pc_report_ctx *c, size_t i, enum pc_section sec)
{
	const struct pc_pair *p = &c->pairs->p[i];

	return p->sec == sec && !(p->claimed && p->npeers == 0);
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
			counters_row(&t, c, c->pairs->p[i].peers[k].idx, done);
	}
	free(done);
}

const struct pc_judged *pc_report_judged_pair(const struct pc_report_ctx *c, size_t i, size_t k)
{
	for (size_t n = 0; n < c->njudged; n++)
		if (c->judged[n].ours == i && c->judged[n].peer == k)
			return &c->judged[n];
	return NULL;
}

const struct pc_judgement *pc_report_judged(const struct pc_report_ctx *c, size_t i, size_t k)
{
	const struct pc_judged *jd = pc_report_judged_pair(c, i, k);

	return jd ? &jd->j : NULL;
}

/* The mark of a verdict: a win green, a loss red, a result past a physical
 * limit a warning; variants and non-results stay plain. */
static enum pc_mark verdict_mark(enum pc_pair_kind kind, const struct pc_judgement *j)
{
	if (kind == PC_PAIR_LIMIT && j->out == PC_OUT_FASTER)
		return PC_MARK_WARN;
	if (kind != PC_PAIR_PEER)
		return PC_MARK_MUTED;
	return j->out == PC_OUT_FASTER ? PC_MARK_GOOD : j->out == PC_OUT_SLOWER ? PC_MARK_BAD
		: j->out == PC_OUT_UNTESTED ? PC_MARK_WARN : PC_MARK_MUTED;
}

void pc_report_verdict_text(const struct pc_report_ctx *c, enum pc_pair_kind kind,
			    const struct pc_judgement *j, char *buf, size_t len)
{
	const char *what = pc_outcome_name(j->out);
	const char *pre = kind == PC_PAIR_VARIANT ? "variant: "
			  : kind == PC_PAIR_REFERENCE ? "reference, not counted: " : "";

	if (j->out == PC_OUT_UNTESTED)
		snprintf(buf, len, "%suntested (fewer than 2 repetitions)", pre);
	else if (kind == PC_PAIR_LIMIT && j->out == PC_OUT_FASTER)
		snprintf(buf, len, "below the physical limit: a measurement problem");
	else if (kind == PC_PAIR_LIMIT && j->out == PC_OUT_SAME && !j->decided)
		snprintf(buf, len, "no significant difference from the limit (undecided)");
	else if (kind == PC_PAIR_LIMIT)
		snprintf(buf, len, "%s the limit", j->out == PC_OUT_SLOWER ? "slower than" : "at");
	else if (j->out == PC_OUT_SAME)
		snprintf(buf, len, "%s%s (%s)", pre, what, j->decided ? "within the margin"
			 : "undecided");
	else
		snprintf(buf, len, "%s%s", pre, what);
	(void)c;
}

void pc_report_pair_text(const struct pc_report_ctx *c, enum pc_pair_kind kind,
			 const struct pc_judged *jd, char *buf, size_t len)
{
	size_t n;

	pc_report_verdict_text(c, kind, &jd->j, buf, len);
	n = strlen(buf);
	if (jd->client_bound && n < len)
		snprintf(buf + n, len - n, ", client-bound");
}

/* "2.00x [1.90x, 2.10x]": the estimate and its interval. */
static void ratio_ci(const struct pc_judgement *j, char *buf, size_t len)
{
	if (j->out == PC_OUT_UNTESTED || !isfinite(j->hi))
		snprintf(buf, len, "%s", pc_fmt_ratio(j->speedup).s);
	else
		snprintf(buf, len, "%s [%s, %s]", pc_fmt_ratio(j->speedup).s,
			 pc_fmt_ratio(j->lo).s, pc_fmt_ratio(j->hi).s);
}

const char *pc_report_cpu_outcome(enum pc_outcome o)
{
	return o == PC_OUT_FASTER ? "less CPU" : o == PC_OUT_SLOWER ? "more CPU"
	       : pc_outcome_name(o);
}

/* The server CPU verdict's cell: "1.25x [1.20x, 1.30x], p 0.0079, adj.
 * 0.0200: less CPU"; a dash where a row lacks the figure. */
static void cpu_cell(struct pc_table *t, enum pc_pair_kind kind, const struct pc_judged *jd)
{
	char ratio[160];

	if (!jd->has_cpu) {
		pc_table_add(t, PC_MARK_MUTED, "%s", "-");
		return;
	}
	ratio_ci(&jd->cpu, ratio, sizeof(ratio));
	pc_table_add(t, verdict_mark(kind, &jd->cpu), "%s, p %s, adj. %s: %s", ratio,
		     pc_fmt_p(jd->cpu.p).s, pc_fmt_p(jd->cpu.p_adj).s,
		     pc_report_cpu_outcome(jd->cpu.out));
}

/* A row's time per item, with its failed repetitions when it has any:
 * "10.0 ns (1 of 5 failed)". */
static void time_cell(struct pc_table *t, const struct pc_rbench *b, double scale)
{
	if (b->nfailed)
		pc_table_add(t, PC_MARK_WARN, "%s (%zu of %zu failed)",
			     pc_fmt_time(scale * b->st.tpi_ns).s, b->nfailed,
			     b->nfailed + b->nsamples);
	else
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(scale * b->st.tpi_ns).s);
}

static void blank(struct pc_table *t, int n, const char *first)
{
	for (int k = 0; k < n; k++)
		pc_table_add(t, PC_MARK_MUTED, "%s", k == 0 ? first : "");
}

static void peer_row(struct pc_report_ctx *c, struct pc_table *t, size_t i, size_t k)
{
	const struct pc_rbench *b = &c->res->b[i];
	const struct pc_pair *p = &c->pairs->p[i];
	char text[128], ratio[160];

	if (k == 0) {
		pc_table_add(t, PC_MARK_CODE, "%s", b->name);
		time_cell(t, b, 1);
		pc_report_cv_cell(c, t, b);
	} else {
		blank(t, 3, "");
	}
	if (!p->npeers) {
		blank(t, 8, "no peer");
		return;
	}
	const struct pc_peer *pr = &p->peers[k];
	const struct pc_rbench *peer = &c->res->b[pr->idx];
	const struct pc_judged *jd = pc_report_judged_pair(c, i, k);

	pc_table_add(t, PC_MARK_CODE, "%s", peer->name);
	time_cell(t, peer, pr->scale);
	pc_report_cv_cell(c, t, peer);
	if (!jd) {
		blank(t, 5, "");
		return;
	}
	pc_report_pair_text(c, pr->kind, jd, text, sizeof(text));
	ratio_ci(&jd->j, ratio, sizeof(ratio));
	pc_table_add(t, verdict_mark(pr->kind, &jd->j), "%s", ratio);
	pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_p(jd->j.p).s);
	pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_p(jd->j.p_adj).s);
	pc_table_add(t, verdict_mark(pr->kind, &jd->j), "%s", text);
	cpu_cell(t, pr->kind, jd);
}

/* The peer (or limit) whose median time is lowest: what "the fastest peer"
 * means. -1 when the row has none; variants never count. */
long pc_report_fastest(const struct pc_report_ctx *c, size_t i)
{
	const struct pc_pair *p = &c->pairs->p[i];
	double best = INFINITY;
	long at = -1;

	for (size_t k = 0; k < p->npeers; k++) {
		double t = p->peers[k].scale * c->res->b[p->peers[k].idx].st.tpi_ns;
		if (p->peers[k].kind != PC_PAIR_VARIANT && t < best) {
			best = t;
			at = (long)k;
		}
	}
	return at;
}

/* Rows of one section, each with its peers; returns the chart of speedups
 * against the fastest peer, or NULL when no row has a peer. */
static struct pc_chart *pair_table(struct pc_report_ctx *c, enum pc_section sec)
{
	static const char *const head[] = { "Benchmark", "Time/item", "CV", "Against",
					    "Its time/item", "Its CV", "Speedup [95% CI]", "p",
					    "Adj. p", "Verdict", "Server CPU/request [95% CI]" };
	struct pc_table *t = pc_doc_table(c->doc, 11, head, "lrrlrrrrrll");
	struct pc_chart *ch = pc_report_chart(c, PC_CHART_BARS, "Speedup against the fastest peer",
					      "peer time / our time (log scale; right of 1x: ours "
					      "faster; coloured only where significant)", "");

	if (ch) {
		ch->barfmt = PC_BARFMT_RATIO;
		pc_chart_ref(ch, 1, "1x");
	}
	for (size_t i = 0; t && i < c->res->n; i++) {
		const struct pc_pair *p = &c->pairs->p[i];
		long f;
		if (!shown(c, i, sec))
			continue;
		for (size_t k = 0; k < (p->npeers ? p->npeers : 1); k++)
			peer_row(c, t, i, k);
		if ((f = pc_report_fastest(c, i)) < 0 || !ch)
			continue;
		const struct pc_judgement *j = pc_report_judged(c, i, (size_t)f);
		if (j && isfinite(j->speedup) && j->speedup > 0)
			pc_chart_bar(ch, c->res->b[i].name, j->speedup,
				     verdict_mark(p->peers[f].kind, j) == PC_MARK_MUTED
				     ? PC_MARK_NONE : verdict_mark(p->peers[f].kind, j));
	}
	if (ch && !ch->nbars) {
		pc_chart_free(ch);
		ch = NULL;
	}
	return ch;
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

/* The notes that apply to the rows shown in section sec. */
static void section_notes(struct pc_report_ctx *c, enum pc_section sec)
{
	struct pc_block *l = NULL;

	for (size_t k = 0; k < sizeof(notes) / sizeof(notes[0]); k++) {
		regex_t re;
		bool hit = false;
		if (regcomp(&re, notes[k].re, REG_EXTENDED | REG_NOSUB) != 0)
			continue; /* only a broken table entry can do this */
		for (size_t i = 0; !hit && i < c->res->n; i++)
			hit = shown(c, i, sec) && regexec(&re, c->res->b[i].name, 0, NULL, 0) == 0;
		regfree(&re);
		if (!hit)
			continue;
		if (!l)
			l = pc_doc_list(c->doc, PC_MARK_NONE);
		pc_doc_item(c->doc, l, "%s", notes[k].note);
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
		    const char *intro, const char *finding)
{
	struct pc_chart *ch;

	pc_doc_heading(c->doc, 2, "%s", title);
	if (!count_shown(c, sec)) {
		pc_doc_para(c->doc, "No rows of this kind in these results.");
	} else {
		pc_doc_para(c->doc, "%s", intro);
		ch = pair_table(c, sec);
		section_notes(c, sec);
		counters_table(c, sec);
		if (ch)
			pc_doc_chart(c->doc, ch);
		pc_report_tally(c, sec, finding);
	}
	if (sec == PC_SEC_MICRO)
		unpaired_peers(c);
}

void pc_report_benches(struct pc_report_ctx *c)
{
	section(c, PC_SEC_MICRO, "Micro benchmarks",
		"Our components beside their peers, measured in the same run. Speedup is the "
		"peer's time per item over ours (above 1x ours is faster): the Hodges-Lehmann "
		"estimate over the repetitions with its 95% interval. The verdict comes from a "
		"two-sided Mann-Whitney U test on the interleaved repetitions, its p adjusted "
		"over all the run's counted pairs (Benjamini-Hochberg, so that among the pairs "
		"called significant the expected share of false ones stays under alpha): faster "
		"or slower only where the adjusted p is below alpha. `percore bench` stops "
		"repeating a pair early when it is decided, or when even the repetition cap could "
		"not decide it (a futility stop: its interval would not shrink enough); such a "
		"pair stays undecided. Variants (our own alternatives, shown for what a design "
		"choice buys) and references (rows that leave work out or are measured another "
		"way) are shown and never counted.",
		"Micro benchmarks");
	section(c, PC_SEC_INTEGRATION, "Integration",
		"Whole paths across cores and over TCP: cross-core round trip and one-way "
		"latency beside a bare cache-line bounce (a reference, not counted; one-way rows "
		"against half its round trip) and a sleeping shard's wake-up cost beside the "
		"spinning one, cross-core throughput one message a slot beside a ring of 8-byte "
		"items (ck_ring) with the mesh's packing as a variant, the frame pipeline, and "
		"echo servers beside plain epoll and io_uring servers of the same idle "
		"behaviour: polling rows beside a busy-polling one, sleeping rows beside those "
		"that sleep. Where both rows of a pair record the server's CPU time per "
		"request, a second verdict judges it the same way (the other server's CPU per "
		"request over ours: above 1x ours spends less), its p adjusted with the rest. A "
		"verdict is client-bound where the load generator was at least 90% busy on "
		"either row: the throughput then measures the client, and the findings count "
		"and quote the server CPU verdict instead.",
		"Integration");
}
