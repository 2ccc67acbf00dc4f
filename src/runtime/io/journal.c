/* SPDX-License-Identifier: MIT */
/* percore io: the journal's writer (percore/journal.h).
 *
 * Appends fill one batch while at most one other is on its way: written,
 * then (by the mode) synced, then confirmed record by record. A batch
 * leaves at the end of the turn it began in (a deferred task), or, when
 * the previous one is still on its way, as soon as that one is confirmed:
 * everything appended meanwhile shares one write and one fdatasync; with
 * gather_us, a batch not owed a sync waits that long for more first. A
 * segment that a batch would overflow is replaced first: the old one is
 * synced and closed, the new one preallocated and its name made durable
 * (fsync of the directory) before the batch is written into it. A raw
 * file owed syncs is extended ahead instead (extend_ahead): a batch
 * passing its end carries the padding in its write. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "io/journal_fmt.h"
#include "percore/clock.h"
#include "percore/reactor.h"
#include "percore/wheel.h"
#include "rt/rt.h"

/* A record waiting for its callback. */
struct jrn_wait {
	uint64_t lsn;
	pc_journal_fn fn;
	void *arg;
};

struct jrn_list {
	struct jrn_wait *w;
	size_t n, cap;
};

struct pc_journal {
	struct rt_shard *owner;
	struct pc_reactor *r;
	struct pc_journal_opts o;
	char *dir;
	struct pc_file *dirf;     /* the directory, for fsync after a rotation */
	struct pc_file *seg;      /* the segment being appended to */
	uint64_t seg_off;         /* where the next batch goes in it */
	uint64_t file_end;        /* a raw file's size, its padding included */
	uint64_t next_lsn;
	/* The batch being filled, and the one on its way (out: its bytes
	 * written so far in out_done). */
	unsigned char *fill, *out;
	size_t fill_len, fill_cap, out_len, out_cap, out_done;
	size_t out_pad;           /* padding written after out (extend_ahead) */
	struct jrn_list fill_w, out_w;
	struct jrn_list unsynced; /* interval mode: written, not yet synced */
	bool busy;                /* a batch or a sync is on its way */
	bool flush_queued;        /* flush_task is deferred */
	bool sync_due;            /* interval mode: the period has passed */
	bool gather_due;          /* the fill waited its gather_us */
	bool raw;                 /* one file, records without headers */
	/* the last record appended under PC_JOURNAL_SYNC_ALWAYS before the
	 * mode changed (pc_journal_set_sync): batches up to it still sync */
	uint64_t sync_upto;
	int err;                  /* final */
	uint64_t sync_t0;         /* the sync on its way was issued then */
	uint64_t sync_avg_ns;     /* moving average of the syncs' times */
	struct pc_timer timer;
	struct pc_timer gather;    /* the fill's wait (gather_us) */
};

static void flush_task(void *arg);

void pc_journal_opts_init(struct pc_journal_opts *o)
{
	*o = (struct pc_journal_opts){
		.sync = PC_JOURNAL_SYNC_ALWAYS,
		.interval_ms = 10,
		.segment_size = 64u << 20,
	};
}

static int list_push(struct jrn_list *l, struct jrn_wait w)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct jrn_wait *n = realloc(l->w, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->w = n;
		l->cap = cap;
	}
	l->w[l->n++] = w;
	return 0;
}

/* Run the callbacks of l with err, after emptying it: a callback may
 * append, and its record must land in a list of its own. */
static void confirm(struct jrn_list *l, int err)
{
	struct jrn_list run = *l;

	*l = (struct jrn_list){ 0 };
	for (size_t i = 0; i < run.n; i++)
		run.w[i].fn(run.w[i].lsn, err, run.w[i].arg);
	if (!l->w) { /* keep the array for the next batch */
		run.n = 0;
		*l = run;
	} else {
		free(run.w);
	}
}

/* Whether the records of w were promised a sync before the mode changed
 * (w is in LSN order). */
static bool owes_sync(const struct pc_journal *j, const struct jrn_list *w)
{
	return w->n && w->w[0].lsn <= j->sync_upto;
}

/* A fill may wait for more (gather_us) when nothing it holds is owed a
 * sync and it is not large yet. */
#define GATHER_BYTES (256u * 1024)

static bool gathers(const struct pc_journal *j)
{
	return j->o.gather_us && !j->gather_due && !j->sync_due &&
	       j->o.sync != PC_JOURNAL_SYNC_ALWAYS && j->fill_len < GATHER_BYTES &&
	       !owes_sync(j, &j->fill_w);
}

