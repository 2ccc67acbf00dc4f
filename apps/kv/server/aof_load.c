/* SPDX-License-Identifier: MIT */
/* A start with appendonly on: every shard's file replayed (two passes:
 * first, before the shards start, the marked groups each file holds
 * complete; then each shard replays its file, applying a group that
 * spans shards only when every part of it is in some file), and files
 * written under another shard count converted (aof_shard.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aof.h"
#include "aof_internal.h"
#include "aof_shard.h"
#include "keyhash.h"
#include "percore/log.h"
#include "server_internal.h"

/* A marked group's id as the file spells it: "<start ms>:<tx>"; a
 * rewrite's id has the same form. */
struct tx_id {
	uint64_t epoch, tx;
};

/* One shard count's files: what the first pass found in each. */
struct file_set {
	unsigned n;                  /* files (0: no such set) */
	struct tx_id **done;         /* per file: its complete marked groups, sorted */
	size_t *ndone;
	/* per file: the groups an earlier start skipped as partial (its
	 * PERCORE.DROPPED records), sorted. A rewrite's "before the marker
	 * is whole" does not hold for them: their other parts never were
	 * in any file, so no new file's keys hold them. */
	struct tx_id **dropped;
	size_t *ndropped;
	/* rewrites (aof_rewrite.c): the latest whose new file is in place
	 * somewhere (have_rw), and per shard whether its file is an old one
	 * holding that rewrite's marker: its marked groups before the
	 * marker are whole (every file was synced through the marker before
	 * any new file took an old one's place; their other parts are in
	 * the new files' keys) */
	bool have_rw;
	struct tx_id rw;
	struct tx_id **marks;        /* per file: the rewrite markers in it */
	size_t *nmarks;
	bool *based;                 /* per file: it starts with a marker */
	bool *pre;
	bool *present;               /* per file: it exists */
};

/* What the shards share while they start. */
struct aof_start {
	pthread_mutex_t lock;
	int err;
	char msg[512];
	struct file_set own;         /* the files of this shard count */
	/* files of another shard count: a shard whose own file is missing
	 * takes its keys from them (see convert()) */
	struct file_set old;
};

static struct aof_start *start_of(struct kv_server *k)
{
	return k->aof_start;
}

/* ---- files ------------------------------------------------------------------ */

void kv_aof_file_path(const struct kv_config *cfg, unsigned i, unsigned n, char *out, size_t len)
{
	snprintf(out, len, "%s/%s-%u-of-%u", cfg->dir, cfg->appendfilename, i, n);
}

/* The shard count m of a file named "<appendfilename>-<i>-of-<m>", or 0. */
static unsigned count_of(const char *name, const char *base)
{
	size_t bl = strlen(base);
	unsigned i, m;
	char tail;

	return !strncmp(name, base, bl) && name[bl] == '-' &&
	       sscanf(name + bl + 1, "%u-of-%u%c", &i, &m, &tail) == 2 && i < m ? m : 0;
}

static void start_failed(struct aof_start *s, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void start_failed(struct aof_start *s, int rc, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->lock);
	if (!s->err) {
		s->err = rc;
		va_start(ap, fmt);
		vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->lock);
}

void kv_aof_start_failed(struct kv_server *k, int rc, const char *what, const char *path)
{
	start_failed(start_of(k), rc, "%s: %s", path, what);
}

/* The whole file (NULL and *len 0 when there is none). */
static int read_file(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) || !(*buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);

		if (r <= 0) {
			close(fd);
			return r < 0 ? -errno : -EIO;
		}
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return 0;
}

/* ---- start: two passes over the file ---------------------------------------- */

static bool parse_id(const char *p, size_t len, struct tx_id *id)
{
	char text[64];

	if (len >= sizeof(text))
		return false;
	memcpy(text, p, len);
	text[len] = '\0';
	return sscanf(text, "%" SCNu64 ":%" SCNu64, &id->epoch, &id->tx) == 2;
}

