/* SPDX-License-Identifier: MIT */
/* percore report: the noise experiment.
 *
 * Noise/... benchmarks do a fixed piece of work with an untimed idle pause
 * between iterations, run unpinned and pinned (/affinity:off, /affinity:on)
 * and, from a second file recorded with --pm-qos, with the PM QoS request
 * held (/pm_qos:on, see results.h). The section shows the spread of each
 * configuration, says which setting reduced it, puts that beside what the
 * environment audit found, and lists the tune steps with whether they can
 * apply on this machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "report.h"
#include "svg.h"

#define MAX_NOISE 8

/* Two CVs estimated from n repetitions each differ by chance by a factor
 * well above 1.25 (the relative error of one is about 1/sqrt(2(n-1)), a
 * third for 5 repetitions), so only a factor of 2 is called an effect. */
#define EFFECT_FACTOR 2.0

enum { PIN_OFF, PIN_ON, PIN_NONE, NPIN };

struct noise {
	char base[128];
	long at[NPIN][2];       /* [pinning][pm_qos] -> benchmark index or -1 */
};

static const char *config_name(int pin, int qos)
{
	static const char *const names[NPIN][2] = {
		{ "unpinned", "unpinned + PM QoS" },
		{ "pinned", "pinned + PM QoS" },
		{ "default", "default + PM QoS" },
	};

	return names[pin][qos];
}

static size_t collect(const struct pc_report_ctx *c, struct noise *n)
{
	size_t nn = 0;

	for (size_t i = 0; i < c->res->n; i++) {
		const char *name = c->res->b[i].name;
		char base[128];
		size_t k;
		if (strncmp(name, "Noise/", 6))
			continue;
		pc_report_base_name(name, base, sizeof(base));
		for (k = 0; k < nn && strcmp(n[k].base, base); k++)
			;
		if (k == nn) {
			if (nn == MAX_NOISE)
				continue;
			snprintf(n[nn].base, sizeof(n[nn].base), "%s", base);
			for (int p = 0; p < NPIN; p++)
				n[nn].at[p][0] = n[nn].at[p][1] = -1;
			nn++;
		}
		int pin = strstr(name, "/affinity:on") ? PIN_ON
			: strstr(name, "/affinity:off") ? PIN_OFF : PIN_NONE;
		n[k].at[pin][strstr(name, "/pm_qos:on") != NULL] = (long)i;
	}
	return nn;
}

static const struct pc_rbench *get(const struct pc_report_ctx *c, const struct noise *n,
				   int pin, int qos)
{
	return n->at[pin][qos] < 0 ? NULL : &c->res->b[n->at[pin][qos]];
}

static void table(struct pc_report_ctx *c, const struct noise *n, size_t nn)
{
	static const char *const head[] = { "Benchmark", "Configuration", "Reps", "Median",
					    "Mean", "Stddev", "CV" };
	struct pc_table *t = pc_doc_table(c->doc, 7, head, "llrrrrr");

	for (size_t k = 0; t && k < nn; k++)
		for (int qos = 0; qos < 2; qos++)
			for (int pin = 0; pin < NPIN; pin++) {
				const struct pc_rbench *b = get(c, &n[k], pin, qos);
				if (!b)
					continue;
				pc_table_add(t, PC_MARK_CODE, "%s", n[k].base);
				pc_table_add(t, PC_MARK_NONE, "%s", config_name(pin, qos));
				pc_table_add(t, PC_MARK_NONE, "%zu", b->st.n);
				pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(b->st.real_ns).s);
				pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(b->st.mean_ns).s);
				pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(b->st.stddev_ns).s);
				pc_report_cv_cell(c, t, b);
			}
}

/* Whether changing one setting (pinning, or PM QoS) moved the CV, over
 * every pair of configurations that differ only in that setting. Appends
 * "A% -> B% (context)" for each pair to the list and writes a verdict into
 * buf; returns buf, or NULL when no pair was measured. */
static const char *effect(const struct pc_report_ctx *c, const struct noise *n, bool qos_axis,
			  struct pc_block *l, const char *what, char *buf, size_t len)
{
	int lower = 0, higher = 0, pairs = 0;

