/* SPDX-License-Identifier: MIT */
/* The journal (percore/journal.h) on a shard: group commit, LSNs in
 * order, rotation, the sync modes, recovery after truncation at every
 * byte of the last records and after bit flips, and an I/O error that
 * ends the journal. ctest runs it on io_uring and on the thread pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "io/io.h"
#include "io_util.h"
#include "journal_util.h"
#include "percore/clock.h"
#include "percore/file.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "testmain.h"

#define MAXREC 4096

struct jctx {
	char dir[500];
	struct pc_journal_opts o;
	struct pc_journal *j;
	int open_rc;
	uint64_t want;            /* callbacks expected before step_done */
	uint64_t got;             /* callbacks run */
	uint64_t lsns[MAXREC];    /* in callback order */
	int errs[MAXREC];
	uint64_t appended;        /* next LSN the test appends */
	unsigned turns, per_turn; /* the append chain */
	/* group commit across an in-flight sync */
	bool raw;                 /* open the raw journal dir/raw.aof */
	bool first_done;
	uint64_t in_flight;
	struct pc_file_stats before, after;
	/* fault injection */
	unsigned fault_ops;
	int append_after;
};

static char dir[480];

static void on_durable(uint64_t lsn, int err, void *arg)
{
	struct jctx *c = arg;

	if (c->got < MAXREC) {
		c->lsns[c->got] = lsn;
		c->errs[c->got] = err;
	}
	if (++c->got == c->want)
		step_done();
}

static int append_one(struct jctx *c)
{
	unsigned char p[REC_MAX];
	uint64_t lsn = 0;
	int rc;

	rec_fill(c->appended + 1, p);
	rc = pc_journal_append(c->j, p, rec_len(c->appended + 1), on_durable, c, &lsn);
	if (rc == 0) {
		RT_CHECK(c->raw || lsn == c->appended + 1, "lsn %llu", (unsigned long long)lsn);
		c->appended++;
	}
	return rc;
}

static void do_open(void *arg)
{
	struct jctx *c = arg;

	char path[600];

	snprintf(path, sizeof(path), "%s/raw.aof", c->dir);
	c->open_rc = c->raw ? pc_journal_open_file(&c->j, path, &c->o) :
			      pc_journal_open(&c->j, c->dir, &c->o);
	if (c->open_rc == 0)
		c->appended = pc_journal_next_lsn(c->j) - 1;
	step_done();
}

static void do_close(void *arg)
{
	struct jctx *c = arg;

	RT_CHECK(pc_journal_close(c->j) == 0, "close");
	c->j = NULL;
	step_done();
}

/* per_turn appends on each of `turns` turns */
static void append_turn(void *arg)
{
	struct jctx *c = arg;

	for (unsigned i = 0; i < c->per_turn; i++)
		RT_CHECK(append_one(c) == 0, "append");
	if (--c->turns)
		RT_CHECK(pc_reactor_defer(pc_shard_reactor(), append_turn, c) == 0, "defer");
}

static void reset_counts(struct jctx *c, uint64_t want)
{
	c->got = 0;
	c->want = want;
}

static void open_journal(struct jctx *c)
{
	on_shard(do_open, c);
	assert_int_equal(c->open_rc, 0);
}

static void append_turns(struct jctx *c, unsigned turns, unsigned per_turn)
{
	reset_counts(c, (uint64_t)turns * per_turn);
	c->turns = turns;
	c->per_turn = per_turn;
	on_shard(append_turn, c);
}

static void check_in_order(struct jctx *c, uint64_t first)
{
	assert_true(c->got <= MAXREC);
	for (uint64_t i = 0; i < c->got; i++) {
		assert_int_equal(c->errs[i], 0);
		assert_int_equal(c->lsns[i], first + i);
	}
}

static void read_stats(void *arg)
{
	struct pc_file_stats *st = arg;

	RT_CHECK(pc_file_stats_read(st, NULL) == 0, "stats");
	step_done();
}

static struct jctx *new_ctx(void)
{
	struct jctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "%s/j", dir);
	pc_journal_opts_init(&c->o);
	return c;
}

/* ---- group commit ------------------------------------------------------ */

