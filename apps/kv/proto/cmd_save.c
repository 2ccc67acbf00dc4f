/* SPDX-License-Identifier: MIT */
/* SAVE, BGSAVE and LASTSAVE. SAVE runs on every shard at once, each
 * holding its lock (a server-wide command): each serializes its own keys
 * (its part), and the connection's shard writes them into one dump
 * (rdb_file.h). BGSAVE asks the server (view->bgsave) to start a save
 * that runs while every shard keeps serving (apps/kv/server/bgsave.c). */
#include "cmd_impl.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rdb_file.h"

/* The last successful save (or the start), in seconds since the epoch.
 * Process-wide: one server runs in a process. */
static _Atomic int64_t last_save_s;

int64_t kv_save_last(void)
{
	int64_t t = atomic_load_explicit(&last_save_s, memory_order_relaxed);
	return t ? t : (int64_t)time(NULL);
}

void kv_save_mark(int64_t s)
{
	atomic_store_explicit(&last_save_s, s, memory_order_relaxed);
}

/* This shard's part: its key records as one string, n the keys, and the
 * keys with an expiry as a second string (the file's size hints). */
void kv_save(struct kv_call *c)
{
	struct kv_rdb_keys k = { .b = KV_RDB_BUF_INIT };
	bool compress = c->cfg ? c->cfg->rdbcompression : true;
	struct kv_totals t = { 0 };
	char text[24];

	if (c->view && c->view->totals)
		c->view->totals(c->view->arg, &t);
	if (t.bgsave_in_progress || kv_db_snap_active(c->db)) {
		/* Redis refuses SAVE while its BGSAVE child runs */
		KV_REPLY_ERR(c->out, KV_ERR_BGSAVE_RUNNING);
		return;
	}
	if (kv_rdb_file_keys(c->db, c->now, compress, &k) != 0) {
		kv_rdb_buf_free(&k.b);
		kv_err_oom(c);
		return;
	}
	kv_part_add(c->part, (const char *)k.b.p, k.b.len);
	kv_part_add(c->part, text, (size_t)snprintf(text, sizeof(text), "%llu",
						    (unsigned long long)k.expires));
	c->part->n = (int64_t)k.keys;
	kv_rdb_buf_free(&k.b);
}

void kv_save_finish(const struct kv_config *cfg, const struct kv_server_view *view,
		    const struct kv_part *const *parts, unsigned n, int64_t now,
		    struct kv_reply *out)
{
	struct kv_config defaults;
	struct kv_rdb_keys k[n];
	const struct kv_rdb_keys *kp[n];
	struct kv_totals t = { 0 };
	char why[512];

	if (!cfg) {
		kv_config_init(&defaults);
		cfg = &defaults;
	}
	if (view && view->totals)
		view->totals(view->arg, &t);
	for (unsigned i = 0; i < n; i++) {
		const struct kv_part *p = parts[i];
		k[i] = (struct kv_rdb_keys){ .keys = (uint64_t)p->n };
		k[i].b.p = (uint8_t *)p->bytes + p->strs[0].off;
		k[i].b.len = p->strs[0].len;
		k[i].expires = strtoull(p->bytes + p->strs[1].off, NULL, 10);
		kp[i] = &k[i];
	}
	struct kv_rdb_save_opts o = { .dir = cfg->dir, .name = cfg->dbfilename,
				      .checksum = cfg->rdbchecksum, .now = now,
				      .used_mem = t.used_memory };
	if (kv_rdb_file_save(&o, kp, n, why, sizeof(why)) != 0) {
		fprintf(stderr, "kv: SAVE failed: %s\n", why);
		kv_reply_error(out, "ERR", 3);
		return;
	}
	kv_save_mark(now / 1000);
	kv_reply_status(out, "OK");
}

/* BGSAVE [SCHEDULE]. With no other background work here (Redis's AOF
 * rewrite child), SCHEDULE answers as Redis then does: started, or
 * refused while a background save runs. */
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
	rc = c->view->bgsave(c->view->arg);
	if (rc == -EBUSY)
		KV_REPLY_ERR(c->out, KV_ERR_BGSAVE_RUNNING);
	else if (rc)
		kv_reply_error(c->out, "ERR", 3);
	else
		kv_reply_status(c->out, "Background saving started");
}

void kv_lastsave(struct kv_call *c)
{
	kv_reply_int(c->out, kv_save_last());
}
