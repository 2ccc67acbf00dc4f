/* SPDX-License-Identifier: MIT */
/* The log: both line formats, field quoting, the threshold, a flood that
 * drops (lines written + dropped == lines attempted, and the drop is
 * announced), reopening on SIGHUP, an idle writer waking less and less
 * often while still writing what comes later, and each bad configuration
 * refused with its reason. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log_util.h"
#include "testmain.h"

static void open_file(const char *path, enum pc_log_format format, uint32_t ring)
{
	struct pc_log_cfg c;
	char err[128];

	pc_log_cfg_init(&c);
	c.file = path;
	c.format = format;
	c.ring_size = ring;
	c.level = PC_LOG_DEBUG;
	assert_int_equal(pc_log_open(&c, err, sizeof(err)), 0);
}

static void log_sample(void)
{
	struct pc_log_field f[] = {
		PC_LOG_STR("path", "/a b/\"c\"\n"),
		PC_LOG_STR("word", "plain"),
		PC_LOG_STR("empty", ""),
		PC_LOG_INT("delta", -42),
		PC_LOG_UINT("bytes", 18446744073709551615ull),
		PC_LOG_STR("bad key=", "x"),
	};

	pc_log_fields(PC_LOG_WARN, f, PC_ARRAY_LEN(f), "hello %s %d", "world", 7);
}

/* The line after its timestamp (ts=... or {"ts":"..."), which must be a
 * UTC instant with microseconds. */
static const char *after_ts(const char *line, const char *lead)
{
	size_t k = strlen(lead);

	assert_memory_equal(line, lead, k);
	/* 2026-12-01T16:12:40.123456Z */
	assert_int_equal(line[k + 4], '-');
	assert_int_equal(line[k + 10], 'T');
	assert_int_equal(line[k + 19], '.');
	assert_int_equal(line[k + 26], 'Z');
	return line + k + 27;
}

/* Text that is not UTF-8 comes out as U+FFFD, each bad byte once; valid
 * sequences pass unchanged: every line is valid JSON. */
static void bad_utf8_replaced(void **state)
{
	char path[128];
	struct pc_log_field f[] = {
		/* ok: e-acute, euro sign, an emoji; bad: a stray continuation, an
		 * overlong slash, a surrogate, a cut-short sequence */
		PC_LOG_STR("v", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xc0\xaf|\xed\xa0\x80|\xe2\x82"),
	};
	char *text;
	cJSON *o;
	(void)state;

	log_tmp_path(path, sizeof(path), "utf8");
	open_file(path, PC_LOG_JSON, 0);
	pc_log_fields(PC_LOG_INFO, f, 1, "x");
	pc_log_close();
	text = log_slurp(path);
	assert_non_null(strstr(text, "\"v\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\\ufffd|"
				     "\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\""));
	o = cJSON_Parse(text);
	assert_non_null(o);
	cJSON_Delete(o);
	free(text);
	unlink(path);
}

/* The sample line written in format, read back (malloc'd). */
static char *sample_in(enum pc_log_format format)
{
	char path[128];
	char *text;

	log_tmp_path(path, sizeof(path), pc_log_format_name(format));
	open_file(path, format, 0);
	log_sample();
	assert_int_equal(pc_log_flush(), 0);
	pc_log_close();
	text = log_slurp(path);
	unlink(path);
	return text;
}

static void logfmt_line(void **state)
{
	char *text = sample_in(PC_LOG_LOGFMT);
	(void)state;

	assert_string_equal(after_ts(text, "ts="),
			    " level=warn shard=-1 msg=\"hello world 7\" path=\"/a b/\\\"c\\\"\\n\""
			    " word=plain empty=\"\" delta=-42 bytes=18446744073709551615"
			    " bad_key_=x\n");
	free(text);
}

static void json_line(void **state)
{
	char *text = sample_in(PC_LOG_JSON), *nl;
	cJSON *o;
	(void)state;

	assert_string_equal(after_ts(text, "{\"ts\":\""),
			    "\",\"level\":\"warn\",\"shard\":-1,\"msg\":\"hello world 7\","
			    "\"path\":\"/a b/\\\"c\\\"\\n\",\"word\":\"plain\",\"empty\":\"\","
			    "\"delta\":-42,\"bytes\":18446744073709551615,\"bad_key_\":\"x\"}\n");
	/* And a JSON reader agrees. */
	nl = strchr(text, '\n');
	*nl = '\0';
	o = cJSON_Parse(text);
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "path")->valuestring, "/a b/\"c\"\n");
	assert_int_equal(cJSON_GetObjectItem(o, "delta")->valuedouble, -42);
	cJSON_Delete(o);
	free(text);
}

static void log_from_shard(void *arg)
{
	(void)arg;
	pc_log(PC_LOG_INFO, "from the shard");
	pc_log(PC_LOG_DEBUG, "below the threshold");
}

