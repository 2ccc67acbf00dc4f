/* SPDX-License-Identifier: MIT */
/* BGSAVE without fork: every shard walks a point-in-time view of its keys
 * while it keeps serving, and one shard, the writer (the one that started
 * the save), writes one dump from the records all of them produce.
 *
 *  1. start (writer): the temporary file is opened; every shard is held
 *     at once (a writer's lock, taken in ascending shard order as any
 *     transaction takes them), so no command runs anywhere while each
 *     shard fixes its view: kv_db_snap_begin() (db.h). Then every shard
 *     is released. That is the save's instant, as consistent across the
 *     shards as a multi-shard command is.
 *  2. walk (each shard): a deferred task walks SNAP_TURN_KEYS entries or
 *     SNAP_TURN_NS a reactor turn at most (an idle shard's turns follow
 *     each other at once, so the walk runs at full speed then), appending their records (rdb_file.h) to a
 *     chunk; a change to an entry the walk has not reached serializes it
 *     first (db.c's copy before change), into the same chunk. A chunk of
 *     SNAP_CHUNK bytes goes to the writer as a message; at most
 *     SNAP_INFLIGHT of a shard's chunks are out at once, and the walk
 *     waits while they are. The last chunk says the walk is over.
 *  3. write (writer): chunks are placed in the file in the order they
 *     arrive (RDB key records may come in any order), the CRC-64 computed
 *     over them in that order, and written with the shard's asynchronous
 *     files (percore/file.h: io_uring, or a thread pool), so no shard
 *     waits on the disk (open, rename and unlink, metadata calls, are
 *     made directly). A written chunk goes back to its shard, which
 *     frees it and walks on.
 *  4. end (writer): once every shard's last chunk is written, EOF and the
 *     CRC, fsync, rename over the dump, fsync of the directory. A failed
 *     write (a full disk) gives the save up: the temporary file goes, the
 *     previous dump stays, the status says err; the walks still run to
 *     their end (discarding), since each entry's mark must be set.
 *
 * One file written in arrival order needs no second pass and no per-shard
 * temporary files to join; the price is that a shard's records are mixed
 * with the others', which RDB allows. The extra memory is the records not
 * yet on disk: SNAP_INFLIGHT + 1 chunks a shard while the disk keeps up,
 * plus the copies writes force while the walk waits for it (at most one
 * record per key: a key is serialized once). INFO shows it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc64.h"
#include "percore/clock.h"
#include "percore/file.h"
#include "percore/log.h"
#include "percore/outbox.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "persist.h"
#include "rdb_file.h"
#include "server_internal.h"

#define SNAP_CHUNK     (64u << 10)  /* records a chunk carries to the writer (its CRC is one burst) */
#define SNAP_INFLIGHT  4u           /* a shard's chunks out at once */
#define SNAP_STEP_KEYS 64u          /* entries one walk step looks at */
#define SNAP_TURN_KEYS 1024u        /* and one reactor turn, at most, */
#define SNAP_TURN_NS   250000u      /* or this long: a request waits at most that */
#define SNAP_MIN_NS    20000u       /* a busy shard's walk gets at least this a turn */

/* No shard: a chunk the writer made itself (head, tail). */
#define FROM_WRITER ((unsigned)-1)

struct kv_bgsave;

/* Key records on their way to the file. */
struct snap_chunk {
	struct kv_bgsave *bg;
	unsigned from;            /* its shard, or FROM_WRITER */
	bool last;                /* its shard's walk is over */
	uint64_t off;             /* where it goes in the file */
	size_t done;              /* bytes written so far */
	struct kv_rdb_buf b;
	struct snap_chunk *next;  /* the writer's list of those waiting for the head */
	/* its shard's list of the chunks it sent that have not come back,
	 * which its shard alone links and unlinks: a stop leaves them to the
	 * server (kv_bgsave_free_orphans), since the messages still out then
	 * never run */
	struct snap_chunk *out_prev, *out_next;
};

/* One shard's part of a save. */
struct kv_snap {
	struct kv_bgsave *bg;
	unsigned writer;
	bool compress;
	bool walking;             /* inside a step: records are the walk's, not copies */
	bool deferred;            /* the next step is queued */
	bool walked;              /* the last chunk went */
	bool failed;              /* a record found no memory: the save fails */
	unsigned inflight;        /* chunks at the writer */
	uint64_t held;            /* bytes of records here and at the writer */
	uint64_t peak, copied;
	uint64_t last_ns, last_cmds;    /* when the last step ended, the commands run then */
	struct snap_chunk *cur;   /* being filled */
	struct snap_chunk *out;   /* sent and not back */
	struct kv_rdb_buf val;    /* scratch for kv_rdb_file_put_key */
};

