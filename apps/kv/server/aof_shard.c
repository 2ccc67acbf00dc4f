/* SPDX-License-Identifier: MIT */
/* One shard's append-only file (aof_shard.h). */
#include "aof_shard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aof.h"
#include "aof_internal.h"
#include "aof_rewrite.h"
#include "keyhash.h"
#include "percore/file.h"
#include "percore/journal.h"
#include "percore/log.h"
#include "server_internal.h"

/* everysec's period, and how often a failed file is tried again (ms). */
#define TICK_MS 1000u
/* A rewrite's output goes to the file in pieces of about this size. */
#define REWRITE_CHUNK (1u << 20)

/* A hold: fn(arg) once record lsn (counted over the shard's life) is
 * confirmed. */
struct kv_aof_waiter {
	uint64_t lsn;
	kv_aof_done_fn *fn;
	void *arg;
};

/* ---- appending ---------------------------------------------------------------- */

/* The file's figures for INFO and /metrics (relaxed: other threads read
 * them). */
void kv_aof_publish(struct kv_aof *a)
{
	struct kv_shard_stats *st = a->sh->st;

	atomic_store_explicit(&st->aof_on, !a->off, memory_order_relaxed);
	atomic_store_explicit(&st->aof_size, a->j ? pc_journal_written(a->j) : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&st->aof_base, a->base_size, memory_order_relaxed);
	/* switching on, nothing is held: nothing waits */
	atomic_store_explicit(&st->aof_pending, a->enabling ? 0 : a->appended - a->confirmed,
			      memory_order_relaxed);
	atomic_store_explicit(&st->aof_err, (uint64_t)-a->log.err, memory_order_relaxed);
}

static void release(struct kv_aof *a, int err)
{
	while (a->wh < a->wn && a->w[a->wh].lsn <= a->confirmed) {
		struct kv_aof_waiter w = a->w[a->wh++];

		w.fn(a->sh, w.arg, err);
	}
	if (a->wh == a->wn)
		a->wh = a->wn = 0;
}

void kv_aof_fail(struct kv_aof *a, int err)
{
	if (a->log.err)
		return;
	a->log.err = err;
	pc_log(PC_LOG_ERROR, "kv: writing %s failed: %s; writes are refused until it works again",
	       a->path, strerror(-err));
	a->dead = a->j;
	a->j = NULL;
	kv_aofrw_file_failed(a);
	kv_aof_publish(a);
}

/* Two journals may confirm at once (a rewrite's switch): confirmed only
 * rises. */
void kv_aof_confirm(struct kv_aof *a, uint64_t upto, int err)
{
	if (upto > a->confirmed)
		a->confirmed = upto;
	release(a, err);
}

static void on_record(uint64_t lsn, int err, void *arg)
{
	struct kv_aof *a = arg;

	if (err)
		kv_aof_fail(a, err);
	kv_aof_confirm(a, a->base + lsn, err);
}

void kv_aof_on_new(uint64_t lsn, int err, void *arg)
{
	struct kv_aof *a = arg;
	uint64_t upto = a->nbase + lsn;

	if (err)
		kv_aof_fail(a, err);
	if (a->gate && !err) {
		if (upto > a->gated)
			a->gated = upto;
		return;
	}
	kv_aof_confirm(a, upto, err);
}

/* Appends the record built in rec (when it holds anything): to the file,
 * and to a rewrite's new file while one is written. */
static void flush_rec(struct kv_aof *a)
{
	int rc;

	if (!a->rec.len)
		return;
	rc = a->rec.failed ? -ENOMEM :
	     a->j ? pc_journal_append(a->j, a->rec.buf, a->rec.len, a->cb, a, NULL) :
		    a->log.err;
	if (!rc && a->rw)
		kv_aofrw_copy(a, a->rec.buf, a->rec.len);
	a->appended++;
	kv_reply_clear(&a->rec);
	a->rec.failed = false;
	if (rc)
		kv_aof_fail(a, rc);
}