	for (int other = 0; other < (qos_axis ? NPIN : 2); other++) {
		const struct pc_rbench *a = qos_axis ? get(c, n, other, 0) : get(c, n, PIN_OFF, other);
		const struct pc_rbench *b = qos_axis ? get(c, n, other, 1) : get(c, n, PIN_ON, other);
		if (!a || !b || !isfinite(a->st.cv) || !isfinite(b->st.cv))
			continue;
		pairs++;
		lower += b->st.cv * EFFECT_FACTOR <= a->st.cv;
		higher += b->st.cv >= a->st.cv * EFFECT_FACTOR;
		pc_doc_item(c->doc, l, "%s: CV %s \xe2\x86\x92 %s (%s).", what,
			    pc_fmt_pct(a->st.cv).s, pc_fmt_pct(b->st.cv).s,
			    qos_axis ? config_name(other, 0) : (other ? "with PM QoS" : "without PM QoS"));
	}
	if (!pairs)
		return NULL;
	if (lower && higher)
		snprintf(buf, len, "gave contradictory results");
	else if (lower || higher)
		snprintf(buf, len, "%s the noise%s", lower ? "reduced" : "increased",
			 lower + higher == pairs ? "" : pairs == 2 ? " in one of two comparisons"
			 : " in some comparisons");
	else
		snprintf(buf, len, "made no clear difference");
	return buf;
}

static void findings(struct pc_report_ctx *c, const struct noise *n)
{
	struct pc_block *l = pc_doc_list(c->doc, PC_MARK_NONE);
	char pbuf[80], qbuf[80];
	const char *pin = effect(c, n, false, l, "Pinning", pbuf, sizeof(pbuf));
	const char *qos = effect(c, n, true, l, "PM QoS", qbuf, sizeof(qbuf));
	const struct pc_rbench *q = NULL;
	int qp = 0, qq = 0;

	for (int p = 0; p < NPIN; p++)
		for (int k = 0; k < 2; k++) {
			const struct pc_rbench *b = get(c, n, p, k);
			if (b && isfinite(b->st.cv) && (!q || b->st.cv < q->st.cv)) {
				q = b;
				qp = p;
				qq = k;
			}
		}
	if (!q)
		return;
	pc_doc_para(c->doc, "On this machine, for `%s`: pinning %s; PM QoS %s. Quietest: "
		    "**%s** (CV %s). A factor of %.0f between two CVs is needed to call an "
		    "effect: a CV from %zu repetitions is itself uncertain by about %.0f%%.",
		    n->base, pin ? pin : "was not measured both ways",
		    qos ? qos : "was not measured both ways (make bench records a second file "
				"with --pm-qos)",
		    config_name(qp, qq), pc_fmt_pct(q->st.cv).s, EFFECT_FACTOR, q->st.n,
		    q->st.n > 1 ? 100 / sqrt(2.0 * (double)(q->st.n - 1)) : 100.0);
	pc_report_finding(c, "Noise experiment (`%s`): quietest **%s** (CV %s); pinning %s, "
			     "PM QoS %s.", n->base, config_name(qp, qq), pc_fmt_pct(q->st.cv).s,
			  pin ? pin : "not compared", qos ? qos : "not compared");
}

static void cv_chart(struct pc_report_ctx *c, const struct noise *n, size_t nn)
{
	struct pc_chart *ch = pc_report_chart(c, PC_CHART_BARS, "Run-to-run spread per configuration",
					      "CV of time per iteration", "");
	char label[320];

	if (!ch)
		return;
	ch->barfmt = PC_BARFMT_PCT;
	snprintf(label, sizeof(label), "noisy above %s", pc_fmt_pct(c->max_cv).s);
	pc_chart_ref(ch, c->max_cv, label);
	for (size_t k = 0; k < nn; k++)
		for (int qos = 0; qos < 2; qos++)
			for (int pin = 0; pin < NPIN; pin++) {
				const struct pc_rbench *b = get(c, &n[k], pin, qos);
				if (!b || !isfinite(b->st.cv))
					continue;
				snprintf(label, sizeof(label), "%.127s, %s", n[k].base, config_name(pin, qos));
				pc_chart_bar(ch, label, b->st.cv,
					     pc_report_noisy(c, b) ? PC_MARK_WARN : PC_MARK_GOOD);
			}
	pc_doc_chart(c->doc, ch);
}

