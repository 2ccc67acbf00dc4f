/* SPDX-License-Identifier: MIT */
/* The RDB file (rdb_file.h): writing every shard's keys into one dump,
 * safely replaced, and reading a dump back key by key. */
#include "rdb_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc64.h"

/* Opcodes (Redis's RDB_OPCODE_*). */
#define OP_FUNCTION2     245
#define OP_MODULE_AUX    247
#define OP_IDLE          248
#define OP_FREQ          249
#define OP_AUX           250
#define OP_RESIZEDB      251
#define OP_EXPIRETIME_MS 252
#define OP_EXPIRETIME    253
#define OP_SELECTDB      254
#define OP_EOF           255

/* The version Redis's aux field names as the writer's. */
#define REDIS_VER "7.0.15"
#define MAGIC     "REDIS"
#define MAGIC_LEN 5
#define HEADER_LEN 9
#define CRC_LEN   8

static void put_byte(struct kv_rdb_buf *b, uint8_t v)
{
	kv_rdb_put(b, &v, 1);
}

static void put_le(struct kv_rdb_buf *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		put_byte(b, (uint8_t)(v >> (8 * i)));
}

/* The state one shard's walk needs. */
struct keys_walk {
	struct kv_rdb_keys *k;
	struct kv_rdb_buf val;     /* one value, reused: its type byte goes before the key */
	bool compress;
};

void kv_rdb_file_put_key(struct kv_rdb_buf *b, struct kv_rdb_buf *val, const struct kv_entry *e,
			 bool compress)
{
	struct kv_rdb_value v = { .type = kv_entry_type(e) };
	int64_t at = kv_entry_expire(e);
	size_t klen;
	const char *key = kv_entry_key(e, &klen);

	if (v.type == KV_STRING)
		v.str = kv_entry_value(e, &v.len);
	else
		v.obj = kv_entry_obj(e);
	val->len = 0;
	kv_rdb_put_value(val, &v, compress);
	if (val->failed || val->len == 0) {
		b->failed = true;
		return;
	}
	if (at != KV_NO_EXPIRE) {
		put_byte(b, OP_EXPIRETIME_MS);
		put_le(b, (uint64_t)at, 8);
	}
	put_byte(b, val->p[0]);
	kv_rdb_put_string(b, key, klen, compress);
	kv_rdb_put(b, val->p + 1, val->len - 1);
}

static void put_key(const struct kv_entry *e, void *arg)
{
	struct keys_walk *w = arg;

	kv_rdb_file_put_key(&w->k->b, &w->val, e, w->compress);
	w->k->expires += kv_entry_expire(e) != KV_NO_EXPIRE;
	w->k->keys++;
}

int kv_rdb_file_keys(struct kv_db *db, int64_t now, bool compress, struct kv_rdb_keys *k)
{
	struct keys_walk w = { .k = k, .val = KV_RDB_BUF_INIT, .compress = compress };
	uint64_t cursor = 0;

	do
		cursor = kv_db_scan(db, cursor, now, put_key, &w);
	while (cursor != 0 && !k->b.failed);
	kv_rdb_buf_free(&w.val);
	return k->b.failed ? -ENOMEM : 0;
}

static void put_aux(struct kv_rdb_buf *b, const char *name, const char *val)
{
	put_byte(b, OP_AUX);
	kv_rdb_put_string(b, name, strlen(name), false);
	kv_rdb_put_string(b, val, strlen(val), false);
}

static void put_aux_int(struct kv_rdb_buf *b, const char *name, int64_t val)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRId64, val);
	put_aux(b, name, text);
}

/* Everything before the keys: header, aux fields as redis-server 7.0
 * writes those that matter, the database and its sizes. */