int kv_aof_append_command(struct kv_aof *a, uint32_t argc, const char *const *argv,
			  const size_t *argl)
{
	kv_aof_command(&a->rec, argc, argv, argl);
	flush_rec(a);
	return a->log.err;
}

static void wrote(struct kv_cmd_log *l, const struct kv_call *c, size_t mark)
{
	struct kv_aof *a = pc_container_of(l, struct kv_aof, log);

	kv_aof_effect(&a->rec, c, mark);
	if (!a->depth)
		flush_rec(a);
}

static void group_open(struct kv_aof *a, const char *mark_id, size_t idlen, unsigned parts)
{
	if (a->depth++)
		return;
	kv_aof_command(&a->rec, 1, (const char *const[]){ "MULTI" }, (const size_t[]){ 5 });
	if (mark_id) {
		char n[16];
		size_t nl = (size_t)snprintf(n, sizeof(n), "%u", parts);

		kv_aof_command(&a->rec, 3, (const char *const[]){ KV_AOF_TX_MARK, mark_id, n },
			       (const size_t[]){ strlen(KV_AOF_TX_MARK), idlen, nl });
	}
	a->body = a->rec.len;
}

/* Closes a group: written with its EXEC, unless it is an unmarked one
 * that recorded nothing (a marked part is written even empty: recovery
 * counts the parts). */
static void group_close(struct kv_aof *a, bool marked)
{
	if (!a->depth || --a->depth)
		return;
	if (a->rec.len == a->body && !marked) {
		kv_reply_clear(&a->rec);
		return;
	}
	kv_aof_command(&a->rec, 1, (const char *const[]){ "EXEC" }, (const size_t[]){ 4 });
	flush_rec(a);
}

static void group(struct kv_cmd_log *l, bool begin)
{
	struct kv_aof *a = pc_container_of(l, struct kv_aof, log);

	if (begin)
		group_open(a, NULL, 0, 0);
	else
		group_close(a, false);
}

/* The shard's file state while it logs writes (not once switched off). */
static struct kv_aof *logging(const struct kv_shard *sh)
{
	return sh->aof && !sh->aof->off ? sh->aof : NULL;
}

void kv_aof_part_begin(struct kv_shard *sh, uint64_t tx, unsigned parts)
{
	char id[48];

	if (!logging(sh))
		return;
	group_open(sh->aof, id, (size_t)snprintf(id, sizeof(id), "%lld:%" PRIu64,
						 (long long)sh->srv->start_ms, tx), parts);
}

void kv_aof_part_end(struct kv_shard *sh)
{
	if (logging(sh))
		group_close(sh->aof, true);
}

struct kv_cmd_log *kv_aof_log(struct kv_shard *sh)
{
	return logging(sh) ? &sh->aof->log : NULL;
}

uint64_t kv_aof_mark(const struct kv_shard *sh)
{
	return sh->aof ? sh->aof->appended : 0;
}

bool kv_aof_must_hold(const struct kv_shard *sh, uint64_t mark)
{
	const struct kv_aof *a = sh->aof;

	return a && a->always && !a->enabling && a->appended != mark &&
	       (a->log.err || a->confirmed < a->appended);
}

bool kv_aof_hold(struct kv_shard *sh, uint64_t mark, kv_aof_done_fn *fn, void *arg)
{
	struct kv_aof *a = sh->aof;

	if (!kv_aof_must_hold(sh, mark))
		return false;
	if (a->log.err) {
		fn(sh, arg, a->log.err);
		return true;
	}
	if (a->wn == a->wcap) {
		size_t cap = a->wcap ? 2 * a->wcap : 256;
		struct kv_aof_waiter *n = realloc(a->w, cap * sizeof(*n));

		if (!n) {
			fn(sh, arg, -ENOMEM);
			return true;
		}
		a->w = n;
		a->wcap = cap;
	}
	a->w[a->wn++] = (struct kv_aof_waiter){ .lsn = a->appended, .fn = fn, .arg = arg };
	return true;
}