static int id_cmp(const void *a, const void *b)
{
	const struct tx_id *x = a, *y = b;

	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return x->tx < y->tx ? -1 : x->tx > y->tx;
}

struct load {
	struct kv_shard *sh;
	struct aof_start *s;
	struct file_set *fs;         /* the set of the file read */
	struct tx_id *ids;           /* pass 1: complete marked groups found */
	size_t n, cap;
	bool oom;
	bool seen;                   /* pass 1: a command or group came already */
	bool based;                  /* pass 1: the first was a rewrite marker */
	struct tx_id *marks;         /* pass 1: rewrite markers */
	size_t nmarks, mcap;
	struct tx_id *drops;         /* pass 1: PERCORE.DROPPED records */
	size_t ndrops, dcap;
	bool pre;                    /* pass 2: before the latest rewrite's marker */
	uint64_t applied, skipped;
	struct kv_reply out;         /* replies of replayed commands, dropped */
	struct kv_reply dropping;    /* pass 2: PERCORE.DROPPED records to append */
};

/* Whether argv is a rewrite's marker; its id in *id. */
static bool rewrite_mark(uint32_t argc, const char *const *argv, const size_t *argl,
			 struct tx_id *id)
{
	size_t ml = strlen(KV_AOF_RW_MARK);

	return argc == 2 && argl[0] == ml && !strncasecmp(argv[0], KV_AOF_RW_MARK, ml) &&
	       parse_id(argv[1], argl[1], id);
}

/* Whether argv is a PERCORE.DROPPED record; its id in *id. */
static bool drop_mark(uint32_t argc, const char *const *argv, const size_t *argl,
		      struct tx_id *id)
{
	size_t ml = strlen(KV_AOF_DROP_MARK);

	return argc == 2 && argl[0] == ml && !strncasecmp(argv[0], KV_AOF_DROP_MARK, ml) &&
	       parse_id(argv[1], argl[1], id);
}

static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *np;

	if (n < *cap)
		return true;
	np = realloc(*p, (*cap ? 2 * *cap : 16) * size);
	if (!np)
		return false;
	*p = np;
	*cap = *cap ? 2 * *cap : 16;
	return true;
}

static void list_mark(void *arg, uint32_t argc, const char *const *argv, const size_t *argl)
{
	struct load *l = arg;
	struct tx_id t;

	if (rewrite_mark(argc, argv, argl, &t)) {
		if (!l->seen)
			l->based = true;
		if (!grow((void **)&l->marks, &l->mcap, l->nmarks, sizeof(t)))
			l->oom = true;
		else
			l->marks[l->nmarks++] = t;
	} else if (drop_mark(argc, argv, argl, &t)) {
		if (!grow((void **)&l->drops, &l->dcap, l->ndrops, sizeof(t)))
			l->oom = true;
		else
			l->drops[l->ndrops++] = t;
	}
	l->seen = true;
}

static bool list_group(void *arg, const char *id, size_t idlen, uint64_t parts)
{
	struct load *l = arg;
	struct tx_id t;

	(void)parts;
	l->seen = true;
	if (!parse_id(id, idlen, &t))
		return false;
	if (!grow((void **)&l->ids, &l->cap, l->n, sizeof(t))) {
		l->oom = true;
		return false;
	}
	l->ids[l->n++] = t;
	return false;
}

