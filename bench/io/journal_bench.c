/* SPDX-License-Identifier: MIT */
/* Durable 128-byte appends, synced on every commit:
 *
 *   Journal/Append/128/writers:{1,64}   Peer/rocksdb/Append/128/writers:{1,64}
 *                                       Peer/fdatasync/Append/128/writers:{1,64}
 *
 * Ours: one shard, `writers` appenders each with one record awaiting its
 * durability callback and appending the next when it comes (what 64
 * clients waiting on their writes look like); group commit batches what
 * they append in a turn and while a sync is in flight. The peers use as
 * many threads: RocksDB (Debian's librocksdb-dev, its C API), each thread
 * putting 128-byte values under keys of its own with sync = true, which
 * its write-ahead log's group commit (a leader writes and syncs for the
 * writers queued behind it) makes durable together; and each thread doing
 * write(O_APPEND) + fdatasync per record on one file, the way to be
 * durable without a journal. The journal's directory, the database and
 * the file are in PC_BENCH_DIR or /var/tmp, fresh per repetition; only
 * the writes are timed. One iteration is one record made durable.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "../rt/rt_bench.h"
#include "percore/clock.h"
#include "percore/journal.h"
#include "percore/reactor.h"
#include "percore/shard.h"

#define REC 128

/* ---- ours ------------------------------------------------------------------ */

struct jb {
	struct rtb *b;
	struct pc_journal *j;
	char dir[520];
	uint64_t issued, done, start;
	unsigned writers;
	int err;
};

static void durable(uint64_t lsn, int err, void *arg);

static void finish(void *arg)
{
	struct jb *x = arg;

	if (pc_journal_close(x->j))
		abort();
	rtb_finish_as(x->b, x->start);
}

static void append(struct jb *x)
{
	static const unsigned char rec[REC];

	x->issued++;
	if (pc_journal_append(x->j, rec, REC, durable, x, NULL))
		abort(); /* a benchmark bug or a broken disk */
}

static void durable(uint64_t lsn, int err, void *arg)
{
	struct jb *x = arg;

	(void)lsn;
	if (err)
		abort();
	x->done++;
	if (x->issued < x->b->iterations)
		return append(x);
	if (x->done == x->b->iterations) {
		x->start = pc_elapsed(pc_now_ns(), x->start); /* now the time taken */
		/* closed on the next turn: inside a callback it is still busy */
		pc_reactor_defer(pc_shard_reactor(), finish, x);
	}
}

static void start_job(void *arg)
{
	struct rtb *b = arg;
	struct jb *x = b->user;
	struct pc_journal_opts o;

	x->b = b;
	x->issued = x->done = 0;
	rtb_remove_tree(x->dir);
	pc_journal_opts_init(&o);
	if (pc_journal_open(&x->j, x->dir, &o))
		abort();
	x->start = pc_now_ns();
	for (unsigned w = 0; w < x->writers && x->issued < b->iterations; w++)
		append(x);
}

static int ours_setup(struct pc_bench_state *st)
{
	struct jb *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return -ENOMEM;
	x->writers = (unsigned)st->bench->arg;
	rtb_scratch_path(x->dir, sizeof(x->dir), "journal");
	rc = rtb_setup(st, 1, PC_IDLE_ADAPTIVE, 0, x);
	if (rc)
		free(x);
	return rc;
}

static void ours_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, start_job);
	st->bytes = st->iterations * REC;
}

static void ours_teardown(struct pc_bench_state *st)
{
	struct rtb *b = st->ctx;
	struct jb *x = b->user;

	rtb_teardown(st);
	rtb_remove_tree(x->dir);
	free(x);
}

/* ---- one write + fdatasync per record ---------------------------------------- */

struct peer {
	int fd;
	uint64_t each;
};

static void *peer_writer(void *arg)
{
	struct peer *p = arg;
	unsigned char rec[REC] = { 0 };

	for (uint64_t i = 0; i < p->each; i++)
		if (write(p->fd, rec, REC) != REC || fdatasync(p->fd))
			abort();
	return NULL;
}

