/* SPDX-License-Identifier: MIT */
/* BGREWRITEAOF without fork: every shard compacts its append-only file to
 * its live keys while it keeps serving, and all of them switch to the
 * compacted files once each has written its own.
 *
 *  1. begin (the shard that started it, home): every shard is held at
 *     once (the writer's lock every transaction takes, in ascending shard
 *     order), so no command runs anywhere while each shard, in a job:
 *     appends the marker PERCORE.REWRITE <id> to its file (a server of
 *     one shard writes no markers: its files stay Redis's), creates the
 *     new file <file>.rewrite starting with the same marker, and fixes
 *     a point-in-time view of its keys (db.h's snapshot, as BGSAVE). The
 *     shards are released: that is the rewrite's instant, the same on
 *     every shard, so each write spanning shards is before it on all of
 *     its shards or after it on all.
 *  2. walk (each shard): a deferred task walks a bounded step per reactor
 *     turn, writing each key's records (SET or RESTORE, PEXPIREAT) to
 *     the new file through a raw journal (percore/journal.h) in the
 *     file's sync mode; a record the shard appends meanwhile goes to both
 *     files, and a change to a key the walk has not reached writes that
 *     key first (the snapshot's copy before change), so in the new file
 *     every key's record comes before its later writes. Marked groups
 *     stay whole: a record is one group.
 *  3. ready (each shard): once its walk is written and the old file's
 *     marker is, both files are synced and the shard tells home.
 *  4. switch (each shard, once all are ready; any failure: every new file
 *     is removed and the old ones stay): the shard appends only to the
 *     new file from then on, waits for the copies it wrote before,
 *     syncs the new file, renames it over the old one and syncs the
 *     directory. Until then the replies of writes made after the switch
 *     wait (appendfsync always): only the new file holds them. The old
 *     journal is closed once its last records are confirmed.
 *
 * A crash at any point leaves loadable files: before a rename every old
 * file is whole; after some renames, the old files were synced through
 * the marker before the first, so the marked groups before an old file's
 * marker are whole (recovery applies them without counting parts: their
 * parts in the new files are part of those files' keys), but for those an
 * earlier start found partial and recorded as dropped, and groups after
 * it are counted as always (aof_shard.c). A new file no rename reached is
 * removed at start. */
#include "aof_rewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aof.h"
#include "aof_internal.h"
#include "percore/clock.h"
#include "percore/file.h"
#include "percore/log.h"
#include "percore/outbox.h"
#include "percore/shard.h"

#define RW_CHUNK      (256u << 10) /* key records appended as one */
#define RW_INFLIGHT   8u           /* chunks appended and not yet written, at most */
#define RW_STEP_KEYS  64u          /* entries one walk step looks at */
#define RW_TURN_KEYS  1024u        /* and one reactor turn, at most, */
#define RW_TURN_NS    100000u      /* or this long: each request waiting
					* meanwhile waits this long more
					* (docs/BENCHMARKS.md) */

/* The whole rewrite: home's. */
struct kv_aofrw {
	struct kv_shard *home;
	uint64_t tx;
	struct kv_hold_all hold;   /* every shard held while each fixes its view */
	unsigned n, begun, answered, finished;
	int64_t start_ms;
	char id[48];
	int *err;                  /* per shard: its part's answer (0: ready) */
	bool enable;               /* appendonly switching on: files from none */
	uint64_t gen;              /* the switch's (kv_server.aof_gen) */
	/* shards that had no part: one not yet able to (try again later),
	 * one that refused */
	bool later, refused;
};