/* The writer's side. */
struct kv_bgsave {
	struct kv_shard *home;
	uint64_t tx;
	struct kv_hold_all hold;  /* every shard held while each fixes its view */
	unsigned n, begun, ended;
	unsigned writes;          /* chunks being written */
	bool head_done, tail_done;
	int err;
	bool stopping;            /* the writer stops: the save is given up */
	int64_t start_ms;
	uint64_t changes;         /* writes counted when it began (persist.h) */
	uint64_t off, crc, keys, expires;
	struct pc_file *f;
	struct snap_chunk *wait_head, **wait_tail;
	void (*reply_fn)(struct kv_shard *, void *, int); /* BGSAVE's reply, once fixed */
	void *reply_arg;
	struct kv_rdb_save_opts o;
	struct kv_rdb_paths p;
	char dir[4096];
	char why[4400];
};

static void chunk_free(struct snap_chunk *ch)
{
	kv_rdb_buf_free(&ch->b);
	free(ch);
}

/* ---- the shards' side ----------------------------------------------------- */

static void publish_snap(struct kv_shard *sh)
{
	struct kv_snap *s = sh->snap;

	if (s->held > s->peak)
		s->peak = s->held;
	atomic_store_explicit(&sh->st->snap_bytes, s->held, memory_order_relaxed);
	atomic_store_explicit(&sh->st->snap_peak, s->peak, memory_order_relaxed);
	atomic_store_explicit(&sh->st->snap_copied, s->copied, memory_order_relaxed);
}

static void chunk_take(void *arg);

/* Sends the chunk being filled to the writer (an empty one when it is the
 * last and there is none). */
static void send_cur(struct kv_shard *sh, bool last)
{
	struct kv_snap *s = sh->snap;
	struct snap_chunk *ch = s->cur;

	if (!ch && !(ch = calloc(1, sizeof(*ch))))
		abort(); /* a walk that cannot say it ended would hold the save forever */
	s->cur = NULL;
	ch->b.failed |= s->failed;
	ch->bg = s->bg;
	ch->from = sh->idx;
	ch->last = last;
	ch->out_prev = NULL;
	ch->out_next = s->out;
	if (s->out)
		s->out->out_prev = ch;
	s->out = ch;
	s->inflight++;
	/* it completes accepted work: never refused for the outbox budget */
	if (pc_shard_send_reply(s->writer, chunk_take, ch))
		abort();
}

/* db.c hands over an entry: its record goes into the chunk. */
static void snap_entry(const struct kv_entry *e, void *arg)
{
	struct kv_shard *sh = arg;
	struct kv_snap *s = sh->snap;
	size_t before;

	if (!s->cur && !(s->cur = calloc(1, sizeof(*s->cur)))) {
		s->failed = true; /* the next chunk says so: the save fails */
		return;
	}
	before = s->cur->b.len;
	kv_rdb_file_put_key(&s->cur->b, &s->val, e, s->compress);
	s->held += s->cur->b.len - before;
	s->copied += !s->walking;
	if (!s->walking && s->cur->b.len >= SNAP_CHUNK && s->inflight < SNAP_INFLIGHT)
		send_cur(sh, false);
}

static void step(void *arg);

static void defer_step(struct kv_shard *sh)
{
	if (sh->snap->deferred)
		return;
	sh->snap->deferred = true;
	if (pc_reactor_defer(pc_shard_reactor(), step, sh))
		abort(); /* -ENOMEM for a task: the walk could never end */
}

/* How long this turn's walk may take: SNAP_TURN_NS on a shard that ran
 * no command since the last step; on a busy one, no longer than the
 * shard spent on everything else since (at least SNAP_MIN_NS), so the
 * walk takes at most about half of a busy shard's time and a request
 * waits at most about twice as long as without a save. */