/* Audit checks that explain run-to-run noise, shown beside the result. */
static const char *const noise_checks[] = {
	"vm.hypervisor", "cpu.governor", "cpu.turbo", "cpu.idle_states", "cpu.pm_qos",
	"sched.isolated", "irq.irqbalance", "load.busy_processes",
};

static void audit_context(struct pc_report_ctx *c)
{
	struct pc_block *l = NULL;

	for (size_t i = 0; i < sizeof(noise_checks) / sizeof(noise_checks[0]); i++) {
		const cJSON *e = pc_report_audit(c, noise_checks[i]), *v;
		if (!e)
			continue;
		if (!l) {
			pc_doc_para(c->doc, "What the environment audit found that bears on noise:");
			l = pc_doc_list(c->doc, PC_MARK_NONE);
		}
		v = cJSON_GetObjectItemCaseSensitive(e, "value");
		pc_doc_item(c->doc, l, "`%s`: %s%s%s", noise_checks[i], pc_report_audit_str(e, "status"),
			    cJSON_IsString(v) ? " \xe2\x80\x94 " : "",
			    cJSON_IsString(v) ? v->valuestring : "");
	}
	if (!l)
		pc_doc_para(c->doc, "These results carry no environment audit to set this beside.");
}

/* The measurement profile `percore tune` applies, and the audit check that
 * tells whether each step can apply here. */
static const struct { const char *step, *check; } tune_steps[] = {
	{ "Performance CPU governor", "cpu.governor" },
	{ "Turbo off (--turbo-off)", "cpu.turbo" },
	{ "SMT off (--smt-off)", "cpu.smt" },
	{ "Transparent huge pages: madvise", "mm.thp" },
	{ "ASLR off", "kernel.aslr" },
	{ "NMI watchdog off", "kernel.nmi_watchdog" },
};

/* The tune steps that cannot apply here and those that would change
 * something, named in the key findings. */
struct tune_tally {
	char na[256], apply[256];
	int nna, napply;
};

static void tally_step(struct tune_tally *t, const char *setting, enum pc_mark m)
{
	char *list = m == PC_MARK_MUTED ? t->na : m == PC_MARK_WARN ? t->apply : NULL;
	int *n = m == PC_MARK_MUTED ? &t->nna : &t->napply;
	size_t l;

	if (!list)
		return;
	l = strlen(list);
	snprintf(list + l, 256 - l, "%s`%s`", (*n)++ ? ", " : "", setting);
}

static void tally_finding(struct pc_report_ctx *c, const struct tune_tally *t)
{
	if (t->nna || t->napply)
		pc_report_finding(c, "Tune steps: %d not applicable here%s%s%s, %d would change "
				     "something%s%s%s.", t->nna, t->nna ? " (" : "", t->na,
				  t->nna ? ")" : "", t->napply, t->napply ? " (" : "", t->apply,
				  t->napply ? ")" : "");
}

static enum pc_mark tune_mark(const char *result)
{
	if (!strcmp(result, "already set"))
		return PC_MARK_GOOD;
	if (!strcmp(result, "would apply") || !strcmp(result, "applied"))
		return PC_MARK_WARN;
	if (!strcmp(result, "failed"))
		return PC_MARK_BAD;
	return PC_MARK_MUTED; /* not applicable, not requested */
}

/* The steps as `percore tune --dry-run` judged them on this machine. */
static void tune_from_dry_run(struct pc_report_ctx *c)
{
	static const char *const head[] = { "Setting", "Result", "Now", "Profile", "Reason" };
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(c->tune, "steps"), *e;
	struct tune_tally ty = { .na = "" };
	struct pc_table *t;

	pc_doc_para(c->doc, "As `percore tune --dry-run` judged them on the measured machine:");
	if (!(t = pc_doc_table(c->doc, 5, head, "lllll")))
		return;
	cJSON_ArrayForEach(e, steps) {
		const char *res = pc_report_audit_str(e, "result");
		const char *old = pc_report_audit_str(e, "old"), *new = pc_report_audit_str(e, "new");

		pc_table_add(t, PC_MARK_CODE, "%s", pc_report_audit_str(e, "setting"));
		pc_table_add(t, tune_mark(res), "%s", res);
		/* "not requested" (SMT, turbo without their flag) is a choice, not
		 * a limit of the machine */
		if (strcmp(res, "not requested"))
			tally_step(&ty, pc_report_audit_str(e, "setting"), tune_mark(res));
		pc_table_add(t, PC_MARK_NONE, "%s", *old ? old : PC_FMT_NONE);
		pc_table_add(t, PC_MARK_NONE, "%s", *new ? new : PC_FMT_NONE);
		pc_table_add(t, PC_MARK_NONE, "%s", pc_report_audit_str(e, "reason"));
	}
	tally_finding(c, &ty);
}