/* One shard's part. */
struct kv_aofrw_part {
	struct kv_aofrw *rw;
	unsigned home;
	char tmp[640];
	struct pc_journal *tj;     /* the new file's journal until the switch */
	struct pc_file *oldf, *newf, *dirf;
	struct kv_reply buf;       /* key records not yet appended */
	uint64_t chunks;           /* of buf's appends, not yet written */
	uint64_t copies;           /* records copied to the new file, not yet written */
	uint64_t mark_at;          /* the old file's marker: its record's count */
	int err;
	unsigned syncs;            /* syncs on their way */
	bool deferred, walking, walked;
	bool answered;             /* ready or failed, told home */
	bool synced;               /* ready's syncs done */
	bool cut, placed;          /* switched; the new file renamed into place */
	bool ended;                /* switch or abort ordered by home */
	bool synced_new;           /* the switch's sync of the new file done */
	bool enable;               /* the rewrite's */
};

void kv_aofrw_new_path(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s.rewrite", path);
}

/* ---- a shard's part --------------------------------------------------------- */

static void advance(struct kv_aof *a);

static void part_fail(struct kv_aof *a, int err)
{
	struct kv_aofrw_part *p = a->rw;

	if (!p->err) {
		p->err = err;
		pc_log(PC_LOG_WARN, "kv: rewriting %s failed: %s", a->path, strerror(-err));
	}
}

static void defer_step(struct kv_aof *a);

static void on_chunk(uint64_t lsn, int err, void *arg)
{
	struct kv_aof *a = arg;
	struct kv_aofrw_part *p = a->rw;

	(void)lsn;
	p->chunks--;
	if (err)
		part_fail(a, err);
	/* a walk stopped by RW_INFLIGHT (writes meanwhile push chunks of
	 * their keys too) goes on */
	if (!p->walked && !a->stopping && p->chunks < RW_INFLIGHT)
		defer_step(a);
	advance(a);
}

static void on_copy(uint64_t lsn, int err, void *arg)
{
	struct kv_aof *a = arg;

	(void)lsn;
	a->rw->copies--;
	if (err)
		part_fail(a, err);
	advance(a);
}

/* The key records gathered so far go to the new file. */
static void push(struct kv_aof *a)
{
	struct kv_aofrw_part *p = a->rw;
	int rc;

	if (!p->buf.len)
		return;
	rc = p->buf.failed ? -ENOMEM :
	     p->err || p->cut ? 0 : pc_journal_append(p->tj, p->buf.buf, p->buf.len, on_chunk, a,
						     NULL);
	if (!rc && !p->err && !p->cut)
		p->chunks++;
	kv_reply_clear(&p->buf);
	p->buf.failed = false;
	if (rc)
		part_fail(a, rc);
}

void kv_aofrw_copy(struct kv_aof *a, const void *rec, size_t len)
{
	struct kv_aofrw_part *p = a->rw;
	int rc;

	if (p->err || p->cut)
		return;
	push(a); /* the keys this record changes, first */
	rc = pc_journal_append(p->tj, rec, len, on_copy, a, NULL);
	if (rc)
		part_fail(a, rc);
	else
		p->copies++;
}

/* The snapshot hands over a key: as the walk reached it, or before a
 * change. */
static void snap_key(const struct kv_entry *e, void *arg)
{
	struct kv_aof *a = arg;
	struct kv_aofrw_part *p = a->rw;

	if (p->err)
		return; /* failed: the walk runs on only to end the snapshot */
	kv_aof_key(&p->buf, e);
	if (!p->walking && p->buf.len >= RW_CHUNK)
		push(a);
}

static void step(void *arg);

static void defer_step(struct kv_aof *a)
{
	if (a->rw->deferred)
		return;
	a->rw->deferred = true;
	if (pc_reactor_defer(pc_shard_reactor(), step, a))
		abort(); /* -ENOMEM for a task: the snapshot could never end */
}

/* One turn's walk: RW_TURN_KEYS entries or RW_TURN_NS at most, and no
 * more while RW_INFLIGHT chunks wait for the disk. */