static void one_turn_one_write(void **state)
{
	struct jctx *c = new_ctx();
	struct pc_file_stats a, b;

	(void)state;
	open_journal(c);
	on_shard(read_stats, &a);
	append_turns(c, 1, 100);
	on_shard(read_stats, &b);
	check_in_order(c, 1);
	assert_int_equal(b.writes - a.writes, 1);
	assert_int_equal(b.syncs - a.syncs, 1);
	on_shard(do_close, c);
	{
		int end;

		assert_int_equal(recover_count(c->dir, &end, NULL), 100);
		assert_int_equal(end, 0);
	}
	free(c);
}

/* Appends one record a turn until the first record's callback ran (or
 * the log is full). */
static void in_flight_turn(void *arg)
{
	struct jctx *c = arg;

	/* a slow first sync must not outgrow the record log: the rest
	 * still share the second batch, waiting without new appends */
	if (c->first_done || c->in_flight >= MAXREC - 1)
		return;
	RT_CHECK(append_one(c) == 0, "append");
	c->in_flight++;
	c->want++;
	RT_CHECK(pc_reactor_defer(pc_shard_reactor(), in_flight_turn, c) == 0, "defer");
}

static void on_first(uint64_t lsn, int err, void *arg)
{
	struct jctx *c = arg;

	c->first_done = true;
	on_durable(lsn, err, arg);
}

static void first_then_more(void *arg)
{
	struct jctx *c = arg;
	unsigned char p[REC_MAX];

	RT_CHECK(pc_file_stats_read(&c->before, NULL) == 0, "stats");
	rec_fill(1, p);
	RT_CHECK(pc_journal_append(c->j, p, rec_len(1), on_first, c, NULL) == 0, "append");
	c->appended = 1;
	/* each record the chain adds raises it (after this, the first) */
	c->want = 1;
	RT_CHECK(pc_reactor_defer(pc_shard_reactor(), in_flight_turn, c) == 0, "defer");
}

/* One record, then one a turn until its callback runs: all confirmed in
 * order, c->in_flight of them appended while the first was on its way. */
static void first_while_appending(struct jctx *c)
{
	open_journal(c);
	c->got = 0;
	on_shard(first_then_more, c);
	wait_for(step_finished, "callbacks");
	on_shard(read_stats, &c->after);
	check_in_order(c, 1);
}

static void appends_during_sync_share_one(void **state)
{
	struct jctx *c = new_ctx();

	(void)state;
	first_while_appending(c);
	assert_true(c->in_flight >= 1);
	/* the first record's batch, then one for everything appended meanwhile */
	assert_int_equal(c->after.writes - c->before.writes, 2);
	assert_int_equal(c->after.syncs - c->before.syncs, 2);
	on_shard(do_close, c);
	free(c);
}

/* With inline syncs the shard waits its write and sync out: the first
 * record's callback has run before the next task can append, and a
 * turn's records still share one write and one sync. */
static void inline_sync_waits_on_the_shard(void **state)
{
	struct jctx *c = new_ctx();
	int end;

	(void)state;
	c->o.inline_sync_us = 10u * 1000 * 1000; /* however slow the disk */
	first_while_appending(c);
	assert_int_equal(c->in_flight, 0);
	assert_int_equal(c->after.writes - c->before.writes, 1);
	assert_int_equal(c->after.syncs - c->before.syncs, 1);
	append_turns(c, 3, 50);
	check_in_order(c, 2);
	on_shard(do_close, c);
	assert_int_equal(recover_count(c->dir, &end, NULL), 151);
	assert_int_equal(end, 0);
	free(c);
}

/* ---- LSNs across reopen and rotation, the modes ------------------------- */

static unsigned segments(const char *d)
{
	DIR *dd = opendir(d);
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(dd);
	while ((e = readdir(dd)))
		n += strstr(e->d_name, ".wal") != NULL;
	closedir(dd);
	return n;
}

static void rotation_and_reopen(void **state)
{
	struct jctx *c = new_ctx();
	int end;

	(void)state;
	c->o.segment_size = 4096;
	open_journal(c);
	/* ten batches of about 2.7 KiB: a new segment every other one */
	for (unsigned i = 0; i < 10; i++) {
		append_turns(c, 1, 20);
		check_in_order(c, 1 + 20 * i);
	}
	on_shard(do_close, c);
	assert_true(segments(c->dir) >= 5);
	open_journal(c);
	assert_int_equal(c->appended, 200);
	append_turns(c, 3, 7);
	check_in_order(c, 201);
	on_shard(do_close, c);
	assert_int_equal(recover_count(c->dir, &end, NULL), 221);
	assert_int_equal(end, 0);
	free(c);
}