static uint64_t turn_budget(struct kv_shard *sh, uint64_t now)
{
	struct kv_snap *s = sh->snap;
	uint64_t cmds = atomic_load_explicit(&sh->st->commands, memory_order_relaxed);
	uint64_t gap = pc_elapsed(now, s->last_ns);
	bool idle = cmds == s->last_cmds;

	s->last_cmds = cmds;
	if (idle || !s->last_ns || gap > SNAP_TURN_NS)
		return SNAP_TURN_NS;
	return gap < SNAP_MIN_NS ? SNAP_MIN_NS : gap;
}

/* One turn's walk: until SNAP_TURN_KEYS entries or its time
 * (turn_budget), or SNAP_INFLIGHT chunks are out. */
static void step(void *arg)
{
	struct kv_shard *sh = arg;
	struct kv_snap *s = sh->snap;
	uint64_t began = pc_now_ns(), budget = turn_budget(sh, began);
	size_t seen = 0;

	s->deferred = false;
	s->walking = true;
	while (kv_db_snap_active(sh->db) && seen < SNAP_TURN_KEYS && s->inflight < SNAP_INFLIGHT &&
	       pc_elapsed(pc_now_ns(), began) < budget) {
		seen += kv_db_snap_step(sh->db, SNAP_STEP_KEYS);
		if (s->cur && s->cur->b.len >= SNAP_CHUNK)
			send_cur(sh, false);
	}
	s->walking = false;
	s->last_ns = pc_now_ns();
	if (!kv_db_snap_active(sh->db) && !s->walked) {
		s->walked = true;
		send_cur(sh, true);
	} else if (!s->walked && s->inflight < SNAP_INFLIGHT) {
		defer_step(sh);
	}
	publish_snap(sh);
}

/* A chunk written (or dropped) comes back to its shard. */
static void chunk_back(void *arg)
{
	struct snap_chunk *ch = arg;
	struct kv_shard *sh = pc_shard_user();
	struct kv_snap *s = sh->snap;

	*(ch->out_prev ? &ch->out_prev->out_next : &s->out) = ch->out_next;
	if (ch->out_next)
		ch->out_next->out_prev = ch->out_prev;
	s->inflight--;
	s->held -= ch->b.len;
	chunk_free(ch);
	if (!s->walked) {
		defer_step(sh);
		publish_snap(sh);
		return;
	}
	publish_snap(sh);
	if (!s->inflight) {
		kv_rdb_buf_free(&s->val);
		free(s);
		sh->snap = NULL;
	}
}

/* Under the save's hold of every shard: this shard's view is fixed now.
 * Answers its keys and expiries (the file's size hints); an error in out
 * when it could not start (then it sends nothing). */
static void snap_begin(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bgsave *bg = j->owner;
	struct kv_db_stats st;
	struct kv_snap *s;

	if (sh->snap || !(s = calloc(1, sizeof(*s)))) {
		KV_REPLY_ERR(&j->out, KV_ERR_NOMEM);
		return;
	}
	s->bg = bg;
	s->writer = j->home;
	s->compress = sh->cfg.rdbcompression;
	sh->snap = s;
	if (kv_db_snap_begin(sh->db, bg->start_ms, snap_entry, sh))
		abort(); /* a walk still running with no save: the marks are wrong */
	kv_db_stats(sh->db, &st);
	j->u64 = st.keys;
	j->i64 = (int64_t)st.expires;
	defer_step(sh);
}

/* ---- the writer's side ---------------------------------------------------- */

static void try_end(struct kv_bgsave *bg);

static void fail(struct kv_bgsave *bg, int err, const char *what)
{
	if (bg->err)
		return;
	bg->err = err;
	snprintf(bg->why, sizeof(bg->why), "%s %s: %s", what, bg->p.tmp, strerror(-err));
}

/* A chunk is done with: back to its shard, or freed (the writer's own). */
static void release(struct kv_bgsave *bg, struct snap_chunk *ch)
{
	if (ch->from == FROM_WRITER) {
		chunk_free(ch);
		return;
	}
	if (bg->stopping)
		return; /* its shard's, which may have stopped: freed with its list */
	if (ch->last)
		bg->ended++;
	if (pc_shard_send_reply(ch->from, chunk_back, ch))
		abort(); /* the shard's walk would wait for it forever */
}

static void write_rest(struct kv_bgsave *bg, struct snap_chunk *ch);