static void step(void *arg)
{
	struct kv_aof *a = arg;
	struct kv_aofrw_part *p = a->rw;
	struct kv_db *db = a->sh->db;
	uint64_t began = pc_now_ns();
	size_t seen = 0;

	p->deferred = false;
	p->walking = true;
	while (kv_db_snap_active(db) && seen < RW_TURN_KEYS && p->chunks < RW_INFLIGHT &&
	       pc_elapsed(pc_now_ns(), began) < RW_TURN_NS) {
		seen += kv_db_snap_step(db, RW_STEP_KEYS);
		if (p->buf.len >= RW_CHUNK)
			push(a);
	}
	p->walking = false;
	if (!kv_db_snap_active(db)) {
		p->walked = true;
		push(a);
		advance(a);
	} else if (p->chunks < RW_INFLIGHT) {
		defer_step(a);
	}
}

static void home_answer(void *arg);
static void home_final(void *arg);

/* Tells home: the part's answer (ready, or its error) or its end. */
static void tell_home(struct kv_aof *a, pc_msg_fn fn)
{
	struct kv_aofrw_part *p = a->rw;

	p->rw->err[a->sh->idx] = p->err;
	if (pc_shard_send_reply(p->home, fn, p->rw))
		abort(); /* the rewrite would wait for this shard forever */
}

static void on_ready_sync(struct pc_file *f, ssize_t res, void *arg)
{
	struct kv_aof *a = arg;

	(void)f;
	a->rw->syncs--;
	if (res < 0)
		part_fail(a, (int)res);
	if (!a->rw->syncs)
		a->rw->synced = true;
	advance(a);
}

/* Both files synced: the old one through its marker, the new one through
 * its keys. */
static void sync_both(struct kv_aof *a)
{
	struct kv_aofrw_part *p = a->rw;
	int rc;

	p->syncs = p->oldf ? 2 : 1; /* switching on: no old file */
	if (p->oldf && (rc = pc_file_sync(p->oldf, true, on_ready_sync, a))) {
		p->syncs--;
		part_fail(a, rc);
	}
	if ((rc = pc_file_sync(p->newf, true, on_ready_sync, a))) {
		p->syncs--;
		part_fail(a, rc);
	}
	if (!p->syncs)
		p->synced = true;
}

static void placed(struct kv_aof *a);

static void on_dir_sync(struct pc_file *f, ssize_t res, void *arg)
{
	struct kv_aof *a = arg;

	(void)f;
	a->rw->syncs--;
	if (a->stopping)
		return; /* kv_aofrw_stop() syncs the directory */
	if (res < 0)
		part_fail(a, (int)res);
	placed(a);
}

/* The switch's sync of the new file landed: it takes the old one's place
 * (rename, then the directory synced so that the rename survives). */
static void on_new_sync(struct pc_file *f, ssize_t res, void *arg)
{
	struct kv_aof *a = arg;
	struct kv_aofrw_part *p = a->rw;
	char dir[600];
	int rc = res < 0 ? (int)res : 0;

	(void)f;
	p->syncs--;
	if (a->stopping)
		return; /* kv_aofrw_stop() puts the file in place */
	p->synced_new = true;
	if (!rc && rename(p->tmp, a->path))
		rc = -errno;
	if (!rc) {
		snprintf(dir, sizeof(dir), "%s", a->sh->cfg.dir);
		rc = pc_file_open(&p->dirf, dir, O_RDONLY | O_DIRECTORY, 0, 0);
		if (!rc && !(rc = pc_file_sync(p->dirf, false, on_dir_sync, a))) {
			p->syncs++;
			return;
		}
	}
	part_fail(a, rc);
	placed(a);
}

/* The switch is over: the new file in place (its held confirmations go
 * out), or not (the file fails: writes are refused until the shard's
 * retry rewrites it whole, aof_shard.c). */
static void placed(struct kv_aof *a)
{
	struct kv_aofrw_part *p = a->rw;

	a->gate = false;
	if (p->err) {
		if (access(p->tmp, F_OK) == 0)
			unlink(p->tmp);
		kv_aof_fail(a, p->err);
	} else {
		p->placed = true;
		a->reopen_syncf = a->everysec;
		a->base_size = a->j ? pc_journal_written(a->j) : 0;
		pc_log(PC_LOG_INFO, "kv: %s rewritten: %" PRIu64 " bytes", a->path, a->base_size);
	}
	kv_aof_confirm(a, a->gated, a->log.err);
	kv_aof_publish(a);
	advance(a);
}