/* How many times t is in a, sorted, of n. */
static uint64_t count_in(const struct tx_id *a, size_t n, const struct tx_id *t)
{
	size_t lo = 0, hi = n;
	uint64_t count = 0;

	while (lo < hi) { /* the first not below t */
		size_t mid = lo + (hi - lo) / 2;

		if (id_cmp(&a[mid], t) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && !id_cmp(&a[lo], t); lo++)
		count++;
	return count;
}

/* How many complete parts of group t the shards' files hold. */
static uint64_t parts_held(const struct file_set *fs, const struct tx_id *t)
{
	uint64_t count = 0;

	for (unsigned i = 0; i < fs->n; i++)
		count += count_in(fs->done[i], fs->ndone[i], t);
	return count;
}

/* Whether an earlier start skipped group t (on any shard: the decision
 * was the same on every shard that holds a part). */
static bool dropped_before(const struct file_set *fs, const struct tx_id *t)
{
	for (unsigned i = 0; i < fs->n; i++)
		if (count_in(fs->dropped[i], fs->ndropped[i], t))
			return true;
	return false;
}

/* A marked group is applied when every part of it is in some file, or
 * when it is before the latest rewrite's marker in an old file (whole
 * then), unless an earlier start skipped it. One skipped for the first
 * time is recorded as dropped. */
static bool check_group(void *arg, const char *id, size_t idlen, uint64_t parts)
{
	struct load *l = arg;
	struct tx_id t;
	bool known = parse_id(id, idlen, &t);

	if (known && dropped_before(l->fs, &t)) {
		l->skipped++;
		return false;
	}
	if (l->pre || (known && parts_held(l->fs, &t) == parts))
		return true;
	l->skipped++;
	if (known)
		kv_aof_command(&l->dropping, 2, (const char *const[]){ KV_AOF_DROP_MARK, id },
			       (const size_t[]){ strlen(KV_AOF_DROP_MARK), idlen });
	return false;
}

static void replay(void *arg, uint32_t argc, const char *const *argv, const size_t *argl)
{
	struct load *l = arg;
	struct tx_id t;

	if (rewrite_mark(argc, argv, argl, &t)) {
		if (l->fs->have_rw && !id_cmp(&t, &l->fs->rw))
			l->pre = false;
		return;
	}
	if (drop_mark(argc, argv, argl, &t))
		return;
	kv_reply_clear(&l->out);
	kv_shard_exec(l->sh, NULL, NULL, kv_now_ms(), argc, argv, argl, &l->out, NULL);
	l->applied++;
}

/* Cuts a file's padding off at `end` (a process killed while it
 * appended with always); false when that fails. */
static bool cut_padding(struct aof_start *s, const char *path, size_t end, size_t len)
{
	if (truncate(path, (off_t)end)) {
		start_failed(s, -errno, "%s: cannot cut its padding at offset %zu: %s", path, end,
			     strerror(errno));
		return false;
	}
	pc_log(PC_LOG_INFO, "kv: %s: %zu bytes of padding cut at offset %zu", path, len - end,
	       end);
	return true;
}

/* Cuts a torn tail off at `end` and says so; false when refused. */
static bool cut_tail(struct aof_start *s, const struct kv_config *cfg, const char *path,
		     size_t end, size_t len)
{
	if (!cfg->aof_load_truncated) {
		start_failed(s, -EBADMSG, "%s ends in a torn record at offset %zu (of %zu bytes) "
			     "and aof-load-truncated is no: repair it with 'redis-check-aof --fix "
			     "%s' or start with --aof-load-truncated yes", path, end, len, path);
		return false;
	}
	if (truncate(path, (off_t)end)) {
		start_failed(s, -errno, "%s: cannot cut its torn tail at offset %zu: %s", path,
			     end, strerror(errno));
		return false;
	}
	pc_log(PC_LOG_WARN, "kv: %s ended in a torn record: cut at offset %zu, %zu bytes dropped",
	       path, end, len - end);
	return true;
}

/* A walk's (or the read's) error: the start fails with the reason. */
static bool walk_ok(struct aof_start *s, const char *path, int rc, size_t end, const char *why)
{
	if (rc == -EBADMSG)
		start_failed(s, rc, "%s: bad record at offset %zu: %s; repair it with "
			     "'redis-check-aof --fix %s' (it cuts the file there)", path, end, why,
			     path);
	else if (rc)
		start_failed(s, rc, "%s: %s", path, strerror(-rc));
	return !rc;
}

/* What a walk of a whole file (its first len bytes, the rest padding up
 * to size) ended in: true when it may be used (a torn tail or padding cut
 * off), else the start fails with the reason. */
static bool walked(struct aof_start *s, const struct kv_config *cfg, const char *path, int rc,
		   size_t end, size_t len, size_t size, const char *why)
{
	if (!walk_ok(s, path, rc, end, why))
		return false;
	if (end < len)
		return cut_tail(s, cfg, path, end, len);
	return len == size || cut_padding(s, path, len, size);
}

/* Whether nothing failed so far. */
static bool start_ok(struct aof_start *s)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = !s->err;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Pass 1, before the shards start: the complete marked groups of file i
 * of set fs, sorted. A file that cannot be read or is damaged fails the
 * start here, before any shard records a group as dropped on the word of
 * an incomplete list; a torn tail is cut by the file's own shard, or
 * here for a file of another shard count, which several shards read. */
static void list_done(struct kv_server *k, struct file_set *fs, unsigned i)
{
	struct aof_start *s = start_of(k);
	struct load l = { .s = s };
	struct kv_aof_walk w = { .apply = list_mark, .group = list_group, .arg = &l };
	char path[600], why[160] = "";
	size_t size, len, end = 0;
	char *buf;
	int rc;

	kv_aof_file_path(&k->o.cfg, i, fs->n, path, sizeof(path));
	rc = read_file(path, &buf, &size);
	len = kv_aof_logical_len(buf, size);
	if (!rc && len)
		rc = kv_aof_walk(buf, len, &w, &end, why, sizeof(why));
	else
		end = len;
	if (rc == -ENOMEM || l.oom)
		start_failed(s, -ENOMEM, "%s: out of memory reading it", path);
	else if (fs == &s->old)
		walked(s, &k->o.cfg, path, rc, end, len, size, why);
	else
		walk_ok(s, path, rc, end, why);
	free(buf);
	if (l.n)
		qsort(l.ids, l.n, sizeof(*l.ids), id_cmp);
	if (l.ndrops)
		qsort(l.drops, l.ndrops, sizeof(*l.drops), id_cmp);
	fs->done[i] = l.ids;
	fs->ndone[i] = l.n;
	fs->dropped[i] = l.drops;
	fs->ndropped[i] = l.ndrops;
	fs->marks[i] = l.marks;
	fs->nmarks[i] = l.nmarks;
	fs->based[i] = l.based;
}

/* The latest rewrite whose new file is in place, and the old files that
 * hold its marker. */
static void find_rewrite(struct file_set *fs)
{
	for (unsigned i = 0; i < fs->n; i++) {
		if (fs->based[i] && (!fs->have_rw || id_cmp(&fs->marks[i][0], &fs->rw) > 0)) {
			fs->rw = fs->marks[i][0];
			fs->have_rw = true;
		}
	}
	for (unsigned i = 0; fs->have_rw && i < fs->n; i++)
		for (size_t m = fs->based[i]; m < fs->nmarks[i]; m++)
			if (!id_cmp(&fs->marks[i][m], &fs->rw))
				fs->pre[i] = true;
}

/* Writes all of buf to fd. */
static int write_all(int fd, const char *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	return 0;
}

/* The groups this start skipped for the first time, recorded at the
 * file's end and synced before any client is served. Not once the start
 * failed: a file another shard could not read may hold their parts. */
static void record_drops(struct load *l, const char *path)
{
	int fd, rc;

	if (!l->dropping.len || !start_ok(l->s))
		return;
	if (l->dropping.failed) {
		start_failed(l->s, -ENOMEM, "%s: out of memory reading it", path);
		return;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	rc = fd < 0 ? -errno : write_all(fd, l->dropping.buf, l->dropping.len);
	if (!rc && fdatasync(fd))
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc)
		start_failed(l->s, rc, "%s: cannot record the partial writes it skipped: %s", path,
			     strerror(-rc));
}

/* Pass 2, on the shard: file i of set fs replayed into the shard's
 * keyspace, a marked group applied when every part of it is in some file
 * of the set. Its own file: a torn tail cut, the groups skipped recorded.
 * False when it failed (the start fails with the reason). */
static bool replay_file(struct kv_shard *sh, struct file_set *fs, unsigned i, const char *path)
{
	struct aof_start *s = start_of(sh->srv);
	struct load l = { .sh = sh, .s = s, .fs = fs, .pre = fs->pre[i] };
	struct kv_aof_walk w = { .apply = replay, .group = check_group, .arg = &l };
	int64_t t0 = kv_now_ms();
	char why[160] = "";
	size_t size = 0, len, end = 0;
	char *buf = NULL;
	int rc = read_file(path, &buf, &size);
	bool ok;

	if (rc) {
		start_failed(s, rc, "%s: %s", path, strerror(-rc));
		return false;
	}
	len = kv_aof_logical_len(buf, size);
	kv_reply_init(&l.out);
	kv_reply_init(&l.dropping);
	rc = len ? kv_aof_walk(buf, len, &w, &end, why, sizeof(why)) : 0;
	ok = walked(s, &sh->cfg, path, rc, len ? end : 0, len, size, why);
	if (ok && fs == &s->own)
		record_drops(&l, path);
	kv_reply_free(&l.out);
	kv_reply_free(&l.dropping);
	free(buf);
	if (len)
		pc_log(PC_LOG_INFO, "kv: shard %u loaded %s: %" PRIu64 " commands, %" PRIu64
		       " partial writes of several shards skipped, %lld ms", sh->idx, path,
		       l.applied, l.skipped, (long long)(kv_now_ms() - t0));
	return ok;
}

/* ---- files of another shard count ------------------------------------------- */

struct keep {
	struct kv_shard *sh;
	struct kv_reply *rec;
	uint64_t keys;
};

static void keep_key(const struct kv_entry *e, void *arg)
{
	struct keep *k = arg;
	size_t len;
	const char *key = kv_entry_key(e, &len);

	if (kv_key_shard(k->sh, key, len) == k->sh->idx) {
		kv_aof_key(k->rec, e);
		k->keys++;
	}
}

/* Old file j replayed into a scratch keyspace; the keys that are sh's
 * now appended to rec as records. Its keys are all one old shard's, so
 * its commands touch none of another file's. */
static bool keep_from(struct kv_shard *sh, unsigned j, struct keep *k)
{
	struct aof_start *s = start_of(sh->srv);
	struct kv_db *own = sh->db, *scratch = kv_db_new();
	int64_t now = kv_now_ms();
	uint64_t cursor = 0;
	char path[600];
	bool ok;

	if (!scratch) {
		start_failed(s, -ENOMEM, "out of memory");
		return false;
	}
	kv_aof_file_path(&sh->cfg, j, s->old.n, path, sizeof(path));
	sh->db = scratch;
	ok = replay_file(sh, &s->old, j, path);
	sh->db = own;
	do
		cursor = kv_db_scan(scratch, cursor, now, keep_key, k);
	while (ok && cursor);
	kv_db_free(scratch);
	return ok;
}

/* The records rec holds replayed into the shard's keyspace. */
static int replay_kept(struct kv_shard *sh, const struct kv_reply *rec)
{
	struct load l = { .sh = sh, .s = start_of(sh->srv) };
	struct kv_aof_walk w = { .apply = replay, .arg = &l };
	char why[160];
	size_t end;
	int rc = 0;

	l.fs = &l.s->own;
	kv_reply_init(&l.out);
	if (rec->failed)
		rc = -ENOMEM;
	else if (rec->len)
		rc = kv_aof_walk(rec->buf, rec->len, &w, &end, why, sizeof(why));
	kv_reply_free(&l.out);
	return rc;
}

/* A shard whose own file is missing while files of another shard count
 * are there takes its keys from those: each old file replayed into a
 * scratch keyspace, the keys that are this shard's now moved to its
 * keyspace (as SET or RESTORE and PEXPIREAT records), then its new file
 * written from them. The file takes its name once whole and synced: a
 * crash before leaves the old files to convert from again, one after
 * leaves this shard's file, which later starts load. Costs a replay of
 * every old file per shard (in parallel) and one old file's keys at a
 * time in memory on top. */
static bool convert(struct kv_shard *sh, const char *path)
{
	struct aof_start *s = start_of(sh->srv);
	struct kv_reply rec;
	struct keep k = { .sh = sh, .rec = &rec };
	int64_t t0 = kv_now_ms();
	bool ok = true;
	int rc = 0;

	kv_reply_init(&rec);
	for (unsigned j = 0; j < s->old.n && ok && !rc; j++) {
		ok = keep_from(sh, j, &k);
		rc = ok ? replay_kept(sh, &rec) : 0;
		kv_reply_clear(&rec);
	}
	kv_reply_free(&rec);
	if (!ok) /* a file that could not be read whole: no new file */
		return false;
	if (!rc)
		rc = kv_aof_write_keys(sh, path);
	if (rc) {
		start_failed(s, rc, "%s: converting the files of %u shards: %s", path, s->old.n,
			     strerror(-rc));
		return false;
	}
	pc_log(PC_LOG_INFO, "kv: shard %u took %" PRIu64 " keys from the files of %u shards "
	       "into %s, %lld ms", sh->idx, k.keys, s->old.n, path, (long long)(kv_now_ms() - t0));
	return true;
}

bool kv_aof_load(struct kv_shard *sh, const char *path)
{
	struct aof_start *s = start_of(sh->srv);

	if (s->old.n && !s->own.present[sh->idx])
		return convert(sh, path);
	return replay_file(sh, &s->own, sh->idx, path);
}

/* Writes the 16 bytes of key to path, durably (file and name). */
int kv_aof_write_key(const char *path, const char *dir, const uint8_t *key)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, key, 16) != 16 || fsync(fd))
		rc = errno ? -errno : -EIO;
	close(fd);
	if (!rc && (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		if (fsync(fd))
			rc = -errno;
		close(fd);
	}
	if (rc)
		unlink(path);
	return rc;
}