static void written(struct pc_file *f, ssize_t res, void *arg)
{
	struct snap_chunk *ch = arg;
	struct kv_bgsave *bg = ch->bg;

	(void)f;
	bg->writes--;
	if (res <= 0)
		fail(bg, res ? (int)res : -ENOSPC, "cannot write");
	else
		ch->done += (size_t)res;
	if (!bg->err && ch->done < ch->b.len) {
		write_rest(bg, ch); /* a short write: the rest */
		return;
	}
	release(bg, ch);
	try_end(bg);
}

static void write_rest(struct kv_bgsave *bg, struct snap_chunk *ch)
{
	int rc = pc_file_write(bg->f, ch->b.p + ch->done, ch->b.len - ch->done, ch->off + ch->done,
			       written, ch);
	if (rc) {
		fail(bg, rc, "cannot write");
		release(bg, ch);
		return;
	}
	bg->writes++;
}

/* A chunk's place is the file's end when it comes: the CRC runs over the
 * chunks in that order. */
static void place(struct kv_bgsave *bg, struct snap_chunk *ch)
{
	if (ch->b.failed)
		fail(bg, -ENOMEM, "out of memory writing");
	if (bg->err || !ch->b.len) {
		release(bg, ch);
		return;
	}
	ch->off = bg->off;
	bg->off += ch->b.len;
	bg->crc = kv_crc64(bg->crc, ch->b.p, ch->b.len);
	write_rest(bg, ch);
}

/* A shard's chunk arrives (on the writer). */
static void chunk_take(void *arg)
{
	struct snap_chunk *ch = arg;
	struct kv_bgsave *bg = ch->bg;

	if (bg->head_done) {
		place(bg, ch);
		try_end(bg);
		return;
	}
	ch->next = NULL;
	*bg->wait_tail = ch;
	bg->wait_tail = &ch->next;
}

/* The head, once every shard said how many keys it has: then the chunks
 * that came before it. */
static void write_head(struct kv_bgsave *bg)
{
	struct snap_chunk *ch = calloc(1, sizeof(*ch)), *next;

	if (!ch)
		fail(bg, -ENOMEM, "out of memory writing");
	else {
		ch->bg = bg;
		ch->from = FROM_WRITER;
		kv_rdb_file_head(&ch->b, &bg->o, bg->keys, bg->expires);
		place(bg, ch);
	}
	bg->head_done = true;
	for (ch = bg->wait_head; ch; ch = next) {
		next = ch->next;
		place(bg, ch);
	}
	bg->wait_head = NULL;
	try_end(bg);
}

/* The save's end: the outcome for INFO and LASTSAVE, the temporary file
 * gone when it failed. */
static void finish(struct kv_bgsave *bg)
{
	struct kv_server *k = bg->home->srv;
	int64_t now = kv_now_ms();

	if (bg->f && pc_file_close(bg->f) && !bg->err)
		fail(bg, -EIO, "cannot close");
	if (bg->err) {
		unlink(bg->p.tmp);
		pc_log(PC_LOG_WARN, "kv: BGSAVE failed: %s", bg->why);
	}
	/* LASTSAVE, the saves made and the writes since (INFO), the rules' retry */
	kv_persist_save_done(bg->start_ms, now, bg->changes, !bg->err);
	atomic_store_explicit(&k->bg_failed, bg->err != 0, memory_order_relaxed);
	atomic_store_explicit(&k->bg_last_secs, now > bg->start_ms ? (now - bg->start_ms) / 1000 : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&k->bg_running, false, memory_order_release);
	bg->home->bg_writing = NULL;
	free(bg);
}

static void dir_synced(struct pc_file *f, ssize_t res, void *arg)
{
	struct kv_bgsave *bg = arg;

	if (res < 0)
		fail(bg, (int)res, "cannot sync the directory of");
	pc_file_close(f);
	finish(bg);
}

/* The file is on disk: renamed over the dump, then the directory synced
 * so that the rename survives a crash. */
static void synced(struct pc_file *f, ssize_t res, void *arg)
{
	struct kv_bgsave *bg = arg;
	struct pc_file *d;
	int rc;

	(void)f;
	if (res < 0) {
		fail(bg, (int)res, "cannot sync");
		finish(bg);
		return;
	}
	rc = pc_file_close(bg->f);
	bg->f = NULL;
	if (rc || rename(bg->p.tmp, bg->p.path)) {
		fail(bg, rc ? rc : -errno, "cannot rename");
		finish(bg);
		return;
	}
	rc = pc_file_open(&d, bg->dir, O_RDONLY | O_DIRECTORY, 0, 0);
	if (!rc && (rc = pc_file_sync(d, false, dir_synced, bg)))
		pc_file_close(d);
	if (rc) {
		fail(bg, rc, "cannot sync the directory of");
		finish(bg);
	}
}