/* A record built outside the command table's log: appended now unless
 * a group is open. */
static void record_built(struct kv_aof *a)
{
	if (!a->depth)
		flush_rec(a);
}

void kv_aof_touched(struct kv_shard *sh, const char *key, size_t len)
{
	struct kv_pos pos;
	struct kv_entry *e;

	if (!logging(sh))
		return;
	e = kv_db_lookup(sh->db, key, len, kv_now_ms(), &pos);
	if (e)
		kv_aof_key(&sh->aof->rec, e);
	else
		kv_aof_del(&sh->aof->rec, key, len);
	record_built(sh->aof);
}

void kv_aof_gone(void *arg, const char *key, size_t len)
{
	struct kv_shard *sh = arg;

	if (!sh->aof)
		return;
	kv_aof_del(&sh->aof->rec, key, len);
	record_built(sh->aof);
}

/* ---- a failed file, tried again ------------------------------------------------- */

struct rewrite {
	int fd;
	int err;
	struct kv_reply buf;
};

static void write_out(struct rewrite *r)
{
	size_t off = 0;

	while (!r->err && off < r->buf.len) {
		ssize_t n = write(r->fd, r->buf.buf + off, r->buf.len - off);

		if (n < 0 && errno != EINTR)
			r->err = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	kv_reply_clear(&r->buf);
}

static void rewrite_key(const struct kv_entry *e, void *arg)
{
	struct rewrite *r = arg;

	kv_aof_key(&r->buf, e);
	if (r->buf.failed)
		r->err = -ENOMEM;
	if (r->buf.len >= REWRITE_CHUNK)
		write_out(r);
}

/* Writes the keyspace whole to path.tmp, synced, and renames it over
 * path (then syncs the directory). Blocking: after a write error, and
 * converting files at start (aof_load.c). */
int kv_aof_write_keys(struct kv_shard *sh, const char *path)
{
	char tmp[640], dir[600];
	struct rewrite r = { .fd = -1 };
	uint64_t cursor = 0;
	int dfd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(dir, sizeof(dir), "%s", sh->cfg.dir);
	r.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r.fd < 0)
		return -errno;
	kv_reply_init(&r.buf);
	do
		cursor = kv_db_scan(sh->db, cursor, kv_now_ms(), rewrite_key, &r);
	while (cursor && !r.err);
	write_out(&r);
	kv_reply_free(&r.buf);
	if (!r.err && fdatasync(r.fd))
		r.err = -errno;
	close(r.fd);
	if (!r.err && rename(tmp, path))
		r.err = -errno;
	if (r.err) {
		unlink(tmp);
		return r.err;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd))
			r.err = -errno;
		close(dfd);
	}
	return r.err;
}

static void on_synced(struct pc_file *f, ssize_t res, void *arg)
{
	struct kv_aof *a = arg;

	(void)f;
	a->syncing = false;
	if (res < 0)
		kv_aof_fail(a, (int)res);
}

/* everysec: a sync of what was written since the last, unless one is
 * still on its way. */
static void everysec_sync(struct kv_aof *a)
{
	uint64_t written = pc_journal_written(a->j);

	if (a->syncing || written == a->synced_size)
		return;
	a->synced_size = written;
	a->syncing = !pc_file_sync(a->syncf, true, on_synced, a);
}

/* The file opened for appending: its journal and, for everysec, the
 * handle synced once a second. */
static int open_file(struct kv_aof *a)
{
	int rc = pc_journal_open_file(&a->j, a->path, &a->o);

	if (!rc && a->everysec && (rc = pc_file_open(&a->syncf, a->path, O_WRONLY, 0, 0))) {
		pc_journal_close(a->j);
		a->j = NULL;
	}
	if (!rc)
		a->synced_size = pc_journal_written(a->j);
	return rc;
}