static void schedule(struct pc_journal *j)
{
	if (j->busy || j->flush_queued || j->err || (!j->fill_len && !j->sync_due))
		return;
	if (gathers(j)) {
		if (!pc_timer_active(&j->gather))
			pc_reactor_timer_after(j->r, &j->gather, (uint64_t)j->o.gather_us * 1000u);
		return;
	}
	if (pc_reactor_defer(j->r, flush_task, j) == 0)
		j->flush_queued = true;
}

static void on_gathered(struct pc_wheel *w, struct pc_timer *t)
{
	struct pc_journal *j = pc_container_of(t, struct pc_journal, gather);

	(void)w;
	j->gather_due = true;
	schedule(j);
}

/* The journal's end: every record not yet confirmed gets err. */
static void fail(struct pc_journal *j, int err)
{
	if (!j->err)
		j->err = err;
	j->busy = false;
	j->fill_len = j->out_len = j->out_pad = 0;
	confirm(&j->out_w, j->err);
	confirm(&j->unsynced, j->err);
	confirm(&j->fill_w, j->err);
}

static void batch_done(struct pc_journal *j)
{
	j->busy = false;
	j->out_len = j->out_pad = 0;
	schedule(j);
}

static void on_synced(struct pc_file *f, ssize_t res, void *arg)
{
	struct pc_journal *j = arg;
	uint64_t ns = pc_elapsed(pc_now_ns(), j->sync_t0);

	(void)f;
	j->sync_avg_ns = j->sync_avg_ns - j->sync_avg_ns / 8 + ns / 8;
	if (res < 0)
		return fail(j, (int)res);
	confirm(&j->out_w, 0);
	batch_done(j);
}

/* Whether the batch out is written and synced on the shard's thread:
 * always mode while syncs are quick (inline_sync_us). */
static bool inline_io(const struct pc_journal *j)
{
	return j->o.sync == PC_JOURNAL_SYNC_ALWAYS && j->o.inline_sync_us &&
	       j->sync_avg_ns < (uint64_t)j->o.inline_sync_us * 1000u;
}

/* Sync the file for the batch out (or, interval mode, those written). */
static int sync_out(struct pc_journal *j)
{
	j->sync_t0 = pc_now_ns();
	if (inline_io(j)) {
		on_synced(j->seg, pc_file_sync_now(j->seg, true), j);
		return 0;
	}
	return pc_file_sync(j->seg, true, on_synced, j);
}

static void move_to_unsynced(struct pc_journal *j)
{
	for (size_t i = 0; i < j->out_w.n; i++)
		if (list_push(&j->unsynced, j->out_w.w[i]))
			return fail(j, -ENOMEM);
	j->out_w.n = 0;
}

static void write_more(struct pc_journal *j);

static void on_written(struct pc_file *f, ssize_t res, void *arg)
{
	struct pc_journal *j = arg;
	int rc = 0;

	(void)f;
	if (res <= 0 && j->out_done >= j->out_len)
		j->out_pad = j->out_done - j->out_len; /* no room for the rest */
	else if (res <= 0)
		return fail(j, res < 0 ? (int)res : -EIO);
	else
		j->out_done += (size_t)res;
	if (j->out_done < j->out_len + j->out_pad)
		return write_more(j);
	j->seg_off += j->out_len;
	if (j->seg_off + j->out_pad > j->file_end)
		j->file_end = j->seg_off + j->out_pad;
	switch (owes_sync(j, &j->out_w) ? PC_JOURNAL_SYNC_ALWAYS : j->o.sync) {
	case PC_JOURNAL_SYNC_ALWAYS:
		rc = sync_out(j);
		break;
	case PC_JOURNAL_SYNC_INTERVAL:
		move_to_unsynced(j);
		if (!j->err)
			batch_done(j);
		break;
	case PC_JOURNAL_SYNC_NEVER:
		confirm(&j->out_w, 0);
		batch_done(j);
		break;
	}
	if (rc)
		fail(j, rc);
}

static void write_more(struct pc_journal *j)
{
	const unsigned char *p = j->out + j->out_done;
	size_t len = j->out_len + j->out_pad - j->out_done;
	uint64_t off = j->seg_off + j->out_done;
	int rc;

	if (inline_io(j))
		return on_written(j->seg, pc_file_write_now(j->seg, p, len, off), j);
	rc = pc_file_write(j->seg, p, len, off, on_written, j);
	if (rc)
		fail(j, rc);
}

/* ---- rotation ---------------------------------------------------------- */