static void part_free(struct kv_aofrw_part *p)
{
	pc_file_close(p->oldf);
	pc_file_close(p->newf);
	pc_file_close(p->dirf);
	kv_reply_free(&p->buf);
	free(p);
}

/* The part is over: its files closed, the new one removed unless it is in
 * place, and home told. */
static void part_end(struct kv_aof *a)
{
	struct kv_aofrw_part *p = a->rw;
	bool p_enable_given_up = p->enable && !p->cut;

	if (p->tj && pc_journal_close(p->tj))
		return; /* its callbacks still to run (the next tick tries again) */
	p->tj = NULL;
	if (!p->cut)
		unlink(p->tmp);
	if (!p->cut && !p->err)
		p->err = -ECANCELED;
	tell_home(a, home_final);
	part_free(p);
	a->rw = NULL;
	if (p_enable_given_up)
		kv_aof_close(a); /* a later try starts from none again */
}

/* The part's next move, whenever something it waits for happened. */
static void advance(struct kv_aof *a)
{
	struct kv_aofrw_part *p = a->rw;
	bool written = p->walked && !p->chunks && !p->syncs;

	if (a->stopping)
		return; /* kv_aofrw_stop() ends the part */
	if (!p->answered && p->err) {
		p->answered = true;
		tell_home(a, home_answer);
	}
	if (!p->answered && written && !p->synced && a->confirmed >= p->mark_at)
		sync_both(a);
	if (!p->answered && p->synced) {
		p->answered = true;
		tell_home(a, home_answer);
	}
	if (p->cut && a->gate && !p->syncs) {
		if (p->err) {
			placed(a);
			return;
		}
		if (!p->copies && !p->synced_new) {
			int rc = pc_file_sync(p->newf, true, on_new_sync, a);

			if (!rc) {
				p->syncs++;
				return;
			}
			p->synced_new = true;
			part_fail(a, rc);
			placed(a);
			return;
		}
	}
	if (p->ended && written && !p->copies && !(p->cut && a->gate))
		part_end(a);
}

/* Home orders the switch. */
static void part_switch(void *arg)
{
	struct kv_shard *sh = pc_shard_user();
	struct kv_aof *a = sh->aof;
	struct kv_aofrw_part *p = a->rw;

	(void)arg;
	p->ended = true;
	if (p->err || a->log.err) {
		part_fail(a, p->err ? p->err : a->log.err);
		advance(a);
		return;
	}
	push(a);
	if (p->enable) { /* nothing was held before: the file holds it all once placed */
		a->enabling = false;
		a->confirmed = a->appended;
	}
	a->retired = a->j;
	a->j = p->tj;
	p->tj = NULL;
	a->nbase = a->appended - (pc_journal_next_lsn(a->j) - 1);
	a->cb = kv_aof_on_new;
	a->gate = true;
	a->gated = a->confirmed;
	p->cut = true;
	advance(a);
}

/* Home gives the rewrite up. */
static void part_abort(void *arg)
{
	struct kv_aof *a = ((struct kv_shard *)pc_shard_user())->aof;

	(void)arg;
	a->rw->ended = true;
	part_fail(a, -ECANCELED);
	advance(a);
}

void kv_aofrw_file_failed(struct kv_aof *a)
{
	if (a->rw)
		part_fail(a, a->log.err);
}

void kv_aofrw_set_sync(struct kv_aof *a)
{
	if (a->rw && a->rw->tj)
		pc_journal_set_sync(a->rw->tj, a->o.sync);
}

/* A part already switched completes: its new file holds the latest
 * writes. */