/* A sync on its way lands (at a stop: the shard's loop runs no more). */
static void sync_wait(struct kv_aof *a)
{
	for (int i = 0; i < 10000 && a->syncing; i++)
		pc_reactor_poll(pc_shard_reactor(), 1000000);
}

/* After a rewrite's switch: the old file's journal closed once its
 * records are confirmed, then one base for the callbacks again; the
 * everysec handle moved to the new file. */
void kv_aof_settle(struct kv_aof *a)
{
	if (a->retired && !pc_journal_close(a->retired))
		a->retired = NULL;
	if (!a->retired && !a->gate && a->cb != on_record) {
		a->base = a->nbase;
		a->cb = on_record;
	}
	if (a->reopen_syncf && !a->syncing) {
		pc_file_close(a->syncf);
		a->syncf = NULL;
		a->reopen_syncf = false;
		if (!pc_file_open(&a->syncf, a->path, O_WRONLY, 0, 0))
			a->synced_size = 0;
		else
			kv_aof_fail(a, -EIO);
	}
}

static void close_step(struct kv_aof *a);

static void tick(struct pc_periodic *p, void *arg)
{
	struct kv_aof *a = arg;
	int rc;

	(void)p;
	if (a->off) {
		close_step(a);
		return;
	}
	kv_aof_publish(a);
	kv_aof_settle(a);
	kv_aofrw_tick(a);
	kv_aofrw_due(a->sh);
	if (!a->log.err && a->everysec && a->syncf)
		everysec_sync(a);
	/* a switch-on's failed file is not tried again: appendonly goes off */
	if (!a->log.err || a->depth || a->syncing || a->rw || a->retired || a->enabling)
		return;
	if (a->dead && pc_journal_close(a->dead))
		return; /* its callbacks still to run */
	a->dead = NULL;
	pc_file_close(a->syncf);
	a->syncf = NULL;
	rc = kv_aof_write_keys(a->sh, a->path);
	if (!rc)
		rc = open_file(a);
	if (rc)
		return;
	a->base = a->appended;
	a->confirmed = a->appended;
	a->cb = on_record;
	a->gate = false;
	a->base_size = pc_journal_written(a->j);
	a->log.err = 0;
	kv_aof_publish(a);
	pc_log(PC_LOG_INFO, "kv: %s written again; writes are accepted", a->path);
}

/* ---- the shard's life ----------------------------------------------------------- */

/* A rewrite's new file left by a crash: never in place, so never needed
 * (the old file is whole until the rename). */
static void drop_rewrite_left(const char *path)
{
	char tmp[640];

	kv_aofrw_new_path(path, tmp, sizeof(tmp));
	if (unlink(tmp) == 0)
		pc_log(PC_LOG_INFO, "kv: %s: an unfinished rewrite's file removed", tmp);
}

/* How long records wait to share a write with everysec and no (us). */
#define KV_AOF_GATHER_US 1000
/* The longest average fdatasync that always waits out on the shard (us). */
#define KV_AOF_INLINE_SYNC_US 1000
/* How far always extends the file ahead of its records (bytes). */
#define KV_AOF_EXTEND_AHEAD (1u << 20)