/* A shard's line carries its number; the threshold holds lines back. */
static void shard_line_and_threshold(void **state)
{
	char path[128];
	struct pc_log_cfg c;
	struct pc_engine *e;
	char *text;
	(void)state;

	log_tmp_path(path, sizeof(path), "shard");
	pc_log_cfg_init(&c);
	c.file = path;
	assert_int_equal(pc_log_open(&c, NULL, 0), 0);
	e = log_engine(2, 0);
	assert_non_null(e);
	assert_int_equal(log_on_shard(e, 1, log_from_shard, NULL), 0);
	assert_false(pc_log_enabled(PC_LOG_DEBUG));
	assert_int_equal(pc_log_flush(), 0);
	text = log_slurp(path);
	assert_non_null(strstr(text, " level=info shard=1 msg=\"from the shard\"\n"));
	assert_null(strstr(text, "below the threshold"));
	free(text);
	pc_engine_destroy(e);
	pc_log_close();
	unlink(path);
}

#define FLOOD 5000

static void flood(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < FLOOD; i++) {
		struct pc_log_field f[] = { PC_LOG_UINT("seq", i) };

		pc_log_fields(PC_LOG_INFO, f, 1, "flood");
	}
}

static void after_flood(void *arg)
{
	(void)arg;
	pc_log(PC_LOG_INFO, "after");
}

/* Sum of the dropped=N fields of "dropped N lines" lines of shard 0. */
static uint64_t announced_drops(const char *text, const char **first)
{
	const char *key = "shard=0 msg=\"dropped ";
	uint64_t sum = 0;

	*first = NULL;
	for (const char *p = text; (p = strstr(p, key)); p += strlen(key)) {
		const char *d = strstr(p, " dropped=");

		assert_non_null(d);
		sum += strtoull(d + 9, NULL, 10);
		if (!*first)
			*first = p;
	}
	return sum;
}

/* The writer wakes every few milliseconds; a 4 KiB ring holds about 60
 * of these lines, so 5000 in a burst overflow it. Every line is either
 * written or counted, the count is announced in the ring's next line,
 * and the lines written keep their order. */
static void flood_drops_and_counts(void **state)
{
	struct pc_shard_stats st;
	char path[128];
	struct pc_engine *e;
	const char *first;
	unsigned written;
	long last = -1;
	char *text;
	(void)state;

	log_tmp_path(path, sizeof(path), "flood");
	open_file(path, PC_LOG_LOGFMT, 4096);
	e = log_engine(1, 0);
	assert_non_null(e);
	assert_int_equal(log_on_shard(e, 0, flood, NULL), 0);
	assert_int_equal(pc_log_flush(), 0);
	assert_int_equal(log_on_shard(e, 0, after_flood, NULL), 0);
	assert_int_equal(pc_log_flush(), 0);
	assert_int_equal(pc_engine_stats_read(e, 0, &st), 0);
	text = log_slurp(path);
	written = log_count(text, "msg=flood");
	assert_true(st.log_dropped > 0);
	assert_int_equal(written + st.log_dropped, FLOOD);
	assert_int_equal(announced_drops(text, &first), st.log_dropped);
	assert_non_null(first);
	assert_true(first < strstr(text, "msg=after"));
	for (const char *p = text; (p = strstr(p, "msg=flood seq=")); p++) {
		long seq = strtol(p + 14, NULL, 10);

		assert_true(seq > last);
		last = seq;
	}
	free(text);
	pc_engine_destroy(e);
	pc_log_close();
	unlink(path);
}

/* logrotate: move the file away, send SIGHUP; later lines go to a new
 * file by the old name, earlier ones stay in the moved file. */
/* The voluntary context switches of every thread of this process but
 * the caller: each is a wait the thread began, so here the writer's
 * wake-ups (the test runs no other thread). */