void kv_aofrw_cancel(struct kv_aof *a)
{
	if (!a->rw || a->rw->cut)
		return;
	part_fail(a, -ECANCELED);
	advance(a);
}

/* Under the rewrite's hold of every shard: this shard's part begins (an
 * error in j->out when it cannot). */
static void part_begin(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_aofrw *rw = j->owner;
	struct kv_aof *a = sh->aof;
	struct kv_aofrw_part *p = NULL;
	const char *mark[] = { KV_AOF_RW_MARK, rw->id };
	const size_t markl[] = { strlen(KV_AOF_RW_MARK), strlen(rw->id) };
	int rc = 0;

	if (rw->enable)
		a = kv_aof_enable(sh, rw->gen, &rc);
	if (a)
		kv_aof_settle(a);
	if (!a || a->log.err || a->rw || a->retired || a->gate || a->depth || a->off ||
	    a->enabling != rw->enable || kv_db_snap_active(sh->db) ||
	    !(p = calloc(1, sizeof(*p)))) {
		if (a && rw->enable)
			kv_aof_close(a);
		if (rc == -EAGAIN)
			kv_reply_error(&j->out, "BUSY", 4); /* begun(): try again later */
		else
			kv_reply_error(&j->out, "ERR", 3);
		return;
	}
	p->rw = rw;
	p->enable = rw->enable;
	p->home = j->home;
	kv_reply_init(&p->buf);
	kv_aofrw_new_path(a->path, p->tmp, sizeof(p->tmp));
	unlink(p->tmp);
	rc = pc_journal_open_file(&p->tj, p->tmp, &a->o);
	if (!rc)
		rc = pc_file_open(&p->newf, p->tmp, O_WRONLY, 0, 0);
	if (!rc && !p->enable)
		rc = pc_file_open(&p->oldf, a->path, O_WRONLY, 0, 0);
	/* the marker: the old file's (switching on: none) and the new one's */
	if (!rc && sh->n > 1 && !p->enable)
		rc = kv_aof_append_command(a, 2, mark, markl);
	if (!rc && sh->n > 1)
		kv_aof_command(&p->buf, 2, mark, markl);
	p->mark_at = a->appended;
	if (rc) {
		pc_log(PC_LOG_WARN, "kv: rewriting %s: %s", a->path, strerror(-rc));
		pc_journal_close(p->tj);
		unlink(p->tmp);
		part_free(p);
		if (rw->enable)
			kv_aof_close(a);
		kv_reply_error(&j->out, "ERR", 3);
		return;
	}
	a->rw = p;
	push(a); /* the new file's marker, first */
	if (kv_db_snap_begin(sh->db, kv_now_ms(), snap_key, a))
		abort(); /* checked above: no walk runs */
	defer_step(a);
}

/* ---- home's side -------------------------------------------------------------- */