/* The file's appendfsync mode (the journal's, for the next open). */
static void set_mode(struct kv_aof *a, enum kv_fsync mode)
{
	a->always = mode == KV_FSYNC_ALWAYS;
	a->everysec = mode == KV_FSYNC_EVERYSEC;
	a->o.sync = a->always ? PC_JOURNAL_SYNC_ALWAYS : PC_JOURNAL_SYNC_NEVER;
	/* everysec and no: records go to the kernel once a millisecond, not
	 * once a turn: a write(2) per request at depth 1 cost about a third
	 * of the server's CPU (docs/BENCHMARKS.md), and a process killed
	 * loses at most that millisecond, well inside everysec's second */
	a->o.gather_us = KV_AOF_GATHER_US;
	/* always: a quick fdatasync is waited out on the shard, as
	 * redis-server does, not handed to a kernel worker that wakes the
	 * shard when done (docs/BENCHMARKS.md) */
	a->o.inline_sync_us = KV_AOF_INLINE_SYNC_US;
	/* always: the file's size changes once a megabyte, not with every
	 * batch, so that a batch's fdatasync writes its data alone (ext4
	 * here: 0.18 against 0.27 ms); the padding reads as comments */
	a->o.extend_ahead = KV_AOF_EXTEND_AHEAD;
	a->o.pad_byte = KV_AOF_PAD;
}

/* The shard's file state, no file open yet. */
static struct kv_aof *aof_new(struct kv_shard *sh)
{
	struct kv_aof *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->sh = sh;
	a->log = (struct kv_cmd_log){ .wrote = wrote, .group = group };
	a->cb = on_record;
	kv_reply_init(&a->rec);
	kv_aof_file_path(&sh->cfg, sh->idx, sh->n, a->path, sizeof(a->path));
	pc_journal_opts_init(&a->o);
	set_mode(a, sh->cfg.appendfsync);
	return a;
}

void kv_aof_start(struct kv_shard *sh)
{
	const struct kv_config *cfg = &sh->cfg;
	struct kv_aof *a;
	int rc;

	if (!cfg->appendonly || !sh->srv->aof_start)
		return;
	a = aof_new(sh);
	if (!a) {
		kv_aof_start_failed(sh->srv, -ENOMEM, "out of memory", cfg->dir);
		return;
	}
	drop_rewrite_left(a->path);
	if (!kv_aof_load(sh, a->path)) { /* replayed before sh->aof is set: not logged */
		sh->aof = a;
		/* the start fails: writes meanwhile are refused, and the file
		 * is neither opened nor written again (either would create
		 * it, and a conversion would look done); no tick */
		a->log.err = -EBADMSG;
		kv_aof_publish(a);
		return;
	}
	rc = open_file(a);
	if (rc)
		kv_aof_start_failed(sh->srv, rc, strerror(-rc), a->path);
	else
		a->base_size = pc_journal_written(a->j);
	pc_periodic_start(&a->tick, pc_shard_reactor(), TICK_MS, tick, a);
	sh->aof = a;
	kv_aof_publish(a);
}

void kv_aof_stop(struct kv_shard *sh)
{
	struct kv_aof *a = sh->aof;
	struct pc_journal *j, *dead;
	int rc;

	if (!a)
		return;
	pc_periodic_stop(&a->tick);
	a->stopping = true; /* the closes below run callbacks */
	sync_wait(a);
	j = a->j;
	dead = a->dead;
	a->j = a->dead = NULL;
	a->wh = a->wn = 0;      /* the held jobs go with their clients */
	a->log.err = -ESHUTDOWN; /* the callbacks of the close change nothing */
	/* What was appended and not yet written goes out now, whatever the
	 * mode: a stop loses no acknowledged write. */
	rc = pc_journal_close_final(j);
	if (rc)
		pc_log(PC_LOG_ERROR, "kv: %s: the last writes at stop failed: %s", a->path,
		       strerror(-rc));
	pc_journal_close_final(dead);
	pc_journal_close_final(a->retired);
	a->retired = NULL;
	kv_aofrw_stop(a); /* after the close: a switch under way completes */
	if (a->syncf && fdatasync(pc_file_fd(a->syncf))) /* everysec: the last second */
		pc_log(PC_LOG_ERROR, "kv: %s: sync at stop: %s", a->path, strerror(errno));
	pc_file_close(a->syncf);
	free(a->w);
	kv_aof_tx_drop_all(a);
	kv_reply_free(&a->rec);
	free(a);
	sh->aof = NULL;
}

/* ---- switched at run time --------------------------------------------------------- */