/* Called whenever a write ends or a shard's walk does: once every
 * record is written, the tail (EOF, CRC), then fsync; a failed save
 * ends once nothing is out any more. */
static void try_end(struct kv_bgsave *bg)
{
	struct snap_chunk *ch;
	int rc;

	if (!bg->head_done || bg->ended < bg->n || bg->writes)
		return;
	if (bg->err) {
		finish(bg);
		return;
	}
	if (!bg->tail_done) {
		bg->tail_done = true;
		if (!(ch = calloc(1, sizeof(*ch)))) {
			fail(bg, -ENOMEM, "out of memory writing");
			finish(bg);
			return;
		}
		ch->bg = bg;
		ch->from = FROM_WRITER;
		kv_rdb_file_tail(&ch->b, bg->crc, bg->o.checksum);
		ch->off = bg->off;
		if (ch->b.failed) {
			fail(bg, -ENOMEM, "out of memory writing");
			release(bg, ch);
			finish(bg);
			return;
		}
		write_rest(bg, ch);
		if (!bg->writes) /* refused at once: failed */
			finish(bg);
		return;
	}
	rc = pc_file_sync(bg->f, false, synced, bg);
	if (rc) {
		fail(bg, rc, "cannot sync");
		finish(bg);
	}
}

/* ---- start: every shard held, each fixes its view ------------------------- */

static void begun(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bgsave *bg = j->owner;

	(void)sh;
	if (j->out.len) {
		fail(bg, -ENOMEM, "out of memory starting");
		bg->ended++; /* that shard sends nothing */
	}
	bg->keys += j->u64;
	bg->expires += (uint64_t)j->i64;
	kv_job_free(j);
	if (++bg->begun < bg->n)
		return;
	kv_hold_all_release(&bg->hold);
	bg->home->bg_fixing = NULL;
	if (bg->home->bg_claim == bg)
		bg->home->bg_claim = NULL;
	if (bg->reply_fn)
		bg->reply_fn(bg->home, bg->reply_arg, 0);
	write_head(bg);
}

int kv_bgsave_start(struct kv_shard *sh)
{
	struct kv_server *k = sh->srv;
	struct kv_totals t;
	struct kv_bgsave *bg;
	const char *dir;
	bool idle = false;
	int rc;

	if (!atomic_compare_exchange_strong(&k->bg_running, &idle, true))
		return -EBUSY;
	if (atomic_load(&k->rw_running)) { /* one snapshot per keyspace */
		atomic_store(&k->bg_running, false);
		return -EAGAIN;
	}
	bg = calloc(1, sizeof(*bg));
	if (!bg) {
		atomic_store(&k->bg_running, false);
		return -ENOMEM;
	}
	kv_view_totals(sh, &t);
	bg->home = sh;
	bg->n = sh->n;
	bg->tx = ((uint64_t)(sh->idx + 1) << 48) | ++sh->tx_seq;
	bg->start_ms = kv_now_ms();
	bg->changes = t.dirty;
	bg->wait_tail = &bg->wait_head;
	bg->o = (struct kv_rdb_save_opts){ .dir = sh->cfg.dir, .name = sh->cfg.dbfilename,
					   .checksum = sh->cfg.rdbchecksum, .now = bg->start_ms,
					   .used_mem = t.used_memory };
	atomic_store_explicit(&k->bg_start_ms, bg->start_ms, memory_order_relaxed);
	dir = kv_rdb_file_paths(&bg->o, "bg-", &bg->p, bg->why, sizeof(bg->why));
	if (!dir) {
		bg->err = -ENAMETOOLONG;
	} else {
		snprintf(bg->dir, sizeof(bg->dir), "%s", dir);
		rc = pc_file_open(&bg->f, bg->p.tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644, 0);
		if (rc)
			fail(bg, rc, "cannot create");
	}
	bg->o.dir = bg->dir; /* the settings may change meanwhile */
	bg->o.name = NULL;
	sh->bg_writing = bg;
	if (bg->err) {
		finish(bg); /* started, and failed: as a fork whose child fails */
		return 0;
	}
	sh->bg_fixing = bg;
	bg->hold = (struct kv_hold_all){ .home = sh, .tx = bg->tx, .n = bg->n, .owner = bg,
					 .fn = snap_begin, .done = begun };
	kv_hold_all(&bg->hold);
	return 0;
}