/* The keys' hash key: a shard's file holds the keys that hash to it, so
 * the hash must be the one they were written under. Drawn at random with
 * the first file and kept beside the files (<appendfilename>.hashkey). */
static int hash_key(const struct kv_config *cfg, char *err, size_t errlen)
{
	char path[600];
	uint8_t key[16];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s.hashkey", cfg->dir, cfg->appendfilename);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, key, sizeof(key)) != (ssize_t)sizeof(key))
			rc = -EBADMSG;
		close(fd);
	} else if (errno != ENOENT) {
		rc = -errno;
	} else if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		rc = -EIO;
	} else {
		rc = kv_aof_write_key(path, cfg->dir, key);
	}
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, rc == -EBADMSG ? "not 16 bytes" : strerror(-rc));
		return rc;
	}
	kv_keyhash_set_key(key);
	return 0;
}

static bool set_alloc(struct file_set *fs, unsigned n)
{
	fs->n = n;
	return (fs->done = calloc(n, sizeof(*fs->done))) &&
	       (fs->ndone = calloc(n, sizeof(*fs->ndone))) &&
	       (fs->dropped = calloc(n, sizeof(*fs->dropped))) &&
	       (fs->ndropped = calloc(n, sizeof(*fs->ndropped))) &&
	       (fs->marks = calloc(n, sizeof(*fs->marks))) &&
	       (fs->nmarks = calloc(n, sizeof(*fs->nmarks))) &&
	       (fs->based = calloc(n, sizeof(*fs->based))) &&
	       (fs->pre = calloc(n, sizeof(*fs->pre))) &&
	       (fs->present = calloc(n, sizeof(*fs->present)));
}