static void peer_run(struct pc_bench_state *st)
{
	unsigned n = (unsigned)st->bench->arg;
	pthread_t th[64];
	struct peer p;
	char path[520];
	uint64_t t0;

	rtb_scratch_path(path, sizeof(path), "fdatasync");
	p.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (p.fd < 0)
		return pc_bench_fail(st, "cannot create the peer's file");
	p.each = (st->iterations + n - 1) / n;
	t0 = pc_now_ns();
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, peer_writer, &p);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	st->manual_ns = pc_elapsed(pc_now_ns(), t0);
	st->items = p.each * n;
	st->bytes = st->items * REC;
	close(p.fd);
	unlink(path);
}

/* ---- RocksDB, sync = true from as many threads ---------------------------- */

struct rocks {
	rocksdb_t *db;
	rocksdb_writeoptions_t *wo;
	uint64_t each;
	_Atomic int failed;
};

struct rocks_writer {
	struct rocks *r;
	uint32_t id;
	pthread_t th;
};

static void *rocks_write(void *arg)
{
	struct rocks_writer *w = arg;
	struct rocks *r = w->r;
	unsigned char val[REC] = { 0 };
	char *err = NULL;

	for (uint64_t i = 0; i < r->each && !err; i++) {
		uint64_t key[2] = { w->id, i }; /* each writer its own keys */

		rocksdb_put(r->db, r->wo, (const char *)key, sizeof(key), (const char *)val, REC,
			    &err);
	}
	if (err) {
		fprintf(stderr, "Peer/rocksdb: put: %s\n", err);
		rocksdb_free(err);
		r->failed = 1;
	}
	return NULL;
}

static void rocks_run(struct pc_bench_state *st)
{
	unsigned n = (unsigned)st->bench->arg;
	struct rocks_writer w[64];
	struct rocks r = { 0 };
	rocksdb_options_t *o = rocksdb_options_create();
	char dir[520], *err = NULL;
	uint64_t t0;

	rtb_scratch_path(dir, sizeof(dir), "rocksdb");
	rtb_remove_tree(dir);
	rocksdb_options_set_create_if_missing(o, 1);
	r.db = rocksdb_open(o, dir, &err);
	rocksdb_options_destroy(o);
	if (!r.db) {
		pc_bench_fail(st, err ? err : "rocksdb_open failed");
		rocksdb_free(err);
		return;
	}
	r.wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(r.wo, 1);
	r.each = (st->iterations + n - 1) / n;
	t0 = pc_now_ns();
	for (unsigned i = 0; i < n; i++) {
		w[i] = (struct rocks_writer){ .r = &r, .id = i };
		pthread_create(&w[i].th, NULL, rocks_write, &w[i]);
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	st->manual_ns = pc_elapsed(pc_now_ns(), t0);
	st->items = r.each * n;
	st->bytes = st->items * REC;
	rocksdb_writeoptions_destroy(r.wo);
	rocksdb_close(r.db);
	rtb_remove_tree(dir);
	if (r.failed)
		pc_bench_fail(st, "a RocksDB put failed");
}

/* Ours and the peers at one writer count; registered one per line (the
 * registration names its constructor by line). */
#define ROWS(var, w)                                                               \
	static const struct pc_bench var = {                                       \
		.name = "Journal/Append/128/writers:" #w, .flags = PC_BENCH_MANUAL_TIME, \
		.arg = w, .setup = ours_setup, .run = ours_run,                    \
		.teardown = ours_teardown,                                         \
	};                                                                         \
	static const struct pc_bench var##_peer = {                                \
		.name = "Peer/fdatasync/Append/128/writers:" #w,                   \
		.flags = PC_BENCH_MANUAL_TIME, .arg = w, .run = peer_run,          \
	};                                                                         \
	static const struct pc_bench var##_rocks = {                               \
		.name = "Peer/rocksdb/Append/128/writers:" #w,                     \
		.flags = PC_BENCH_MANUAL_TIME, .arg = w, .run = rocks_run,         \
	}

ROWS(append1, 1);
ROWS(append64, 64);
PC_BENCH_REGISTER(append1)
PC_BENCH_REGISTER(append1_peer)
PC_BENCH_REGISTER(append1_rocks)
PC_BENCH_REGISTER(append64)
PC_BENCH_REGISTER(append64_peer)
PC_BENCH_REGISTER(append64_rocks)
