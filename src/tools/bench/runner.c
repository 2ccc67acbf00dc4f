/* SPDX-License-Identifier: MIT */
/* percore bench: selecting benchmarks, calibrating them and running the
 * rounds.
 *
 * Calibration grows the iteration count from 1 until one trial lasts at
 * least min_time; the last trial already runs the final count for a full
 * repetition, so it is the discarded warm-up. Interleaving runs round 0
 * (every calibration) and then each round r runs every benchmark once, in
 * an order shuffled afresh per round from the seed: benchmarks compared
 * with each other see the same machine state, and no benchmark always runs
 * right after the same neighbour. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/clock.h"
#include "bench/registry.h"
#include "bench/runner.h"
#include "bench/shuffle.h"

void pc_bench_options_init(struct pc_bench_options *o)
{
	*o = (struct pc_bench_options){
		.repetitions = 5, .min_time = 0.2, .seed = 1, .interleave = true,
		.affinity = PC_BENCH_AFFINITY_MODE_ON, .max_cv = 0.05,
		.progress = stderr,
	};
}

static int check_options(const struct pc_bench_options *o, char *why, size_t len)
{
	if (o->repetitions < 1 || o->repetitions > 100000)
		snprintf(why, len, "repetitions must be 1 to 100000, not %u", o->repetitions);
	else if (o->max_repetitions > 100000)
		snprintf(why, len, "max-repetitions must be at most 100000, not %u",
			 o->max_repetitions);
	else if (!isfinite(o->budget_s) || o->budget_s < 0)
		snprintf(why, len, "budget must be 0 or more seconds, not %g", o->budget_s);
	else if (!isfinite(o->min_time) || o->min_time <= 0 || o->min_time > 3600)
		snprintf(why, len, "min-time must be above 0 and at most 3600 s, not %g",
			 o->min_time);
	else if (!isfinite(o->max_cv) || o->max_cv < 0)
		snprintf(why, len, "max-cv must be 0 or more, not %g", o->max_cv);
	else if (o->seed > PC_BENCH_MAX_SEED)
		snprintf(why, len, "seed must be at most %llu (a JSON number holds it exactly)",
			 (unsigned long long)PC_BENCH_MAX_SEED);
	else if ((unsigned)o->affinity > PC_BENCH_AFFINITY_MODE_BOTH)
		snprintf(why, len, "unknown affinity mode %d", (int)o->affinity);
	else
		return 0;
	return -EINVAL;
}

static bool is_threaded(const struct pc_bench *b)
{
	return b->threads > 1 || (b->flags & PC_BENCH_AFFINITY);
}

static int add_entry(struct pc_bench_session *s, const struct pc_bench *b,
		     const char *suffix, bool affinity, unsigned instance)
{
	struct pc_bench_entry *e = &s->e[s->n];

	*e = (struct pc_bench_entry){
		.bench = b, .threads = b->threads > 1 ? b->threads : 1,
		.threaded = is_threaded(b), .affinity = affinity,
		.instance = instance,
	};
	if (asprintf(&e->name, "%s%s", b->name, suffix) < 0) {
		e->name = NULL;
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

/* Add b's entries (one per affinity setting asked for) that the filter
 * matches. Returns how many were added, or -ENOMEM. */