static void on_dir_synced(struct pc_file *f, ssize_t res, void *arg)
{
	struct pc_journal *j = arg;

	(void)f;
	if (res < 0)
		return fail(j, (int)res);
	write_more(j);
}

static void on_allocated(struct pc_file *f, ssize_t res, void *arg)
{
	struct pc_journal *j = arg;
	int rc;

	(void)f;
	if (res < 0)
		return fail(j, (int)res);
	rc = pc_file_sync(j->dirf, false, on_dir_synced, j);
	if (rc)
		fail(j, rc);
}

static int open_segment(struct pc_journal *j, uint64_t first_lsn)
{
	char path[4200], name[JRN_NAME_LEN + 1];

	jrn_name(name, sizeof(name), first_lsn);
	snprintf(path, sizeof(path), "%s/%s", j->dir, name);
	j->seg_off = 0;
	return pc_file_open(&j->seg, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, 0);
}

static void on_old_synced(struct pc_file *f, ssize_t res, void *arg)
{
	struct pc_journal *j = arg;
	int rc;

	if (res < 0)
		return fail(j, (int)res);
	confirm(&j->unsynced, 0); /* interval mode: the old segment is synced */
	pc_file_close(f);
	j->seg = NULL;
	rc = open_segment(j, j->out_w.w[0].lsn);
	if (!rc)
		rc = pc_file_allocate(j->seg, 0, j->o.segment_size, on_allocated, j);
	if (rc)
		fail(j, rc);
}

static void rotate(struct pc_journal *j)
{
	int rc = 0;

	if (j->o.sync == PC_JOURNAL_SYNC_NEVER)
		on_old_synced(j->seg, 0, j);
	else
		rc = pc_file_sync(j->seg, true, on_old_synced, j);
	if (rc)
		fail(j, rc);
}

/* ---- batches ----------------------------------------------------------- */

/* Whether the batch out passes a raw file's end while owed a sync, so
 * that its write extends the file (extend_ahead). */
static bool extends(const struct pc_journal *j)
{
	return j->raw && j->o.extend_ahead && j->seg_off + j->out_len > j->file_end &&
	       (j->o.sync == PC_JOURNAL_SYNC_ALWAYS || owes_sync(j, &j->out_w));
}

/* The padding after the batch out, in its buffer. */
static int pad_out(struct pc_journal *j)
{
	size_t pad = j->o.extend_ahead, need = j->out_len + pad;

	if (need > j->out_cap) {
		unsigned char *n = realloc(j->out, need);

		if (!n)
			return -ENOMEM;
		j->out = n;
		j->out_cap = need;
	}
	memset(j->out + j->out_len, j->o.pad_byte, pad);
	j->out_pad = pad;
	return 0;
}

static void interval_sync(struct pc_journal *j)
{
	struct jrn_list t = j->out_w;
	int rc;

	j->sync_due = false;
	if (!j->unsynced.n)
		return schedule(j);
	j->busy = true;
	j->out_w = j->unsynced; /* on_synced confirms out_w */
	j->unsynced = t;
	rc = sync_out(j);
	if (rc)
		fail(j, rc);
}

static void flush_task(void *arg)
{
	struct pc_journal *j = arg;
	unsigned char *b = j->out;
	size_t cap = j->out_cap;
	struct jrn_list w = j->out_w;

	j->flush_queued = false;
	if (j->busy || j->err)
		return;
	if (j->sync_due)
		return interval_sync(j);
	if (!j->fill_len)
		return;
	j->gather_due = false;
	if (pc_timer_active(&j->gather))
		pc_wheel_cancel(pc_reactor_wheel(j->r), &j->gather);
	/* swap the batches: fill goes out, the empty one fills */
	j->out = j->fill;
	j->out_cap = j->fill_cap;
	j->out_len = j->fill_len;
	j->out_w = j->fill_w;
	j->fill = b;
	j->fill_cap = cap;
	j->fill_len = 0;
	j->fill_w = w;
	j->fill_w.n = 0;
	j->out_done = 0;
	j->busy = true;
	if (!j->raw && j->seg_off && j->seg_off + j->out_len > j->o.segment_size)
		return rotate(j);
	if (extends(j) && pad_out(j))
		return fail(j, -ENOMEM);
	write_more(j);
}

static void on_tick(struct pc_wheel *w, struct pc_timer *t)
{
	struct pc_journal *j = pc_container_of(t, struct pc_journal, timer);

	(void)w;
	if (j->unsynced.n) {
		j->sync_due = true;
		schedule(j);
	}
	pc_reactor_timer_after(j->r, &j->timer, (uint64_t)j->o.interval_ms * 1000000u);
}