static void set_free(struct file_set *fs)
{
	for (unsigned i = 0; i < fs->n; i++) {
		if (fs->done)
			free(fs->done[i]);
		if (fs->dropped)
			free(fs->dropped[i]);
		if (fs->marks)
			free(fs->marks[i]);
	}
	free(fs->done);
	free(fs->ndone);
	free(fs->dropped);
	free(fs->ndropped);
	free(fs->marks);
	free(fs->nmarks);
	free(fs->based);
	free(fs->pre);
	free(fs->present);
}

static void start_free(struct aof_start *s)
{
	set_free(&s->own);
	set_free(&s->old);
	free(s);
}

/* The directory's files of this name: which of this shard count's are
 * there (present), and the one other shard count (0: none). */
static int scan_dir(const struct kv_config *cfg, unsigned n, bool *present, unsigned *other,
		    char *err, size_t errlen)
{
	DIR *d = opendir(cfg->dir);
	struct dirent *de;
	int rc = 0;

	*other = 0;
	while (d && !rc && (de = readdir(d))) {
		unsigned m = count_of(de->d_name, cfg->appendfilename), i;

		if (m == n && sscanf(de->d_name + strlen(cfg->appendfilename) + 1, "%u", &i) == 1)
			present[i] = true;
		else if (m && m != n && *other && m != *other) {
			snprintf(err, errlen, "%s holds files of %u and of %u shards: move one set "
				 "away", cfg->dir, *other, m);
			rc = -EEXIST;
		} else if (m && m != n) {
			*other = m;
		}
	}
	if (d)
		closedir(d);
	return rc;
}