static uint64_t rd(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* A switch-on given up only because a shard could not take its part
 * yet (the others cancelled theirs): it is tried again. */
static bool try_later(const struct kv_aofrw *rw)
{
	bool later = rw->later && !rw->refused;

	for (unsigned i = 0; i < rw->n; i++)
		later &= !rw->err[i] || rw->err[i] == -ENOENT || rw->err[i] == -ECANCELED;
	return later;
}

/* The rewrite's outcome in INFO's figures. */
static void count(struct kv_server *k, const struct kv_aofrw *rw, bool ok)
{
	int64_t now = kv_now_ms();

	if (ok) {
		atomic_fetch_add_explicit(&k->rw_count, 1, memory_order_relaxed);
		atomic_store_explicit(&k->rw_streak, 0, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&k->rw_streak, 1, memory_order_relaxed);
		pc_log(PC_LOG_WARN, "kv: BGREWRITEAOF failed (the shards' logs say why)");
	}
	atomic_store_explicit(&k->rw_failed, !ok, memory_order_relaxed);
	atomic_store_explicit(&k->rw_last_secs, now > rw->start_ms ? (now - rw->start_ms) / 1000 : 0,
			      memory_order_relaxed);
}

static void finish(struct kv_aofrw *rw)
{
	struct kv_server *k = rw->home->srv;
	bool ok = true, retry = rw->enable && try_later(rw);

	for (unsigned i = 0; i < rw->n; i++)
		ok &= !rw->err[i];
	if (retry)
		pc_log(PC_LOG_INFO, "kv: a shard's file of an earlier time still closes: the "
		       "append-only files are written again shortly");
	/* a switch-on that a switch-off ended is no failed rewrite (Redis
	 * stops its child without a word either) */
	if (!retry && !(rw->enable && atomic_load(&k->aof_gen) != rw->gen))
		count(k, rw, ok);
	k->rw_cur = NULL;
	atomic_store_explicit(&k->rw_running, false, memory_order_release);
	if (rw->enable)
		kv_aof_switch_done(rw->home, rw->gen, ok, retry);
	free(rw->err);
	free(rw);
}

static void home_final(void *arg)
{
	struct kv_aofrw *rw = arg;

	if (++rw->finished == rw->n)
		finish(rw);
}

/* Every part answered: all switch, or all give up. */
static void decide(struct kv_aofrw *rw)
{
	bool ok = true;

	for (unsigned i = 0; i < rw->n; i++)
		ok &= !rw->err[i];
	for (unsigned i = 0; i < rw->n; i++)
		if (rw->err[i] != -ENOENT && pc_shard_send_reply(i, ok ? part_switch : part_abort, rw))
			abort(); /* the part would never end */
	if (rw->finished == rw->n)
		finish(rw);
}

static void home_answer(void *arg)
{
	struct kv_aofrw *rw = arg;

	if (++rw->answered == rw->n && rw->begun == rw->n)
		decide(rw);
}

static void begun(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_aofrw *rw = j->owner;

	(void)sh;
	if (j->out.len) { /* no part there: it answers nothing */
		if (j->out.len > 5 && !memcmp(j->out.buf + 1, "BUSY", 4))
			rw->later = true;
		else
			rw->refused = true;
		rw->err[j->target] = -ENOENT;
		rw->answered++;
		rw->finished++;
	}
	kv_job_free(j);
	if (++rw->begun < rw->n)
		return;
	kv_hold_all_release(&rw->hold);
	if (rw->answered == rw->n)
		decide(rw);
}

int kv_aofrw_start(struct kv_shard *sh)
{
	struct kv_server *k = sh->srv;
	struct kv_aofrw *rw;
	bool idle = false;
	int state = atomic_load(&k->aof_state);

	if (state == KV_AOF_OFF || (state == KV_AOF_ON && !sh->aof)) {
		atomic_store(&k->rw_scheduled, false);
		return -ENOTSUP;
	}
	if (!atomic_compare_exchange_strong(&k->rw_running, &idle, true))
		return -EBUSY;
	if (atomic_load(&k->bg_running)) {
		atomic_store(&k->rw_running, false);
		atomic_store(&k->rw_scheduled, true);
		return 1;
	}
	atomic_store(&k->rw_scheduled, false);
	rw = calloc(1, sizeof(*rw));
	if (!rw || !(rw->err = calloc(sh->n, sizeof(*rw->err)))) {
		free(rw);
		atomic_store(&k->rw_running, false);
		return -ENOMEM;
	}
	rw->home = sh;
	rw->n = sh->n;
	rw->enable = state == KV_AOF_WAIT;
	rw->gen = atomic_load(&k->aof_gen);
	rw->tx = kv_shard_tx_id(sh);
	rw->start_ms = kv_now_ms();
	snprintf(rw->id, sizeof(rw->id), "%lld:%" PRIu64, (long long)rw->start_ms, rw->tx);
	k->rw_cur = rw;
	atomic_store_explicit(&k->rw_start_ms, rw->start_ms, memory_order_relaxed);
	pc_log(PC_LOG_INFO, "kv: rewriting the append-only files");
	rw->hold = (struct kv_hold_all){ .home = sh, .tx = rw->tx, .n = rw->n, .owner = rw,
					 .fn = part_begin, .done = begun };
	kv_hold_all(&rw->hold);
	return 0;
}

int kv_aofrw_view(void *arg)
{
	return kv_aofrw_start(arg);
}

/* Whether the files grew past the automatic rule's limits since their
 * last rewrite (Redis's rule, over the sum of the shards' files). */
static bool rule_due(const struct kv_shard *sh)
{
	const struct kv_server *k = sh->srv;
	uint64_t size = 0, base = 0;

	if (!sh->cfg.auto_aof_rewrite_percentage)
		return false;
	for (unsigned i = 0; i < k->n; i++) {
		size += rd(&k->stats[i].aof_size);
		base += rd(&k->stats[i].aof_base);
	}
	if (size < sh->cfg.auto_aof_rewrite_min_size)
		return false;
	base = base ? base : 1;
	return size > base && (size - base) * 100 / base >= sh->cfg.auto_aof_rewrite_percentage;
}

void kv_aofrw_tick(struct kv_aof *a)
{
	if (a->rw)
		advance(a);
}

void kv_aofrw_due(struct kv_shard *sh)
{
	struct kv_server *k = sh->srv;

	if (sh->idx || atomic_load(&k->rw_running) || atomic_load(&k->bg_running))
		return;
	if (atomic_load(&k->rw_scheduled) || rule_due(sh))
		kv_aofrw_start(sh);
}

void kv_aofrw_stop(struct kv_aof *a)
{
	struct kv_aofrw_part *p = a->rw;
	bool in_place = false;
	int dfd;

	if (!p)
		return;
	for (int i = 0; i < 10000 && p->syncs; i++) /* the file calls under way land */
		pc_reactor_poll(pc_shard_reactor(), 1000000);
	pc_journal_close_final(p->tj);
	/* switched: the new file holds the latest writes, so it goes in place
	 * now (if its own switch did not put it there already) */
	if (p->cut && !p->err) {
		in_place = access(p->tmp, F_OK) != 0 ||
			   (!fdatasync(pc_file_fd(p->newf)) && !rename(p->tmp, a->path));
		dfd = open(a->sh->cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd))
			in_place = false;
		if (dfd >= 0)
			close(dfd);
		if (!in_place)
			pc_log(PC_LOG_ERROR, "kv: %s: the rewritten file could not take its place at "
			       "stop: %s", a->path, strerror(errno));
	}
	if (!in_place)
		unlink(p->tmp);
	part_free(p);
	a->rw = NULL;
}