static int fill_room(struct pc_journal *j, size_t more)
{
	size_t cap = j->fill_cap ? j->fill_cap : 64 * 1024;
	unsigned char *n;

	if (j->fill_len + more <= j->fill_cap)
		return 0;
	while (cap < j->fill_len + more)
		cap *= 2;
	n = realloc(j->fill, cap);
	if (!n)
		return -ENOMEM;
	j->fill = n;
	j->fill_cap = cap;
	return 0;
}

int pc_journal_append(struct pc_journal *j, const void *p, size_t len, pc_journal_fn fn,
		      void *arg, uint64_t *lsn)
{
	size_t head = j->raw ? 0 : PC_JOURNAL_HEADER;
	unsigned char *rec;
	int rc;

	if (rt_self != j->owner)
		return -EPERM;
	if (j->err)
		return j->err;
	if (!fn)
		return -EINVAL;
	if (len > PC_JOURNAL_MAX_RECORD)
		return -EMSGSIZE;
	if ((rc = fill_room(j, head + len)))
		return rc;
	if ((rc = list_push(&j->fill_w, (struct jrn_wait){ j->next_lsn, fn, arg })))
		return rc;
	rec = j->fill + j->fill_len;
	if (head)
		jrn_header(rec, j->next_lsn, p, len);
	memcpy(rec + head, p, len);
	j->fill_len += head + len;
	if (lsn)
		*lsn = j->next_lsn;
	j->next_lsn++;
	schedule(j);
	return 0;
}

int pc_journal_set_sync(struct pc_journal *j, enum pc_journal_sync mode)
{
	if (rt_self != j->owner)
		return -EPERM;
	if (mode == PC_JOURNAL_SYNC_INTERVAL || j->o.sync == PC_JOURNAL_SYNC_INTERVAL ||
	    mode > PC_JOURNAL_SYNC_NEVER)
		return -EINVAL;
	if (j->o.sync == PC_JOURNAL_SYNC_ALWAYS && mode != PC_JOURNAL_SYNC_ALWAYS)
		j->sync_upto = j->next_lsn - 1;
	j->o.sync = mode;
	return 0;
}

int pc_journal_error(const struct pc_journal *j)
{
	return j->err;
}

uint64_t pc_journal_next_lsn(const struct pc_journal *j)
{
	return j->next_lsn;
}

uint64_t pc_journal_written(const struct pc_journal *j)
{
	return j->seg_off;
}

/* ---- open and close ---------------------------------------------------- */

/* The LSN after the existing log; its bad tail cut or refused. */
static int scan(const char *dir, bool cut, uint64_t *next)
{
	struct pc_journal_iter *it;
	const void *p;
	size_t len;
	uint64_t lsn = 0;
	int rc = pc_journal_iter_open(&it, dir);

	*next = 1;
	if (rc)
		return rc;
	while ((rc = pc_journal_iter_next(it, &lsn, &p, &len)) == 1)
		*next = lsn + 1;
	if (rc == -EBADMSG && cut)
		rc = pc_journal_iter_truncate(it);
	pc_journal_iter_close(it);
	return rc;
}

/* The first segment: made, preallocated and named durably at once
 * (start-up may block). */
static int first_segment(struct pc_journal *j)
{
	int rc = open_segment(j, j->next_lsn);

	if (!rc && fallocate(pc_file_fd(j->seg), 0, 0, (off_t)j->o.segment_size))
		rc = -errno;
	if (!rc && fsync(pc_file_fd(j->dirf)))
		rc = -errno;
	return rc;
}

static void journal_free(struct pc_journal *j)
{
	if (pc_timer_active(&j->timer))
		pc_wheel_cancel(pc_reactor_wheel(j->r), &j->timer);
	if (pc_timer_active(&j->gather))
		pc_wheel_cancel(pc_reactor_wheel(j->r), &j->gather);
	pc_file_close(j->seg);
	pc_file_close(j->dirf);
	free(j->fill);
	free(j->out);
	free(j->fill_w.w);
	free(j->out_w.w);
	free(j->unsynced.w);
	free(j->dir);
	free(j);
}

/* A journal of this shard writing beside directory dir, its options
 * checked (but the segment size). */
static int journal_new(struct pc_journal **out, const char *dir, const struct pc_journal_opts *o)
{
	struct pc_journal *j;

	*out = NULL;
	if (!rt_self)
		return -EPERM;
	if (o->sync > PC_JOURNAL_SYNC_NEVER || (o->sync == PC_JOURNAL_SYNC_INTERVAL && !o->interval_ms))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j || !(j->dir = strdup(dir))) {
		free(j);
		return -ENOMEM;
	}
	j->owner = rt_self;
	j->r = rt_self->reactor;
	j->o = *o;
	j->next_lsn = 1;
	pc_timer_init(&j->timer, on_tick);
	pc_timer_init(&j->gather, on_gathered);
	*out = j;
	return 0;
}

