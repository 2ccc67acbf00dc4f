/* SPDX-License-Identifier: MIT */
/* SAVE, BGSAVE, LASTSAVE and SHUTDOWN. SAVE runs on every shard at once,
 * each holding its lock (a server-wide command): each serializes its own
 * keys (its part), and the connection's shard writes them into one dump
 * (rdb_file.h). SHUTDOWN runs the same way: each shard's part is its
 * keys when the dump is to be written (SAVE, or save rules and not
 * NOSAVE), and the end writes it and stops the server. BGSAVE asks the
 * server (view->bgsave) to start a save that runs while every shard
 * keeps serving (apps/kv/server/bgsave.c). */
#include "cmd_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "persist.h"
#include "rdb_file.h"

/* SHUTDOWN's flags, as its parts pass them to the end. */
#define SD_NOSAVE 0x1u
#define SD_SAVE   0x2u
#define SD_NOW    0x4u
#define SD_FORCE  0x8u
#define SD_ABORT  0x10u
#define SD_DUMP   0x100u   /* the parts hold the keys: write the dump */

/* Where a part's strings are: the records, the count of keys with an
 * expiry, and (SHUTDOWN's) the flags. */
enum { PART_RECORDS, PART_EXPIRES, PART_SHUTDOWN };

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Adds this shard's part: its key records as one string (none when
 * !dump), n the keys, and the keys with an expiry as a second string
 * (the file's size hints). False after an out-of-memory reply. */
static bool save_part(struct kv_call *c, bool dump)
{
	struct kv_rdb_keys k = { .b = KV_RDB_BUF_INIT };
	bool compress = c->cfg ? c->cfg->rdbcompression : true;
	struct kv_totals t = { 0 };
	char text[24];

	if (dump && c->view && c->view->totals)
		c->view->totals(c->view->arg, &t);
	if (dump && (t.bgsave_in_progress || kv_db_snap_active(c->db))) {
		/* Redis refuses SAVE while its BGSAVE child runs */
		KV_REPLY_ERR(c->out, KV_ERR_BGSAVE_RUNNING);
		return false;
	}
	if (dump && kv_rdb_file_keys(c->db, c->now, compress, &k) != 0) {
		kv_rdb_buf_free(&k.b);
		kv_err_oom(c);
		return false;
	}
	kv_part_add(c->part, k.b.p ? (const char *)k.b.p : "", k.b.len);
	kv_part_add(c->part, text, (size_t)snprintf(text, sizeof(text), "%llu",
						    (unsigned long long)k.expires));
	c->part->n = (int64_t)k.keys;
	kv_rdb_buf_free(&k.b);
	return true;
}

void kv_save(struct kv_call *c)
{
	save_part(c, true);
}

/* Writes the dump from the n shards' parts where cfg says; false with
 * the reason logged. Records the outcome (persist.h). */
static bool write_dump(const struct kv_config *cfg, const struct kv_server_view *view,
		       const struct kv_part *const *parts, unsigned n, int64_t now)
{
	struct kv_rdb_keys k[n];
	const struct kv_rdb_keys *kp[n];
	struct kv_totals t = { 0 };
	char why[512];

	if (view && view->totals)
		view->totals(view->arg, &t);
	for (unsigned i = 0; i < n; i++) {
		const struct kv_part *p = parts[i];
		k[i] = (struct kv_rdb_keys){ .keys = (uint64_t)p->n };
		k[i].b.p = (uint8_t *)p->bytes + p->strs[PART_RECORDS].off;
		k[i].b.len = p->strs[PART_RECORDS].len;
		k[i].expires = strtoull(p->bytes + p->strs[PART_EXPIRES].off, NULL, 10);
		kp[i] = &k[i];
	}
	struct kv_rdb_save_opts o = { .dir = cfg->dir, .name = cfg->dbfilename,
				      .checksum = cfg->rdbchecksum, .now = now,
				      .used_mem = t.used_memory };
	bool ok = kv_rdb_file_save(&o, kp, n, why, sizeof(why)) == 0;
	if (!ok)
		fprintf(stderr, "kv: saving the dump failed: %s\n", why);
	kv_persist_save_done(now, wall_ms(), t.dirty, ok);
	return ok;
}

/* SHUTDOWN's end: the dump when asked (a failure refuses the shutdown
 * unless FORCE), then the server stops without replying. */
static void shutdown_finish(const struct kv_config *cfg, const struct kv_server_view *view,
			    const struct kv_part *const *parts, unsigned n, int64_t now,
			    struct kv_reply *out)
{
	const struct kv_part *p = parts[0];
	unsigned flags = (unsigned)strtoul(p->bytes + p->strs[PART_SHUTDOWN].off, NULL, 10);

	if ((flags & SD_DUMP) && !write_dump(cfg, view, parts, n, now)) {
		if (!(flags & SD_FORCE)) {
			fprintf(stderr, "kv: SHUTDOWN refused: the dump could not be saved\n");
			KV_REPLY_ERR(out, "ERR Errors trying to SHUTDOWN. Check logs.");
			return;
		}
		fprintf(stderr, "kv: SHUTDOWN FORCE: exiting without the dump\n");
	}
	if (!view || !view->shutdown) {
		kv_reply_status(out, "OK"); /* no server to stop */
		return;
	}
	fprintf(stderr, "kv: SHUTDOWN: %s, exiting\n",
		flags & SD_DUMP ? "dump saved" : "not saving");
	view->shutdown(view->arg);
}

void kv_save_finish(const struct kv_config *cfg, const struct kv_server_view *view,
		    const struct kv_part *const *parts, unsigned n, int64_t now,
		    struct kv_reply *out)
{
	struct kv_config defaults;

	if (!cfg) {
		kv_config_init(&defaults);
		cfg = &defaults;
	}
	if (parts[0]->count > PART_SHUTDOWN)
		shutdown_finish(cfg, view, parts, n, now, out);
	else if (!write_dump(cfg, view, parts, n, now))
		kv_reply_error(out, "ERR", 3);
	else
		kv_reply_status(out, "OK");
}

/* BGSAVE [SCHEDULE]. Refused while an append-only file rewrite runs, as
 * Redis refuses it while its rewrite child does; with SCHEDULE it starts
 * once the rewrite ended instead, as Redis 7.0's. Refused while a
 * background save runs, SCHEDULE or not. */
void kv_bgsave(struct kv_call *c)
{
	int rc;

	if (c->argc > 2 || (c->argc == 2 && !kv_arg_is(c, 1, "schedule"))) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (!c->view || !c->view->bgsave) {
		KV_REPLY_ERR(c->out, KV_ERR_NO_BGSAVE);
		return;
	}
	rc = c->view->bgsave(c->view->arg, c->argc == 2);
	if (rc == 1)
		kv_reply_status(c->out, "Background saving scheduled");
	else if (rc == -EBUSY)
		KV_REPLY_ERR(c->out, KV_ERR_BGSAVE_RUNNING);
	else if (rc == -EAGAIN)
		KV_REPLY_ERR(c->out, KV_ERR_AOFRW_BLOCKS_BGSAVE);
	else if (rc)
		kv_reply_error(c->out, "ERR", 3);
	else
		kv_reply_status(c->out, "Background saving started");
}

/* BGREWRITEAOF: Redis 7.0's replies (scheduled while a BGSAVE runs). */
void kv_bgrewriteaof(struct kv_call *c)
{
	int rc;

	if (!c->view || !c->view->bgrewriteaof) {
		KV_REPLY_ERR(c->out, KV_ERR_NO_BGSAVE);
		return;
	}
	rc = c->view->bgrewriteaof(c->view->arg);
	if (rc == 1)
		kv_reply_status(c->out, "Background append only file rewriting scheduled");
	else if (rc == -EBUSY)
		KV_REPLY_ERR(c->out, KV_ERR_AOFRW_RUNNING);
	else if (rc == -ENOTSUP)
		KV_REPLY_ERR(c->out, KV_ERR_AOFRW_OFF);
	else if (rc)
		KV_REPLY_ERR(c->out, KV_ERR_AOFRW_FAILED);
	else
		kv_reply_status(c->out, "Background append only file rewriting started");
}

void kv_lastsave(struct kv_call *c)
{
	kv_reply_int(c->out, kv_save_last());
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: Redis 7.0's checks; NOW
 * has nothing to skip here (no replicas to wait for), and no shutdown is
 * ever pending for ABORT to cancel. */
void kv_shutdown(struct kv_call *c)
{
	static const char *const names[] = { "nosave", "save", "now", "force", "abort" };
	unsigned flags = 0;
	char text[16];

	for (uint32_t a = 1; a < c->argc; a++) {
		unsigned f = 0;
		for (unsigned i = 0; i < 5; i++)
			if (kv_arg_is(c, a, names[i]))
				f = 1u << i;
		if (!f) {
			kv_err(c, KV_ERR_SYNTAX);
			return;
		}
		flags |= f;
	}
	if (((flags & SD_ABORT) && flags != SD_ABORT) ||
	    ((flags & SD_SAVE) && (flags & SD_NOSAVE))) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (flags & SD_ABORT) {
		kv_err(c, "ERR No shutdown in progress.");
		return;
	}
	if ((flags & SD_SAVE) || (!(flags & SD_NOSAVE) && c->cfg && c->cfg->nsave))
		flags |= SD_DUMP;
	if (!save_part(c, flags & SD_DUMP))
		return;
	kv_part_add(c->part, text, (size_t)snprintf(text, sizeof(text), "%u", flags));
}