void kv_rdb_file_head(struct kv_rdb_buf *b, const struct kv_rdb_save_opts *o, uint64_t keys,
		      uint64_t expires)
{
	char magic[HEADER_LEN + 1];
	snprintf(magic, sizeof(magic), MAGIC "%04d", KV_RDB_VERSION);
	kv_rdb_put(b, magic, HEADER_LEN);
	put_aux(b, "redis-ver", REDIS_VER);
	put_aux_int(b, "redis-bits", (int64_t)(sizeof(void *) * 8));
	put_aux_int(b, "ctime", o->now / 1000);
	put_aux_int(b, "used-mem", (int64_t)o->used_mem);
	put_aux_int(b, "aof-base", 0);
	put_byte(b, OP_SELECTDB);
	kv_rdb_put_len(b, 0);
	put_byte(b, OP_RESIZEDB);
	kv_rdb_put_len(b, keys);
	kv_rdb_put_len(b, expires);
}

void kv_rdb_file_tail(struct kv_rdb_buf *b, uint64_t crc, bool checksum)
{
	uint8_t eof = OP_EOF;

	put_byte(b, eof);
	crc = kv_crc64(crc, &eof, 1);
	put_le(b, checksum ? crc : 0, CRC_LEN);
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t w = write(fd, q, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		q += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes the head, every part, EOF and the CRC to fd, the CRC computed
 * over the bytes as they go out. */
static int write_file(int fd, const struct kv_rdb_save_opts *o,
		      const struct kv_rdb_keys *const *parts, unsigned n)
{
	struct kv_rdb_buf head = KV_RDB_BUF_INIT, tail = KV_RDB_BUF_INIT;
	uint64_t keys = 0, expires = 0, crc;
	int err;

	for (unsigned i = 0; i < n; i++) {
		keys += parts[i]->keys;
		expires += parts[i]->expires;
	}
	kv_rdb_file_head(&head, o, keys, expires);
	err = head.failed ? -ENOMEM : write_all(fd, head.p, head.len);
	crc = kv_crc64(0, head.p, head.len);
	for (unsigned i = 0; i < n && !err; i++) {
		err = write_all(fd, parts[i]->b.p, parts[i]->b.len);
		crc = kv_crc64(crc, parts[i]->b.p, parts[i]->b.len);
	}
	kv_rdb_file_tail(&tail, crc, o->checksum);
	if (!err)
		err = tail.failed ? -ENOMEM : write_all(fd, tail.p, tail.len);
	kv_rdb_buf_free(&head);
	kv_rdb_buf_free(&tail);
	return err;
}

/* fsync of the directory, so that the rename itself survives a crash. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = 0;
	if (fd < 0)
		return -errno;
	if (fsync(fd) != 0)
		err = -errno;
	close(fd);
	return err;
}

const char *kv_rdb_file_paths(const struct kv_rdb_save_opts *o, const char *tag,
			      struct kv_rdb_paths *p, char *why, size_t whylen)
{
	const char *dir = o->dir && o->dir[0] ? o->dir : ".";

	if ((size_t)snprintf(p->path, sizeof(p->path), "%s/%s", dir, o->name) >= sizeof(p->path) ||
	    (size_t)snprintf(p->tmp, sizeof(p->tmp), "%s/temp-%s%d-%s", dir, tag, (int)getpid(),
			     o->name) >= sizeof(p->tmp)) {
		snprintf(why, whylen, "dump path too long: %s/%s", dir, o->name);
		return NULL;
	}
	return dir;
}

int kv_rdb_file_save(const struct kv_rdb_save_opts *o, const struct kv_rdb_keys *const *parts,
		     unsigned n, char *why, size_t whylen)
{
	struct kv_rdb_paths p;
	const char *dir = kv_rdb_file_paths(o, "", &p, why, whylen);
	const char *tmp = p.tmp, *path = p.path;
	int fd, err;

	if (!dir)
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot create %s: %s", tmp, strerror(-err));
		return err;
	}
	err = write_file(fd, o, parts, n);
	if (!err && fsync(fd) != 0)
		err = -errno;
	if (close(fd) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(-err));
		unlink(tmp);
		return err;
	}
	err = sync_dir(dir);
	if (err)
		snprintf(why, whylen, "cannot sync %s: %s", dir, strerror(-err));
	return err;
}

/* ---- reading ------------------------------------------------------------- */

static int fail(struct kv_rdb_load_info *info, int err, const char *what, size_t at)
{
	snprintf(info->why, sizeof(info->why), "%s", what);
	info->offset = at;
	return err;
}

static int get_le(struct kv_rdb_reader *r, int bytes, uint64_t *v)
{
	if (r->len - r->pos < (size_t)bytes) {
		snprintf(r->why, sizeof(r->why), "truncated");
		return -EINVAL;
	}
	*v = 0;
	for (int i = 0; i < bytes; i++)
		*v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
	r->pos += (size_t)bytes;
	return 0;
}

/* The header: "REDIS" and a version this reader takes. */
static int check_header(const uint8_t *p, size_t n, struct kv_rdb_load_info *info)
{
	int ver = 0;
	if (n < HEADER_LEN || memcmp(p, MAGIC, MAGIC_LEN) != 0)
		return fail(info, -EINVAL, "not an RDB file (no REDIS header)", 0);
	for (int i = MAGIC_LEN; i < HEADER_LEN; i++) {
		if (p[i] < '0' || p[i] > '9')
			return fail(info, -EINVAL, "bad RDB version", (size_t)i);
		ver = ver * 10 + (p[i] - '0');
	}
	if (ver < 1 || ver > KV_RDB_VERSION)
		return fail(info, -ENOTSUP, "RDB version not supported", MAGIC_LEN);
	return 0;
}

/* The CRC at the end, when the file has one (0: written without). */
static int check_crc(const uint8_t *p, size_t n, struct kv_rdb_load_info *info)
{
	uint64_t want = 0;
	if (n < HEADER_LEN + 1 + CRC_LEN)
		return fail(info, -EINVAL, "truncated", n);
	for (int i = 0; i < CRC_LEN; i++)
		want |= (uint64_t)p[n - CRC_LEN + (size_t)i] << (8 * i);
	if (want != 0 && kv_crc64(0, p, n - CRC_LEN) != want)
		return fail(info, -EINVAL, "checksum mismatch", n - CRC_LEN);
	return 0;
}

/* Skips a string (an aux field's name or value). */
static int skip_string(struct kv_rdb_reader *r)
{
	char *s;
	size_t n;
	int err = kv_rdb_get_string(r, &s, &n);
	if (!err)
		free(s);
	return err;
}

/* Redis's name of a type byte, for the message that refuses it. */
static const char *type_name(unsigned t)
{
	switch (t) {
	case KV_RDB_MODULE:
	case KV_RDB_MODULE_2: return "module";
	case KV_RDB_STREAM_LISTPACKS:
	case KV_RDB_STREAM_LISTPACKS_2: return "stream";
	case KV_RDB_HASH_ZIPMAP: return "hash (zipmap, before Redis 7.0)";
	case KV_RDB_LIST_ZIPLIST:
	case KV_RDB_LIST_QUICKLIST: return "list (ziplist, before Redis 7.0)";
	case KV_RDB_ZSET_ZIPLIST: return "zset (ziplist, before Redis 7.0)";
	case KV_RDB_HASH_ZIPLIST: return "hash (ziplist, before Redis 7.0)";
	case KV_RDB_SET_LISTPACK: return "set (listpack, Redis 7.2)";
	default: return "unknown";
	}
}

/* A key of a type not read: skipped when the options say so, else the
 * error naming it. */
static int unsupported(struct kv_rdb_reader *r, unsigned t, const char *key,
		       const struct kv_rdb_load_opts *o)
{
	int err = o->skip_unsupported ? kv_rdb_skip_payload(r, t) : -ENOTSUP;

	if (err == -ENOTSUP)
		snprintf(r->why, sizeof(r->why), "key '%.40s': type %u (%s) not supported", key, t,
			 type_name(t));
	return err;
}

/* One key record after its type byte t: key, value, then fn. */
static int load_key(struct kv_rdb_reader *r, unsigned t, int64_t expire,
		    const struct kv_rdb_load_opts *o, struct kv_rdb_load_info *info)
{
	struct kv_rdb_value v;
	char *key;
	size_t klen;
	int err = kv_rdb_get_string(r, &key, &klen);
	if (err)
		return err;
	bool mine = !o->want || o->want(key, klen, o->arg);
	if (!kv_rdb_type_read(t)) {
		err = unsupported(r, t, key, o);
		info->skipped += !err && mine;
	} else if (!mine) {
		err = kv_rdb_skip_payload(r, t);
	} else if (expire != KV_NO_EXPIRE && expire <= o->now) {
		err = kv_rdb_skip_payload(r, t);
		info->expired += !err;
	} else if (!(err = kv_rdb_get_payload(r, t, o->lim, &v))) {
		if (v.type != KV_STRING && !kv_types[v.type]) {
			kv_rdb_value_free(&v);
			snprintf(r->why, sizeof(r->why), "key '%.40s': type %u not supported", key, t);
			err = -ENOTSUP;
		} else if (!(err = o->fn(key, klen, &v, expire, o->arg))) {
			info->loaded++;
		}
	}
	free(key);
	return err;
}

/* Reads opcodes and keys to EOF. */
static int load_body(struct kv_rdb_reader *r, const struct kv_rdb_load_opts *o,
		     struct kv_rdb_load_info *info)
{
	int64_t expire = KV_NO_EXPIRE;
	uint64_t v, v2;

	for (;;) {
		int err;
		if (r->pos >= r->len) {
			snprintf(r->why, sizeof(r->why), "truncated (no EOF)");
			return -EINVAL;
		}
		uint8_t op = r->p[r->pos++];
		switch (op) {
		case OP_EOF:
			return 0;
		case OP_AUX:
			err = skip_string(r);
			err = err ? err : skip_string(r);
			break;
		case OP_SELECTDB:
			err = kv_rdb_get_len(r, &v, NULL);
			if (!err && v != 0) {
				snprintf(r->why, sizeof(r->why), "database %" PRIu64 " (only 0 is kept)", v);
				err = -ENOTSUP;
			}
			break;
		case OP_RESIZEDB:
			err = kv_rdb_get_len(r, &v, NULL);
			err = err ? err : kv_rdb_get_len(r, &v2, NULL);
			break;
		case OP_EXPIRETIME_MS:
			err = get_le(r, 8, &v);
			expire = (int64_t)v;
			break;
		case OP_EXPIRETIME:
			err = get_le(r, 4, &v);
			expire = (int64_t)v * 1000;
			break;
		case OP_IDLE:
			err = kv_rdb_get_len(r, &v, NULL);
			break;
		case OP_FREQ:
			err = get_le(r, 1, &v);
			break;
		case OP_MODULE_AUX:
		case OP_FUNCTION2:
			snprintf(r->why, sizeof(r->why), "opcode %u (modules, functions) not supported", op);
			return -ENOTSUP;
		default:
			err = load_key(r, op, expire, o, info);
			expire = KV_NO_EXPIRE;
			break;
		}
		if (err)
			return err;
	}
}

int kv_rdb_file_load(const uint8_t *p, size_t n, const struct kv_rdb_load_opts *opts,
		     struct kv_rdb_load_info *info)
{
	struct kv_rdb_reader r = { .p = p, .pos = HEADER_LEN };
	struct kv_rdb_load_opts o = *opts;
	int err;

	if (!o.lim)
		o.lim = &kv_rdb_default_limits;
	*info = (struct kv_rdb_load_info){ 0 };
	err = check_header(p, n, info);
	err = err ? err : check_crc(p, n, info);
	if (err)
		return err;
	r.len = n - CRC_LEN;
	err = load_body(&r, &o, info);
	if (!err && r.pos != r.len)
		return fail(info, -EINVAL, "bytes after EOF", r.pos);
	if (err)
		return fail(info, err, r.why[0] ? r.why : strerror(-err), r.pos);
	return 0;
}

int kv_rdb_file_read(const char *path, uint8_t **p, size_t *n)
{
	struct stat st;
	int err = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*n = (size_t)st.st_size;
	*p = malloc(*n ? *n : 1);
	if (!*p) {
		close(fd);
		return -ENOMEM;
	}
	while (got < *n && !err) {
		ssize_t r = read(fd, *p + got, *n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			err = r < 0 ? -errno : -EIO;
		else
			got += (size_t)r;
	}
	close(fd);
	if (err) {
		free(*p);
		*p = NULL;
	}
	return err;
}