/* The journal opened (rc 0) starts its interval timer; else it goes. */
static int journal_ready(struct pc_journal **out, struct pc_journal *j, int rc)
{
	if (rc) {
		journal_free(j);
		return rc;
	}
	if (j->o.sync == PC_JOURNAL_SYNC_INTERVAL)
		pc_reactor_timer_after(j->r, &j->timer, (uint64_t)j->o.interval_ms * 1000000u);
	*out = j;
	return 0;
}

int pc_journal_open(struct pc_journal **out, const char *dir, const struct pc_journal_opts *o)
{
	struct pc_journal *j;
	int rc;

	if (o->segment_size < 4096)
		return -EINVAL;
	rc = journal_new(&j, dir, o);
	if (rc)
		return rc;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return journal_ready(out, j, -errno);
	rc = scan(dir, o->truncate_bad_tail, &j->next_lsn);
	if (!rc)
		rc = pc_file_open(&j->dirf, dir, O_RDONLY | O_DIRECTORY, 0, 0);
	if (!rc)
		rc = first_segment(j);
	return journal_ready(out, j, rc);
}

int pc_journal_open_file(struct pc_journal **out, const char *path, const struct pc_journal_opts *o)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct pc_journal *j;
	struct stat st;
	int rc;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	rc = journal_new(&j, dir, o);
	if (rc)
		return rc;
	j->raw = true;
	rc = pc_file_open(&j->dirf, dir, O_RDONLY | O_DIRECTORY, 0, 0);
	if (!rc)
		rc = pc_file_open(&j->seg, path, O_WRONLY | O_CREAT, 0644, 0);
	if (!rc && fstat(pc_file_fd(j->seg), &st))
		rc = -errno;
	if (!rc && fsync(pc_file_fd(j->dirf)))
		rc = -errno;
	if (!rc)
		j->seg_off = j->file_end = (uint64_t)st.st_size;
	return journal_ready(out, j, rc);
}

/* A raw file's padding cut off (it is only padding if the cut fails). */
static int cut_padding(struct pc_journal *j)
{
	if (!j->raw || !j->seg || j->file_end <= j->seg_off)
		return 0;
	if (ftruncate(pc_file_fd(j->seg), (off_t)j->seg_off))
		return -errno;
	j->file_end = j->seg_off;
	return 0;
}

int pc_journal_close(struct pc_journal *j)
{
	if (!j)
		return 0;
	if (rt_self != j->owner)
		return -EPERM;
	if (j->busy || j->flush_queued || j->fill_w.n || j->unsynced.n)
		return -EBUSY;
	cut_padding(j);
	journal_free(j);
	return 0;
}

/* How long a final close waits for a batch on its way: 10 s in 1 ms
 * polls. */
#define FINAL_POLLS 10000

/* Writes len bytes of p at off, blocking. */
static int write_at(int fd, const unsigned char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int pc_journal_close_final(struct pc_journal *j)
{
	int fd, rc = 0;

	if (!j)
		return 0;
	if (rt_self != j->owner)
		return -EPERM;
	/* the batch on its way lands first (its completion comes as the
	 * shard's loop would collect it, done here since the loop no longer
	 * runs) */
	for (int i = 0; i < FINAL_POLLS && (j->busy || j->flush_queued); i++)
		io_shard_turn(1000000);
	if (j->busy || j->flush_queued)
		return -EBUSY;
	fd = j->seg ? pc_file_fd(j->seg) : -1;
	if (!j->err && fd >= 0 && j->fill_len) {
		rc = write_at(fd, j->fill, j->fill_len, j->seg_off);
		j->seg_off += rc ? 0 : j->fill_len;
	}
	if (!rc && !j->err)
		rc = cut_padding(j);
	if (!rc && !j->err && fd >= 0 &&
	    (j->o.sync != PC_JOURNAL_SYNC_NEVER || owes_sync(j, &j->fill_w)) && fdatasync(fd))
		rc = -errno;
	if (j->err)
		rc = j->err;
	j->busy = false;
	confirm(&j->out_w, rc);
	confirm(&j->unsynced, rc);
	confirm(&j->fill_w, rc);
	journal_free(j);
	return rc;
}

struct pc_file *io_journal_file(struct pc_journal *j)
{
	return j->seg;
}