static void tune_table(struct pc_report_ctx *c)
{
	static const char *const head[] = { "Tune step", "Check", "Status", "Here" };
	struct tune_tally ty = { .na = "" };
	struct pc_table *t;

	pc_doc_heading(c->doc, 3, "Tune steps on this machine");
	if (c->tune) {
		tune_from_dry_run(c);
		return;
	}
	if (!cJSON_IsArray(pc_results_get(c->res, 0, "percore.audit"))) {
		pc_doc_para(c->doc, "No audit in these results: whether each tune step applies "
			    "here is unknown.");
		return;
	}
	pc_doc_para(c->doc, "Judged from the audit (`percore report --tune` takes what "
		    "`percore tune --dry-run --json` says instead):");
	if (!(t = pc_doc_table(c->doc, 4, head, "llll")))
		return;
	for (size_t i = 0; i < sizeof(tune_steps) / sizeof(tune_steps[0]); i++) {
		const cJSON *e = pc_report_audit(c, tune_steps[i].check);
		const char *st = e ? pc_report_audit_str(e, "status") : "";
		const cJSON *v = e ? cJSON_GetObjectItemCaseSensitive(e, "value") : NULL;

		pc_table_add(t, PC_MARK_NONE, "%s", tune_steps[i].step);
		pc_table_add(t, PC_MARK_CODE, "%s", tune_steps[i].check);
		pc_table_add(t, PC_MARK_NONE, "%s", e ? st : "not audited");
		if (!e) {
			pc_table_add(t, PC_MARK_MUTED, "unknown: not audited");
		} else if (!strcmp(st, "ok")) {
			pc_table_add(t, PC_MARK_GOOD, "no change needed");
		} else if (!strcmp(st, "warn")) {
			pc_table_add(t, PC_MARK_WARN, "applicable: percore tune changes it");
			tally_step(&ty, tune_steps[i].check, PC_MARK_WARN);
		} else {
			pc_table_add(t, PC_MARK_MUTED, "not applicable here (%s)",
				     cJSON_IsString(v) && *v->valuestring ? v->valuestring : "not exposed");
			tally_step(&ty, tune_steps[i].check, PC_MARK_MUTED);
		}
	}
	tally_finding(c, &ty);
}

/* A run that asked for PM QoS and could not hold it measured without it:
 * say so, since its rows then carry no /pm_qos:on. */
static void pm_qos_failures(struct pc_report_ctx *c)
{
	for (unsigned f = 0; f < c->res->nfiles; f++) {
		const cJSON *req = pc_results_get(c->res, f, "percore.pm_qos.requested");
		const cJSON *held = pc_results_get(c->res, f, "percore.pm_qos.held");
		const cJSON *why = pc_results_get(c->res, f, "percore.pm_qos.reason");
		if (cJSON_IsTrue(req) && cJSON_IsFalse(held))
			pc_doc_para(c->doc, "**PM QoS was requested but not held** in input %u (%s): "
				    "its rows measured without it.", f + 1,
				    cJSON_IsString(why) ? why->valuestring : "no reason given");
	}
}

void pc_report_noise(struct pc_report_ctx *c)
{
	struct noise n[MAX_NOISE];
	size_t nn = collect(c, n);

	pc_doc_heading(c->doc, 2, "Noise experiment");
	if (!nn) {
		pc_doc_para(c->doc, "No `Noise/...` rows in these results.");
		tune_table(c);
		return;
	}
	pc_doc_para(c->doc, "A fixed amount of work per iteration with an untimed idle pause "
		    "between iterations: a core that idles loses its clock and its cache. The "
		    "spread across repetitions of each configuration shows which setting keeps "
		    "measurements steady on this machine.");
	pm_qos_failures(c);
	table(c, n, nn);
	cv_chart(c, n, nn);
	for (size_t k = 0; k < nn; k++)
		findings(c, &n[k]);
	audit_context(c);
	tune_table(c);
}