static void modes(enum pc_journal_sync mode)
{
	struct jctx *c = new_ctx();
	struct pc_file_stats a, b;
	int end;

	c->o.sync = mode;
	c->o.interval_ms = 5;
	open_journal(c);
	on_shard(read_stats, &a);
	append_turns(c, 30, 3);
	on_shard(read_stats, &b);
	check_in_order(c, 1);
	if (mode == PC_JOURNAL_SYNC_NEVER)
		assert_int_equal(b.syncs, a.syncs);
	else
		assert_true(b.syncs > a.syncs);
	on_shard(do_close, c);
	assert_int_equal(recover_count(c->dir, &end, NULL), 90);
	assert_int_equal(end, 0);
	free(c);
}

static void interval_mode(void **state)
{
	(void)state;
	modes(PC_JOURNAL_SYNC_INTERVAL);
}

static void never_mode(void **state)
{
	(void)state;
	modes(PC_JOURNAL_SYNC_NEVER);
}

/* ---- raw journals ------------------------------------------------------ */

static unsigned char scratch[100 * REC_MAX];

/* The bytes of records first..last, as a raw journal writes them. */
static size_t raw_bytes(uint64_t first, uint64_t last, unsigned char *out)
{
	size_t n = 0;

	for (uint64_t k = first; k <= last; k++) {
		rec_fill(k, out + n);
		n += rec_len(k);
	}
	return n;
}