/* The writer stops with its save under way: the save fails as one whose
 * write failed, leaving no file behind (the dump at the stop, when the
 * rules ask for one, is written apart: kv_persist_stop_part). Its writes
 * still out are waited for, so that the file can close; the shards'
 * chunks it holds stay on their shards' lists (kv_bgsave_stop). */
static void give_up(struct kv_shard *sh)
{
	struct kv_bgsave *bg = sh->bg_writing;

	bg->stopping = true;
	fail(bg, -ECANCELED, "stopped writing");
	for (int i = 0; i < 10000 && sh->bg_writing && bg->writes; i++)
		pc_reactor_poll(pc_shard_reactor(), 1000000);
	if (!sh->bg_writing)
		return; /* it ended meanwhile (finish) */
	bg->wait_head = NULL; /* the shards' chunks, freed with their lists */
	if (bg->writes) { /* the disk never answered: left to the exit */
		unlink(bg->p.tmp);
		sh->bg_writing = NULL;
		return;
	}
	finish(bg);
}

void kv_bgsave_stop(struct kv_shard *sh)
{
	struct kv_snap *s = sh->snap;

	if (sh->bg_writing)
		give_up(sh);
	if (!s)
		return;
	sh->srv->snap_orphans[sh->idx] = s->out;
	if (s->cur)
		chunk_free(s->cur);
	kv_rdb_buf_free(&s->val);
	free(s);
	sh->snap = NULL;
}

int kv_bgsave_view(void *arg, bool schedule)
{
	struct kv_shard *sh = arg;
	int rc = kv_bgsave_start(sh);

	sh->bg_claim = rc ? NULL : sh->bg_fixing;
	if (rc == -EAGAIN && schedule) {
		atomic_store(&sh->srv->bg_scheduled, true);
		return 1;
	}
	return rc;
}

void kv_bgsave_tick(struct kv_shard *sh)
{
	struct kv_server *k = sh->srv;
	int rc;

	if (sh->idx || !atomic_load(&k->bg_scheduled) || atomic_load(&k->rw_running))
		return;
	rc = kv_bgsave_start(sh);
	if (rc == -EAGAIN)
		return; /* a rewrite began meanwhile: after that one */
	atomic_store(&k->bg_scheduled, false);
	if (rc && rc != -EBUSY) /* -EBUSY: a save runs already, which serves */
		pc_log(PC_LOG_WARN, "kv: the scheduled save could not begin: %s", strerror(-rc));
}

void kv_bgsave_free_orphans(struct kv_server *k)
{
	for (unsigned i = 0; i < k->n; i++) {
		struct snap_chunk *ch = k->snap_orphans[i], *next;

		for (; ch; ch = next) {
			next = ch->out_next;
			chunk_free(ch);
		}
		k->snap_orphans[i] = NULL;
	}
}

bool kv_bgsave_claimed(const struct kv_shard *sh)
{
	return sh->bg_claim != NULL;
}

bool kv_bgsave_hold(struct kv_shard *sh, void (*fn)(struct kv_shard *, void *, int), void *arg)
{
	struct kv_bgsave *bg = sh->bg_claim;

	if (!bg)
		return false;
	sh->bg_claim = NULL;
	bg->reply_fn = fn;
	bg->reply_arg = arg;
	return true;
}

static uint64_t rd(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

void kv_bgsave_totals(const struct kv_server *k, struct kv_totals *t)
{
	t->bgsave_in_progress = atomic_load_explicit(&k->bg_running, memory_order_relaxed);
	t->bgsave_last_ok = !atomic_load_explicit(&k->bg_failed, memory_order_relaxed);
	t->bgsave_started_ms = atomic_load_explicit(&k->bg_start_ms, memory_order_relaxed);
	t->bgsave_last_secs = atomic_load_explicit(&k->bg_last_secs, memory_order_relaxed);
	for (unsigned i = 0; i < k->n; i++) {
		t->snapshot_bytes += rd(&k->stats[i].snap_bytes);
		t->snapshot_peak_bytes += rd(&k->stats[i].snap_peak);
		t->snapshot_copied_keys += rd(&k->stats[i].snap_copied);
	}
}