static int select_bench(struct pc_bench_session *s, const struct pc_bench *b,
			const regex_t *re)
{
	static const struct { const char *suffix; bool on; } variants[] = {
		{ "/affinity:on", true }, { "/affinity:off", false },
	};
	enum pc_bench_affinity_mode m = s->opt.affinity;
	size_t before = s->n;
	unsigned instance = 0;

	if (!is_threaded(b)) {
		if (re && regexec(re, b->name, 0, NULL, 0))
			return 0;
		return add_entry(s, b, "", false, 0) ? -ENOMEM : 1;
	}
	for (int v = 0; v < 2; v++) {
		if ((v == 0 && m == PC_BENCH_AFFINITY_MODE_OFF) ||
		    (v == 1 && m == PC_BENCH_AFFINITY_MODE_ON))
			continue;
		if (add_entry(s, b, variants[v].suffix, variants[v].on, instance))
			return -ENOMEM;
		if (re && regexec(re, s->e[s->n - 1].name, 0, NULL, 0)) {
			free(s->e[--s->n].name);
			continue;
		}
		/* Only when both were asked: --affinity off asks for it alone. */
		if (!variants[v].on && (b->flags & PC_BENCH_UNPINNED_FULL) &&
		    m == PC_BENCH_AFFINITY_MODE_BOTH && !s->opt.full && !(b->flags & PC_BENCH_FULL)) {
			free(s->e[--s->n].name);
			s->full_only++;
			continue;
		}
		instance++;
	}
	return (int)(s->n - before);
}

/* Walk the registry, keeping what the filter and the suite select. */
static int select_all(struct pc_bench_session *s, const regex_t *re)
{
	const struct pc_bench *const *reg;
	size_t nreg = bench_registry(&reg);
	unsigned family = 0;

	s->e = calloc(nreg * 2 + 1, sizeof(*s->e));
	if (!s->e)
		return -ENOMEM;
	for (size_t i = 0; i < nreg; i++) {
		size_t first = s->n;
		int got = select_bench(s, reg[i], re);

		if (got < 0)
			return got;
		if (got && (reg[i]->flags & PC_BENCH_FULL) && !s->opt.full) {
			while (s->n > first)
				free(s->e[--s->n].name);
			s->full_only += (size_t)got;
			continue;
		}
		for (size_t k = first; k < s->n; k++)
			s->e[k].family = family;
		family += got > 0;
	}
	return 0;
}

static int compile_filter(const char *filter, regex_t *re, char *why, size_t len)
{
	char msg[128];
	int rc = regcomp(re, filter, REG_EXTENDED | REG_NOSUB);

	if (!rc)
		return 0;
	regerror(rc, re, msg, sizeof(msg));
	snprintf(why, len, "bad filter '%s': %s", filter, msg);
	regfree(re);
	return -EINVAL;
}

int pc_bench_session_create(const struct pc_bench_options *o,
			    struct pc_bench_session **out, char *why, size_t whylen)
{
	char scratch[256];
	struct pc_bench_session *s;
	bool filtered = o->filter && *o->filter;
	regex_t re;
	int rc;