void kv_aofrw_free_left(struct kv_server *k)
{
	if (k->rw_cur) {
		free(k->rw_cur->err);
		free(k->rw_cur);
		k->rw_cur = NULL;
	}
}

void kv_aofrw_totals(const struct kv_server *k, struct kv_totals *t)
{
	/* as Redis: on from the moment appendonly is set, while the first
	 * rewrite runs */
	t->aof_enabled = atomic_load_explicit(&k->aof_state, memory_order_relaxed) != KV_AOF_OFF;
	t->aofrw_in_progress = atomic_load_explicit(&k->rw_running, memory_order_relaxed);
	t->aofrw_scheduled = atomic_load_explicit(&k->rw_scheduled, memory_order_relaxed);
	t->aofrw_last_ok = !atomic_load_explicit(&k->rw_failed, memory_order_relaxed);
	t->aofrw_started_ms = atomic_load_explicit(&k->rw_start_ms, memory_order_relaxed);
	t->aofrw_last_secs = atomic_load_explicit(&k->rw_last_secs, memory_order_relaxed);
	t->aofrw_count = rd(&k->rw_count);
	t->aofrw_fail_streak = rd(&k->rw_streak);
	for (unsigned i = 0; i < k->n; i++)
		t->aof_base_size += rd(&k->stats[i].aof_base);
}