/* How often a file switched off looks whether it can close (ms). */
#define CLOSE_TICK_MS 10u

/* Switching on: the files of an earlier time on are stale (the keyspace
 * changed since they closed), so they go, and the hash key in use is
 * written beside the files to come, first: a crash before every file is
 * in place leaves files that load with it. */
static int switch_on_files(const struct kv_config *cfg, unsigned n)
{
	char path[600];
	uint8_t key[16];

	for (unsigned i = 0; i < n; i++) {
		kv_aof_file_path(cfg, i, n, path, sizeof(path));
		if (unlink(path) && errno != ENOENT)
			return -errno;
	}
	snprintf(path, sizeof(path), "%s/%s.hashkey", cfg->dir, cfg->appendfilename);
	if (unlink(path) && errno != ENOENT)
		return -errno;
	kv_keyhash_get_key(key);
	return kv_aof_write_key(path, cfg->dir, key);
}

int kv_aof_config(struct kv_shard *sh, const struct kv_config *next, char *why, size_t whylen)
{
	struct kv_server *k = sh->srv;
	int off = KV_AOF_OFF, rc;

	if (!next->appendonly) {
		if (atomic_exchange(&k->aof_state, KV_AOF_OFF) != KV_AOF_OFF) {
			atomic_fetch_add(&k->aof_gen, 1);
			pc_log(PC_LOG_INFO, "kv: appendonly switched off");
		}
		return 0;
	}
	/* on, or switching on already: nothing more, as Redis */
	if (!atomic_compare_exchange_strong(&k->aof_state, &off, KV_AOF_WAIT))
		return 0;
	atomic_fetch_add(&k->aof_gen, 1);
	rc = switch_on_files(next, sh->n);
	if (rc) {
		atomic_store(&k->aof_state, KV_AOF_OFF);
		pc_log(PC_LOG_ERROR, "kv: appendonly cannot be switched on: writing in %s: %s",
		       next->dir, strerror(-rc));
		snprintf(why, whylen, "CONFIG SET failed (possibly related to argument 'appendonly') "
			 "- Unable to turn on AOF. Check server logs.");
		return rc;
	}
	pc_log(PC_LOG_INFO, "kv: appendonly switched on: writing the files");
	return 1;
}

void kv_aof_switched_on(struct kv_shard *sh)
{
	int rc = kv_aofrw_start(sh);

	if (rc == -EBUSY) /* a rewrite of an earlier time on still ends */
		atomic_store(&sh->srv->rw_scheduled, true);
	else if (rc < 0)
		kv_aof_switch_done(sh, atomic_load(&sh->srv->aof_gen), false, false);
}

void kv_aof_switch_done(struct kv_shard *home, uint64_t gen, bool ok, bool retry)
{
	struct kv_server *k = home->srv;
	int wait = KV_AOF_WAIT;
	struct kv_config cfg;
	char why[160];

	if (atomic_load(&k->aof_gen) != gen)
		return; /* switched again since: that switch decides */
	if (ok) {
		if (atomic_compare_exchange_strong(&k->aof_state, &wait, KV_AOF_ON))
			pc_log(PC_LOG_INFO, "kv: the append-only files are written: appendonly is on");
		return;
	}
	if (retry) {
		atomic_store(&k->rw_scheduled, true);
		return;
	}
	pc_log(PC_LOG_ERROR, "kv: appendonly could not be switched on (the shards' logs say why); "
	       "it is off");
	cfg = home->cfg;
	cfg.appendonly = false;
	if (home->view.config_set(home->view.arg, &cfg, why, sizeof(why)))
		pc_log(PC_LOG_ERROR, "kv: appendonly could not be switched off: out of memory");
}

struct kv_aof *kv_aof_enable(struct kv_shard *sh, uint64_t gen, int *err)
{
	struct kv_aof *a;