	if (!why) {
		why = scratch;
		whylen = sizeof(scratch);
	}
	*out = NULL;
	rc = check_options(o, why, whylen);
	if (rc)
		return rc;
	if (filtered && (rc = compile_filter(o->filter, &re, why, whylen)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->opt = *o;
		s->filter = o->filter ? strdup(o->filter) : NULL;
		s->opt.filter = s->filter;
	}
	rc = !s || (o->filter && !s->filter) ? -ENOMEM : select_all(s, filtered ? &re : NULL);
	if (filtered)
		regfree(&re);
	if (rc) {
		snprintf(why, whylen, "out of memory");
		pc_bench_session_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

size_t pc_bench_session_count(const struct pc_bench_session *s)
{
	return s->n;
}

const char *pc_bench_session_name(const struct pc_bench_session *s, size_t i)
{
	return i < s->n ? s->e[i].name : NULL;
}

unsigned pc_bench_session_threads(const struct pc_bench_session *s, size_t i)
{
	return i < s->n ? s->e[i].threads : 0;
}

size_t pc_bench_session_full_only(const struct pc_bench_session *s)
{
	return s->full_only;
}

unsigned pc_bench_session_rounds(const struct pc_bench_session *s)
{
	return s->rounds;
}

double pc_bench_session_rep_cost_s(const struct pc_bench_session *s, size_t i)
{
	return i < s->n && !s->e[i].skip ? s->e[i].est_ns / 1e9 : 0;
}

double pc_bench_session_budget_left_s(const struct pc_bench_session *s)
{
	if (!(s->opt.budget_s > 0))
		return INFINITY;
	return s->opt.budget_s - (double)pc_elapsed(pc_now_ns(), s->started_ns) / 1e9;
}

const char *pc_bench_session_stop_reason(const struct pc_bench_session *s)
{
	return s->ran ? s->stop : NULL;
}

void pc_bench_session_destroy(struct pc_bench_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->e && i < s->n; i++) {
		free(s->e[i].name);
		free(s->e[i].samples);
	}
	free(s->e);
	free(s->filter);
	free(s);
}

uint64_t bench_next_iterations(uint64_t iters, double secs, double min_time)
{
	double factor = secs > 0 ? min_time * 1.2 / secs : PC_BENCH_MAX_GROWTH;
	double next;

	if (factor > PC_BENCH_MAX_GROWTH)
		factor = PC_BENCH_MAX_GROWTH;
	next = ceil((double)iters * factor);
	if (next >= (double)PC_BENCH_MAX_ITERATIONS)
		return PC_BENCH_MAX_ITERATIONS;
	return next > (double)iters ? (uint64_t)next : iters + 1;
}

static struct pc_bench_job job_of(const struct pc_bench_entry *e, uint64_t iters)
{
	return (struct pc_bench_job){
		.bench = e->bench, .threads = e->threads, .threaded = e->threaded,
		.affinity = e->affinity, .iterations = iters,
	};
}

/* On a terminal the progress line is rewritten in place; clear it before
 * printing anything else there. */
static bool progress_on_tty(const struct pc_bench_session *s)
{
	return s->opt.progress && isatty(fileno(s->opt.progress));
}

static void skip(const struct pc_bench_session *s, struct pc_bench_entry *e, int err)
{
	e->skip = err;
	e->nsamples = 0;
	if (progress_on_tty(s))
		fputs("\r\033[K", s->opt.progress);
	fprintf(stderr, "percore bench: skipping %s: %s\n", e->name, e->why);
}

static void calibrate(const struct pc_bench_session *s, struct pc_bench_entry *e)
{
	/* A trial whose run() takes far longer than its timed span (most of
	 * it paused, or a manual time that stays tiny) stops the growth. */
	double wall_cap = fmax(100 * s->opt.min_time, 1.0) * 1e9;
	struct pc_bench_sample smp;
	uint64_t iters = 1;
	int rc;

	for (;;) {
		struct pc_bench_job job = job_of(e, iters);

		rc = bench_measure(&job, &smp, e->why, sizeof(e->why));
		if (!rc && smp.failed) {
			snprintf(e->why, sizeof(e->why), "calibration failed: %s", smp.why);
			rc = -EIO;
		}
		if (rc) {
			skip(s, e, rc);
			return;
		}
		if (smp.time_ns >= s->opt.min_time * 1e9 || iters >= PC_BENCH_MAX_ITERATIONS ||
		    smp.run_wall_ns >= wall_cap)
			break;
		iters = bench_next_iterations(iters, smp.time_ns / 1e9, s->opt.min_time);
	}
	e->iterations = iters;
	e->est_ns = smp.total_wall_ns;
}

/* Room for one more sample; false when memory ran out (the entry is then
 * skipped with that reason). */
static bool grow(const struct pc_bench_session *s, struct pc_bench_entry *e)
{
	unsigned cap = e->cap ? e->cap * 2 : s->opt.repetitions;
	struct pc_bench_sample *ns;

	if (e->nsamples < e->cap)
		return true;
	if (!(ns = realloc(e->samples, cap * sizeof(*ns)))) {
		snprintf(e->why, sizeof(e->why), "out of memory for more repetitions");
		skip(s, e, -ENOMEM);
		return false;
	}
	e->samples = ns;
	e->cap = cap;
	return true;
}

/* A repetition after calibration failed: the samples the row has stand,
 * and this one is counted and reported, never silently dropped. */
static void failed(const struct pc_bench_session *s, struct pc_bench_entry *e, const char *why)
{
	e->nfailed++;
	snprintf(e->fail_why, sizeof(e->fail_why), "%s", why);
	if (progress_on_tty(s))
		fputs("\r\033[K", s->opt.progress);
	fprintf(stderr, "percore bench: %s: a repetition failed: %s\n", e->name, why);
}

static void repetition(const struct pc_bench_session *s, struct pc_bench_entry *e)
{
	struct pc_bench_job job = job_of(e, e->iterations);
	struct pc_bench_sample *smp;
	char why[sizeof(e->why)];
	int rc;

	if (e->skip || !grow(s, e))
		return;
	smp = &e->samples[e->nsamples];
	rc = bench_measure(&job, smp, why, sizeof(why));
	if (rc)
		failed(s, e, why);
	else if (smp->failed)
		failed(s, e, smp->why);
	else
		e->nsamples++;
}

/* Seconds the repetitions not yet run will take, from each benchmark's
 * calibrated cost (the mean cost where calibration is still to come). */
static double seconds_left(const struct pc_bench_session *s)
{
	double known = 0, left = 0;
	size_t nknown = 0, unknown = 0;

	for (size_t i = 0; i < s->n; i++) {
		const struct pc_bench_entry *e = &s->e[i];
		unsigned done = e->nsamples + e->nfailed;
		unsigned reps_left = e->skip || done >= s->opt.repetitions
				     ? 0 : s->opt.repetitions - done;

		if (e->est_ns > 0) {
			known += e->est_ns;
			nknown++;
			left += reps_left * e->est_ns;
		} else if (!e->skip) {
			unknown += reps_left;
		}
	}
	if (nknown)
		left += (double)unknown * known / (double)nknown;
	return left / 1e9;
}

static void progress(const struct pc_bench_session *s, const struct pc_bench_entry *e,
		     unsigned round, size_t pos)
{
	FILE *f = s->opt.progress;
	bool tty = progress_on_tty(s);

	if (!f)
		return;
	fprintf(f, "%spercore bench: ", tty ? "\r\033[K" : "");
	if (round == 0)
		fprintf(f, "calibrating");
	else if (round <= s->opt.repetitions)
		fprintf(f, "round %u of %u", round, s->opt.repetitions);
	else
		fprintf(f, "round %u (more for undecided rows)", round);
	fprintf(f, ", %zu/%zu %s", pos + 1, s->n, e->name);
	if (round <= s->opt.repetitions && (round > 0 || !s->opt.interleave)) {
		double left = ceil(seconds_left(s));

		if (left < 90)
			fprintf(f, ", about %.0f s left", left);
		else
			fprintf(f, ", about %.0f min left", ceil(left / 60));
	}
	fputs(tty ? "" : "\n", f);
	fflush(f);
}

static void run_more(struct pc_bench_session *s, size_t *order, struct pc_bench_rng *rng);

static void run_interleaved(struct pc_bench_session *s, size_t *order)
{
	struct pc_bench_rng rng;

	bench_rng_seed(&rng, s->opt.seed);
	for (unsigned r = 0; r <= s->opt.repetitions; r++) {
		s->rounds = r;
		bench_shuffle(order, s->n, &rng);
		for (size_t k = 0; k < s->n; k++) {
			struct pc_bench_entry *e = &s->e[order[k]];

			if (e->skip)
				continue;
			progress(s, e, r, k);
			if (r == 0)
				calibrate(s, e);
			else
				repetition(s, e);
		}
	}
	for (size_t i = 0; i < s->n; i++)
		order[i] = i;
	run_more(s, order, &rng);
}

/* The entries that want another repetition and can have one, in *want;
 * how many. *asked: whether any entry wanted one, capped or not. */
static size_t wanted(struct pc_bench_session *s, bool *want, bool *asked)
{
	size_t n = 0;

	memset(want, 0, s->n * sizeof(*want));
	if (s->opt.more) {
		s->opt.more(s, want, s->opt.more_arg);
	} else {
		for (size_t i = 0; i < s->n; i++)
			want[i] = true;
	}
	*asked = false;
	for (size_t i = 0; i < s->n; i++) {
		*asked |= want[i] && !s->e[i].skip;
		/* failed repetitions count: a row that keeps failing ends too */
		want[i] = want[i] && !s->e[i].skip &&
			  s->e[i].nsamples + s->e[i].nfailed < s->opt.max_repetitions;
		n += want[i];
	}
	return n;
}

/* Seconds one repetition of each wanted entry takes together. */
static double round_cost(const struct pc_bench_session *s, const bool *want)
{
	double ns = 0;

	for (size_t i = 0; i < s->n; i++)
		ns += want[i] ? s->e[i].est_ns : 0;
	return ns / 1e9;
}

/* After the minimum rounds: more interleaved rounds of the entries the
 * caller still wants, while the budget allows. The first round that would
 * end past the budget is not started, so a run ends near its budget rather
 * than a round after it. */
static void run_more(struct pc_bench_session *s, size_t *order, struct pc_bench_rng *rng)
{
	bool *want = calloc(s->n + 1, sizeof(*want));

	s->stop = "repetitions";
	if (s->opt.max_repetitions <= s->opt.repetitions)
		goto out;
	s->stop = "max_repetitions";
	if (!want)
		goto out; /* no memory for more: the minimum stands */
	for (;;) {
		bool asked;
		size_t n = wanted(s, want, &asked), k = 0;

		if (!n) {
			s->stop = asked ? "max_repetitions" : "decided";
			break;
		}
		if (round_cost(s, want) > pc_bench_session_budget_left_s(s)) {
			s->stop = "budget";
			break;
		}
		for (size_t i = 0; i < s->n; i++)
			if (want[i])
				order[k++] = i;
		bench_shuffle(order, k, rng);
		s->rounds++;
		for (size_t j = 0; j < k; j++) {
			progress(s, &s->e[order[j]], s->rounds, j);
			repetition(s, &s->e[order[j]]);
		}
	}
out:
	free(want);
}

static void run_in_turn(struct pc_bench_session *s, size_t *order)
{
	struct pc_bench_rng rng;

	for (size_t k = 0; k < s->n; k++) {
		struct pc_bench_entry *e = &s->e[k];

		progress(s, e, 0, k);
		calibrate(s, e);
		for (unsigned r = 1; r <= s->opt.repetitions && !e->skip; r++) {
			progress(s, e, r, k);
			repetition(s, e);
		}
	}
	s->rounds = s->opt.repetitions;
	bench_rng_seed(&rng, s->opt.seed);
	run_more(s, order, &rng);
}

int pc_bench_session_run(struct pc_bench_session *s)
{
	size_t *order = calloc(s->n + 1, sizeof(*order));
	int measured = 0;

	if (s->ran) {
		free(order);
		return -EALREADY;
	}
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		order[i] = i;
		s->e[i].samples = calloc(s->opt.repetitions, sizeof(*s->e[i].samples));
		s->e[i].cap = s->opt.repetitions;
		if (!s->e[i].samples) {
			free(order);
			return -ENOMEM;
		}
	}
	s->ran = true;
	s->started_ns = pc_now_ns();
	if (s->opt.interleave)
		run_interleaved(s, order);
	else
		run_in_turn(s, order);
	s->finished_ns = pc_now_ns();
	if (progress_on_tty(s))
		fputs("\r\033[K", s->opt.progress);
	for (size_t i = 0; i < s->n; i++)
		measured += !s->e[i].skip;
	free(order);
	return measured;
}