/* Removes the files of set fs (converted) and syncs the directory. */
static void remove_set(const struct kv_config *cfg, const struct file_set *fs)
{
	char path[600];
	int fd;

	for (unsigned j = 0; j < fs->n; j++) {
		kv_aof_file_path(cfg, j, fs->n, path, sizeof(path));
		if (unlink(path) && errno != ENOENT)
			pc_log(PC_LOG_WARN, "kv: %s: cannot remove it: %s", path, strerror(errno));
	}
	fd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	pc_log(PC_LOG_INFO, "kv: the files of %u shards in %s were converted: removed", fs->n,
	       cfg->dir);
}

/* Files of another shard count, m of them: every one must be there
 * unless each of ours is (a conversion that ended, its old files not yet
 * removed: they go now). */
static int old_files(struct aof_start *s, const struct kv_config *cfg, unsigned m, char *err,
		     size_t errlen)
{
	unsigned have = 0;
	char path[600];

	for (unsigned i = 0; i < s->own.n; i++)
		have += s->own.present[i];
	if (!set_alloc(&s->old, m))
		return -ENOMEM;
	if (have == s->own.n) {
		remove_set(cfg, &s->old);
		set_free(&s->old);
		s->old = (struct file_set){ 0 };
		return 0;
	}
	for (unsigned j = 0; j < m; j++) {
		kv_aof_file_path(cfg, j, m, path, sizeof(path));
		if (access(path, F_OK)) {
			snprintf(err, errlen, "%s is missing: the files of %u shards cannot be "
				 "converted without it", path, m);
			return -ENOENT;
		}
	}
	return 0;
}