static unsigned long others_waits(void)
{
	char path[300], line[128];
	unsigned long n = 0;
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	assert_non_null(dir);
	while ((d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.' || atoi(d->d_name) == (int)gettid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* a thread that ended meanwhile */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				n += strtoul(line + 24, NULL, 10);
		fclose(f);
	}
	closedir(dir);
	return n;
}

/* With nothing to write, the writer backs off: over one second it wakes
 * far fewer than the hundred times its 10 ms period would make (a
 * crowded machine only delays timed waits, so it cannot wake more). A
 * line logged after the quiet spell still arrives without a flush. */
static void idle_writer_backs_off(void **state)
{
	char path[128], *text = NULL;
	unsigned long before, waits;
	(void)state;

	log_tmp_path(path, sizeof(path), "idle");
	open_file(path, PC_LOG_LOGFMT, 0);
	before = others_waits();
	usleep(1000000);
	waits = others_waits() - before;
	if (waits >= 40)
		fprintf(stderr, "the idle writer waited %lu times in 1 s\n", waits);
	assert_true(waits < 40);
	pc_log(PC_LOG_INFO, "after the quiet spell");
	for (int i = 0; i < 1000; i++) {
		free(text);
		text = log_slurp(path);
		if (text && strstr(text, "after the quiet spell"))
			break;
		usleep(10000);
	}
	assert_non_null(text);
	assert_non_null(strstr(text, "after the quiet spell"));
	free(text);
	pc_log_close();
	unlink(path);
}

static void sighup_reopens(void **state)
{
	char path[128], moved[160];
	char *old_text, *new_text;
	(void)state;

	signal(SIGHUP, SIG_DFL);
	log_tmp_path(path, sizeof(path), "hup");
	snprintf(moved, sizeof(moved), "%s.1", path);
	open_file(path, PC_LOG_LOGFMT, 0);
	pc_log(PC_LOG_INFO, "before rotation");
	assert_int_equal(pc_log_flush(), 0);
	assert_int_equal(rename(path, moved), 0);
	assert_int_equal(raise(SIGHUP), 0);
	pc_log(PC_LOG_INFO, "after rotation");
	assert_int_equal(pc_log_flush(), 0);
	old_text = log_slurp(moved);
	new_text = log_slurp(path);
	assert_non_null(strstr(old_text, "before rotation"));
	assert_null(strstr(old_text, "after rotation"));
	assert_non_null(strstr(new_text, "after rotation"));
	assert_null(strstr(new_text, "before rotation"));
	pc_log_close();
	/* Closed: SIGHUP has its default action back. */
	struct sigaction cur;
	assert_int_equal(sigaction(SIGHUP, NULL, &cur), 0);
	assert_true(cur.sa_handler == SIG_DFL);
	free(old_text);
	free(new_text);
	unlink(path);
	unlink(moved);
}

static void refused(const struct pc_log_cfg *c, int rc, const char *why)
{
	char err[128] = "";

	assert_int_equal(pc_log_open(c, err, sizeof(err)), rc);
	assert_non_null(strstr(err, why));
}

/* Each bad setting is refused with its reason and leaves the log closed. */
static void bad_configurations(void **state)
{
	struct pc_log_cfg c;
	enum pc_log_level lv;
	enum pc_log_format fm;
	(void)state;

	pc_log_cfg_init(&c);
	c.level = (enum pc_log_level)7;
	refused(&c, -EINVAL, "level");
	pc_log_cfg_init(&c);
	c.format = (enum pc_log_format)5;
	refused(&c, -EINVAL, "format");
	pc_log_cfg_init(&c);
	c.ring_size = 5000;
	refused(&c, -EINVAL, "ring size");
	c.ring_size = 2048;
	refused(&c, -EINVAL, "ring size");
	pc_log_cfg_init(&c);
	c.file = "/nonexistent-dir/x.log";
	refused(&c, -ENOENT, "cannot open");
	assert_int_equal(pc_log_flush(), -ENOTCONN);
	pc_log_cfg_init(&c);
	assert_int_equal(pc_log_open(&c, NULL, 0), 0);
	refused(&c, -EBUSY, "open already");
	pc_log_close();
	assert_int_equal(pc_log_level_parse("warn", &lv), 0);
	assert_int_equal(lv, PC_LOG_WARN);
	assert_int_equal(pc_log_level_parse("loud", &lv), -EINVAL);
	assert_int_equal(pc_log_format_parse("json", &fm), 0);
	assert_int_equal(fm, PC_LOG_JSON);
	assert_int_equal(pc_log_format_parse("xml", &fm), -EINVAL);
	assert_string_equal(pc_log_level_name(PC_LOG_DEBUG), "debug");
	assert_string_equal(pc_log_format_name(PC_LOG_LOGFMT), "logfmt");
}

/* An engine's bad log setting is refused by pc_engine_start. */
static void engine_log_cfg_refused(void **state)
{
	struct pc_engine_cfg c;
	struct pc_engine *e;
	char err[128] = "";
	(void)state;

	pc_engine_cfg_init(&c);
	c.shards = 1;
	c.placement = "off";
	c.log_ring_size = 100;
	assert_int_equal(pc_engine_start(&c, &e, err, sizeof(err)), -EINVAL);
	assert_null(e);
	assert_non_null(strstr(err, "ring size"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(logfmt_line),
		cmocka_unit_test(json_line),
		cmocka_unit_test(bad_utf8_replaced),
		cmocka_unit_test(shard_line_and_threshold),
		cmocka_unit_test(flood_drops_and_counts),
		cmocka_unit_test(sighup_reopens),
		cmocka_unit_test(idle_writer_backs_off),
		cmocka_unit_test(bad_configurations),
		cmocka_unit_test(engine_log_cfg_refused),
	};
	return pc_test_main(tests, argc, argv);
}