	*err = atomic_load(&sh->srv->aof_gen) != gen ? -ECANCELED : sh->aof ? -EAGAIN : 0;
	if (*err)
		return NULL;
	a = aof_new(sh);
	if (!a) {
		*err = -ENOMEM;
		return NULL;
	}
	a->enabling = true;
	pc_periodic_start(&a->tick, pc_shard_reactor(), TICK_MS, tick, a);
	sh->aof = a;
	kv_aof_publish(a);
	return a;
}

void kv_aof_apply(struct kv_shard *sh, const struct kv_config *next)
{
	struct kv_aof *a = sh->aof;

	if (!a || a->off)
		return;
	if (!next->appendonly) {
		kv_aof_close(a);
		return;
	}
	if (next->appendfsync == sh->cfg.appendfsync)
		return;
	/* between two turns: the records of this one are all appended */
	set_mode(a, next->appendfsync);
	if (a->j)
		pc_journal_set_sync(a->j, a->o.sync);
	if (a->retired)
		pc_journal_set_sync(a->retired, a->o.sync);
	kv_aofrw_set_sync(a);
	/* a file not yet in place gets its handle once it is (kv_aof_settle) */
	if (a->everysec && !a->syncf && a->j && !a->gate) {
		if (pc_file_open(&a->syncf, a->path, O_WRONLY, 0, 0))
			kv_aof_fail(a, -EIO);
		else
			a->synced_size = pc_journal_written(a->j);
	}
}

void kv_aof_close(struct kv_aof *a)
{
	if (a->off)
		return;
	a->off = true;
	kv_aofrw_cancel(a);
	kv_aof_publish(a);
	pc_periodic_start(&a->tick, pc_shard_reactor(), CLOSE_TICK_MS, tick, a);
}

static void aof_free(struct kv_aof *a)
{
	struct kv_shard_stats *st = a->sh->st;

	pc_periodic_stop(&a->tick);
	a->confirmed = a->appended; /* nothing is held past here */
	release(a, a->log.err);
	pc_file_close(a->syncf);
	free(a->w);
	kv_aof_tx_drop_all(a); /* EXECs switched off mid-way keep nothing */
	kv_reply_free(&a->rec);
	a->sh->aof = NULL;
	atomic_store_explicit(&st->aof_size, 0, memory_order_relaxed);
	atomic_store_explicit(&st->aof_base, 0, memory_order_relaxed);
	atomic_store_explicit(&st->aof_pending, 0, memory_order_relaxed);
	atomic_store_explicit(&st->aof_err, 0, memory_order_relaxed);
	pc_log(PC_LOG_INFO, "kv: %s closed", a->path);
	free(a);
}

/* Switched off: once no rewrite part is left and every record appended
 * is written (its held reply released once durable, as ever), the file
 * is synced a last time and closed, and the state freed. */
static void close_step(struct kv_aof *a)
{
	if (a->rw) {
		kv_aofrw_tick(a);
		return;
	}
	kv_aof_settle(a);
	if (a->retired || a->depth || a->syncing)
		return;
	if (a->j && pc_journal_close(a->j))
		return; /* records still on their way */
	a->j = NULL;
	if (a->dead && pc_journal_close(a->dead))
		return;
	a->dead = NULL;
	if (!a->closed) {
		a->closed = true;
		/* a file at all (not a switch-on given up), and a sound one */
		int rc = 0;

		/* gone: a switch-on since removed it (stale), nothing to sync */
		if (!a->enabling && !a->log.err && !a->syncf &&
		    (rc = pc_file_open(&a->syncf, a->path, O_WRONLY, 0, 0)) && rc != -ENOENT)
			pc_log(PC_LOG_ERROR, "kv: %s: its last sync: %s", a->path, strerror(-rc));
		if (!a->enabling && !a->log.err && a->syncf)
			a->syncing = !pc_file_sync(a->syncf, true, on_synced, a);
		if (a->syncing)
			return;
	}
	aof_free(a);
}