int kv_aof_prepare(struct kv_server *k, char *err, size_t errlen)
{
	const struct kv_config *cfg = &k->o.cfg;
	struct aof_start *s;
	unsigned m;
	int rc;

	if (!cfg->appendonly)
		return 0;
	if ((rc = hash_key(cfg, err, errlen)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s || !set_alloc(&s->own, k->n)) {
		if (s)
			start_free(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = scan_dir(cfg, k->n, s->own.present, &m, err, errlen);
	if (!rc && m)
		rc = old_files(s, cfg, m, err, errlen);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		start_free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	k->aof_start = s;
	for (unsigned i = 0; i < k->n; i++)
		list_done(k, &s->own, i);
	find_rewrite(&s->own);
	for (unsigned j = 0; j < s->old.n; j++)
		list_done(k, &s->old, j);
	find_rewrite(&s->old);
	return 0;
}

int kv_aof_started(struct kv_server *k, char *err, size_t errlen)
{
	struct aof_start *s = start_of(k);
	int rc;

	if (!s)
		return 0;
	rc = s->err;
	if (rc)
		snprintf(err, errlen, "%s", s->msg);
	else if (s->old.n) /* every shard has its own file now */
		remove_set(&k->o.cfg, &s->old);
	pthread_mutex_destroy(&s->lock);
	start_free(s);
	k->aof_start = NULL;
	return rc;
}