static void check_raw_file(struct jctx *c, uint64_t last)
{
	static unsigned char want[100 * REC_MAX], got[100 * REC_MAX + 1];
	char path[600];
	size_t n = raw_bytes(1, last, want);
	int fd;
	ssize_t r;

	snprintf(path, sizeof(path), "%s/raw.aof", c->dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	r = read(fd, got, sizeof(got));
	close(fd);
	assert_int_equal(r, (ssize_t)n);
	assert_memory_equal(got, want, n);
}

static void raw_written(void *arg)
{
	struct jctx *c = arg;

	c->in_flight = pc_journal_written(c->j);
	step_done();
}

/* A raw journal holds the records' bytes alone, one after another, with
 * the group commit of a framed one (one write and one sync for a turn's
 * records); reopened, it appends at its end, and each mode confirms
 * every record in order. */
static void raw_file(enum pc_journal_sync mode)
{
	struct jctx *c = new_ctx();
	struct pc_file_stats a, b;

	assert_int_equal(mkdir(c->dir, 0755), 0);
	c->raw = true;
	c->o.sync = mode;
	c->o.interval_ms = 5;
	open_journal(c);
	on_shard(read_stats, &a);
	append_turns(c, 1, 40);
	on_shard(read_stats, &b);
	check_in_order(c, 1);
	assert_int_equal(b.writes - a.writes, 1);
	assert_int_equal(b.syncs - a.syncs, mode == PC_JOURNAL_SYNC_NEVER ? 0 : 1);
	on_shard(do_close, c);
	check_raw_file(c, 40);
	open_journal(c);
	assert_int_equal(pc_journal_next_lsn(c->j), 1); /* LSNs are the caller's to count */
	c->appended = 40; /* the payloads go on from record 41 */
	append_turns(c, 20, 3);
	check_in_order(c, 1);
	on_shard(raw_written, c);
	assert_int_equal(c->in_flight, raw_bytes(1, 100, scratch));
	on_shard(do_close, c);
	check_raw_file(c, 100);
	free(c);
}

static void raw_file_always(void **state)
{
	(void)state;
	raw_file(PC_JOURNAL_SYNC_ALWAYS);
}

static void raw_file_interval(void **state)
{
	(void)state;
	raw_file(PC_JOURNAL_SYNC_INTERVAL);
}

static void raw_file_never(void **state)
{
	(void)state;
	raw_file(PC_JOURNAL_SYNC_NEVER);
}

/* ---- a raw file extended ahead ----------------------------------------- */

#define AHEAD 8192u

static uint64_t raw_size(struct jctx *c)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/raw.aof", c->dir);
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* raw.aof is `end` bytes long, those from `off` on all padding. */
static void check_padded(struct jctx *c, uint64_t off, uint64_t end)
{
	static unsigned char got[200 * REC_MAX];
	char path[600];
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/raw.aof", c->dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	r = pread(fd, got, sizeof(got), 0);
	close(fd);
	assert_int_equal(r, (ssize_t)end);
	for (uint64_t i = off; i < end; i++)
		assert_int_equal(got[i], '#');
}

static struct jctx *raw_ahead(enum pc_journal_sync mode)
{
	struct jctx *c = new_ctx();

	assert_int_equal(mkdir(c->dir, 0755), 0);
	c->raw = true;
	c->o.sync = mode;
	c->o.extend_ahead = AHEAD;
	c->o.pad_byte = '#';
	open_journal(c);
	return c;
}

/* Always: the first batch extends the file AHEAD bytes past its records,
 * the batches written over the padding leave its size alone, the one
 * passing its end extends it again; closing cuts the padding off. */
static void raw_file_extends_ahead(void **state)
{
	struct jctx *c = raw_ahead(PC_JOURNAL_SYNC_ALWAYS);
	uint64_t w;

	(void)state;
	append_turns(c, 1, 10);
	w = raw_bytes(1, 10, scratch);
	check_padded(c, w, w + AHEAD);
	append_turns(c, 20, 2);
	assert_true(raw_bytes(1, 50, scratch) < w + AHEAD);
	check_padded(c, raw_bytes(1, 50, scratch), w + AHEAD);
	append_turns(c, 1, 50);
	check_in_order(c, 51);
	w = raw_bytes(1, 100, scratch);
	check_padded(c, w, w + AHEAD);
	on_shard(raw_written, c);
	assert_int_equal(c->in_flight, w); /* the padding is not counted */
	on_shard(do_close, c);
	check_raw_file(c, 100);
	free(c);
}

/* Batches owed no sync never extend the file. */
static void raw_file_never_extends(void **state)
{
	struct jctx *c = raw_ahead(PC_JOURNAL_SYNC_NEVER);

	(void)state;
	append_turns(c, 4, 5);
	check_in_order(c, 1);
	assert_int_equal(raw_size(c), raw_bytes(1, 20, scratch));
	on_shard(do_close, c);
	free(c);
}

/* Padding the file system has no room for (here: past RLIMIT_FSIZE) is
 * given up; the records it followed are durable and confirmed. */
static void raw_padding_without_room(void **state)
{
	struct rlimit old, lim;
	struct jctx *c = raw_ahead(PC_JOURNAL_SYNC_ALWAYS);
	uint64_t w = raw_bytes(1, 10, scratch);

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = w + 100;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	append_turns(c, 1, 10);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	check_in_order(c, 1);
	check_padded(c, w, w + 100);
	append_turns(c, 1, 10); /* over the padding that did land, and past it */
	check_in_order(c, 11);
	on_shard(do_close, c);
	check_raw_file(c, 20);
	free(c);
}

static void set_always(void *arg)
{
	struct jctx *c = arg;

	RT_CHECK(pc_journal_set_sync(c->j, PC_JOURNAL_SYNC_ALWAYS) == 0, "set always");
	step_done();
}

/* Ten records appended under always, then the mode changed before their
 * batch went out (interval refused). */
static void append_then_never(void *arg)
{
	struct jctx *c = arg;

	for (unsigned i = 0; i < 10; i++)
		RT_CHECK(append_one(c) == 0, "append");
	RT_CHECK(pc_journal_set_sync(c->j, PC_JOURNAL_SYNC_NEVER) == 0, "set never");
	RT_CHECK(pc_journal_set_sync(c->j, PC_JOURNAL_SYNC_INTERVAL) == -EINVAL, "interval");
}

/* The mode changed at run time: from then on the records are confirmed
 * per the new one, while those appended before it keep their sync. */
static void sync_mode_changed(void **state)
{
	struct jctx *c = new_ctx();
	struct pc_file_stats a, b;

	(void)state;
	assert_int_equal(mkdir(c->dir, 0755), 0);
	c->raw = true;
	c->o.sync = PC_JOURNAL_SYNC_NEVER;
	open_journal(c);
	on_shard(read_stats, &a);
	append_turns(c, 1, 10);
	on_shard(read_stats, &b);
	assert_int_equal(b.syncs - a.syncs, 0);
	on_shard(set_always, c);
	append_turns(c, 1, 10);
	on_shard(read_stats, &a);
	assert_int_equal(a.syncs - b.syncs, 1);
	reset_counts(c, 10);
	on_shard(append_then_never, c);
	on_shard(read_stats, &b);
	assert_int_equal(b.syncs - a.syncs, 1); /* appended under always */
	check_in_order(c, 21);
	append_turns(c, 1, 10);
	on_shard(read_stats, &a);
	assert_int_equal(a.syncs - b.syncs, 0);
	on_shard(do_close, c);
	check_raw_file(c, 40);
	free(c);
}

/* gather_us: records appended over many turns share one write; a fill
 * past 256 KiB leaves without waiting out its gather; records appended
 * under always never wait. */
static void gathered_turns(void **state)
{
	struct jctx *c = new_ctx();
	struct pc_file_stats a, b;
	uint64_t bytes = 0, t0;
	const unsigned big = 3000;

	(void)state;
	c->o.sync = PC_JOURNAL_SYNC_NEVER;
	c->o.gather_us = 1000000; /* 1 s: the 40 turns below take far less */
	open_journal(c);
	on_shard(read_stats, &a);
	append_turns(c, 40, 1);
	on_shard(read_stats, &b);
	check_in_order(c, 1);
	assert_int_equal(b.writes - a.writes, 1);
	assert_int_equal(b.syncs - a.syncs, 0);
	on_shard(do_close, c);
	c->o.gather_us = 120000000; /* two minutes, never waited out */
	open_journal(c);
	for (uint64_t l = 41; l < 41 + big; l++)
		bytes += rec_len(l);
	assert_true(bytes > 256 * 1024);
	t0 = pc_now_ns();
	append_turns(c, 1, big);
	check_in_order(c, 41);
	on_shard(set_always, c);
	append_turns(c, 1, 1);
	check_in_order(c, 41 + big);
	assert_true(pc_elapsed(pc_now_ns(), t0) < 60000000000ull);
	on_shard(do_close, c);
	free(c);
}

/* ---- damage ------------------------------------------------------------ */

/* A journal of n records in one segment; its path in seg. */
static void write_log(struct jctx *c, unsigned n, char *seg, size_t len)
{
	c->o.segment_size = 64 * 1024;
	open_journal(c);
	append_turns(c, n, 1);
	check_in_order(c, 1);
	on_shard(do_close, c);
	snprintf(seg, len, "%s/%020llu.wal", c->dir, 1ull);
}

/* The first len bytes of from, as the whole of to. */
static void copy_file(const char *from, const char *to, size_t len)
{
	static char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(in >= 0 && out >= 0);
	assert_true(len <= sizeof(buf));
	assert_int_equal(read(in, buf, len), (ssize_t)len);
	assert_int_equal(write(out, buf, len), (ssize_t)len);
	close(in);
	close(out);
}

static uint64_t record_start(uint64_t k) /* byte offset of record k >= 1 */
{
	uint64_t off = 0;

	for (uint64_t i = 1; i < k; i++)
		off += PC_JOURNAL_HEADER + rec_len(i);
	return off;
}

static void truncated_at_every_byte(void **state)
{
	struct jctx *c = new_ctx();
	char seg[600], cdir[520], cseg[600];
	const unsigned n = 40;
	uint64_t from = record_start(n - 2), to = record_start(n + 1);

	(void)state;
	write_log(c, n, seg, sizeof(seg));
	snprintf(cdir, sizeof(cdir), "%s/cut", dir);
	assert_int_equal(mkdir(cdir, 0755), 0);
	snprintf(cseg, sizeof(cseg), "%s/%020llu.wal", cdir, 1ull);
	for (uint64_t cut = from; cut <= to; cut++) {
		uint64_t k = 1, off;
		int end;

		while (k <= n && record_start(k + 1) <= cut)
			k++; /* k: the first record the cut damages (n + 1: none) */
		copy_file(seg, cseg, cut);
		assert_int_equal(recover_count(cdir, &end, &off), k - 1);
		if (cut == record_start(k)) {
			assert_int_equal(end, 0);
		} else {
			assert_int_equal(end, -EBADMSG);
			assert_int_equal(off, record_start(k));
		}
	}
	free(c);
}

static void bit_flips(void **state)
{
	struct jctx *c = new_ctx();
	char seg[600], cdir[520], cseg[600];
	const unsigned n = 60;
	uint64_t size = record_start(n + 1);

	(void)state;
	write_log(c, n, seg, sizeof(seg));
	snprintf(cdir, sizeof(cdir), "%s/flip", dir);
	assert_int_equal(mkdir(cdir, 0755), 0);
	snprintf(cseg, sizeof(cseg), "%s/%020llu.wal", cdir, 1ull);
	srand(30);
	for (int round = 0; round < 300; round++) {
		uint64_t at = (uint64_t)rand() % size, k = 1, off;
		unsigned char b;
		int fd, end;

		while (record_start(k + 1) <= at)
			k++;
		copy_file(seg, cseg, size);
		fd = open(cseg, O_RDWR);
		assert_int_equal(pread(fd, &b, 1, (off_t)at), 1);
		b ^= (unsigned char)(1u << (rand() % 8));
		assert_int_equal(pwrite(fd, &b, 1, (off_t)at), 1);
		close(fd);
		/* everything before the flipped record, nothing from it on */
		assert_int_equal(recover_count(cdir, &end, &off), k - 1);
		assert_int_equal(end, -EBADMSG);
		assert_int_equal(off, record_start(k));
	}
	free(c);
}

static void bad_tail_refused_or_cut(void **state)
{
	struct jctx *c = new_ctx();
	char seg[600];
	int end;

	(void)state;
	write_log(c, 10, seg, sizeof(seg));
	assert_int_equal(truncate(seg, (off_t)record_start(10) + 5), 0);
	on_shard(do_open, c);
	assert_int_equal(c->open_rc, -EBADMSG);
	c->o.truncate_bad_tail = true;
	open_journal(c);
	assert_int_equal(c->appended, 9);
	append_turns(c, 1, 2);
	check_in_order(c, 10);
	on_shard(do_close, c);
	assert_int_equal(recover_count(c->dir, &end, NULL), 11);
	assert_int_equal(end, 0);
	free(c);
}

/* ---- an I/O error is final -------------------------------------------- */

static void arm_and_append(void *arg)
{
	struct jctx *c = arg;

	io_file_fault(io_journal_file(c->j), c->fault_ops, -EIO, 0);
	for (int i = 0; i < 3; i++)
		RT_CHECK(append_one(c) == 0, "append before the error is known");
}

static void after_error(void *arg)
{
	struct jctx *c = arg;
	unsigned char p[8] = { 0 };

	c->append_after = pc_journal_append(c->j, p, sizeof(p), on_durable, c, NULL);
	RT_CHECK(pc_journal_error(c->j) == -EIO, "the error stays");
	RT_CHECK(pc_journal_close(c->j) == 0, "close after the error");
	step_done();
}

static void io_error(unsigned ops, uint32_t inline_sync_us)
{
	struct jctx *c = new_ctx();
	int end;

	c->o.inline_sync_us = inline_sync_us;
	if (inline_sync_us) /* a log of its own beside the first call's */
		snprintf(c->dir, sizeof(c->dir), "%s/j-inline", dir);
	open_journal(c);
	append_turns(c, 2, 4);
	check_in_order(c, 1);
	c->fault_ops = ops;
	reset_counts(c, 3);
	on_shard(arm_and_append, c);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(c->errs[i], -EIO);
	on_shard(after_error, c);
	assert_int_equal(c->append_after, -EIO);
	/* what was confirmed before the error is there */
	assert_true(recover_count(c->dir, &end, NULL) >= 8);
	free(c);
}

static void fsync_eio_is_final(void **state)
{
	(void)state;
	io_error(1u << IO_FDATASYNC, 0);
	io_error(1u << IO_FDATASYNC, 10u * 1000 * 1000); /* on the shard's thread */
}

static void write_eio_is_final(void **state)
{
	(void)state;
	io_error(1u << IO_WRITE, 0);
	io_error(1u << IO_WRITE, 10u * 1000 * 1000);
}

static int setup(void **state)
{
	(void)state;
	scratch_dir(dir, sizeof(dir));
	start_one_shard();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	stop_engine();
	remove_dir(dir);
	return 0;
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(one_turn_one_write),
		T(appends_during_sync_share_one),
		T(inline_sync_waits_on_the_shard),
		T(rotation_and_reopen),
		T(interval_mode),
		T(never_mode),
		T(raw_file_always),
		T(raw_file_interval),
		T(raw_file_never),
		T(raw_file_extends_ahead),
		T(raw_file_never_extends),
		T(raw_padding_without_room),
		T(sync_mode_changed),
		T(gathered_turns),
		T(truncated_at_every_byte),
		T(bit_flips),
		T(bad_tail_refused_or_cut),
		T(fsync_eio_is_final),
		T(write_eio_is_final),
	};

	return pc_test_main(tests, argc, argv);
}
