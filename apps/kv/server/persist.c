/* SPDX-License-Identifier: MIT */
/* The server's dump: loaded at start, saved when a save rule says so.
 *
 * Loading: kv_server_start reads the file once (kv_persist_read_rdb);
 * each shard, as it starts and before it serves, walks the whole file
 * and keeps its own keys, stepping over the other shards' values unread
 * (kv_rdb_file_load's want), so the shards decode their parts at once
 * and no key crosses between threads. The first error stops the start
 * with a message naming the file and the key, type or offset.
 *
 * Save rules: shard 0's timer checks them as Redis's serverCron does
 * (at least `changes` writes and more than `secs` seconds since the last
 * save; after a failed one, a retry waits 5 s) and starts a save of the
 * whole server (kv_persist_background_save).
 *
 * A stop other than SHUTDOWN's (SIGTERM after the drain, kv_server_stop)
 * saves when save rules are set, as Redis does on SIGTERM: each shard
 * serializes its keys as it stops, on its own thread, and the thread
 * that waits for the server writes the one file once all have. A save
 * that fails is logged and the previous dump stays; Redis would refuse
 * to exit, but the drain has already let the clients go. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/log.h"
#include "persist.h"
#include "rdb_file.h"
#include "server_internal.h"

/* Redis's wait before retrying a failed background save. */
#define RETRY_MS 5000

int kv_persist_read_rdb(struct kv_server *k, char *err, size_t errlen)
{
	const struct kv_config *cfg = &k->o.cfg;
	int rc;

	snprintf(k->dump_path, sizeof(k->dump_path), "%s/%s", cfg->dir[0] ? cfg->dir : ".",
		 cfg->dbfilename);
	rc = kv_rdb_file_read(k->dump_path, &k->dump, &k->dump_len);
	if (rc == -ENOENT)
		return 0; /* no dump: an empty keyspace, as Redis starts */
	if (rc)
		snprintf(err, errlen, "cannot read %s: %s", k->dump_path, strerror(-rc));
	else
		pc_log(PC_LOG_INFO, "kv: loading %s (%zu bytes)", k->dump_path, k->dump_len);
	return rc;
}

struct load {
	struct kv_shard *sh;
	int64_t now;
};

static bool load_want(const char *key, size_t klen, void *arg)
{
	const struct load *l = arg;
	return kv_key_shard(l->sh, key, klen) == l->sh->idx;
}

/* Stores one key read; a key twice in the file is refused, as Redis
 * refuses it. */
static int load_put(const char *key, size_t klen, struct kv_rdb_value *v, int64_t expire,
		    void *arg)
{
	struct load *l = arg;
	struct kv_pos pos;
	int rc;

	if (kv_db_lookup(l->sh->db, key, klen, l->now, &pos)) {
		kv_rdb_value_free(v);
		return -EEXIST;
	}
	rc = v->type == KV_STRING ? kv_db_store(l->sh->db, &pos, v->str, v->len, expire) :
				    kv_db_store_obj(l->sh->db, &pos, v->type, v->obj, expire);
	if (rc || v->type == KV_STRING)
		kv_rdb_value_free(v); /* copied into the entry, or not kept */
	return rc;
}

void kv_persist_load_rdb(struct kv_shard *sh)
{
	struct kv_server *k = sh->srv;
	struct load l = { .sh = sh, .now = kv_now_ms() };
	struct kv_rdb_limits lim = kv_rdb_default_limits;
	struct kv_rdb_load_opts o = { .now = l.now, .lim = &lim, .fn = load_put,
				      .want = load_want, .arg = &l,
				      .skip_unsupported = k->o.rdb_skip_unsupported };
	struct kv_rdb_load_info info;
	int rc;

	if (!k->dump)
		return;
	lim.coll = (struct kv_coll_limits){ sh->cfg.hash_max_listpack_entries,
					    sh->cfg.hash_max_listpack_value,
					    sh->cfg.set_max_intset_entries };
	lim.zset_entries = sh->cfg.zset_max_listpack_entries;
	lim.zset_value = sh->cfg.zset_max_listpack_value;
	lim.list_fill = sh->cfg.list_max_listpack_size;
	kv_persist_loading(true);
	rc = kv_rdb_file_load(k->dump, k->dump_len, &o, &info);
	kv_persist_loading(false);
	if (rc) {
		pthread_mutex_lock(&k->load_lock);
		if (!k->load_err) {
			k->load_err = rc;
			snprintf(k->load_why, sizeof(k->load_why), "%s: %s at offset %zu",
				 k->dump_path, rc == -EEXIST ? "a key is there twice" : info.why,
				 info.offset);
		}
		pthread_mutex_unlock(&k->load_lock);
		return;
	}
	kv_persist_loaded(info.loaded, info.expired, info.skipped);
	pc_log(PC_LOG_INFO, "kv: shard %u loaded %llu keys from %s in %lld ms (%llu expired, "
	       "%llu of types not read skipped)", sh->idx, (unsigned long long)info.loaded,
	       k->dump_path, (long long)(kv_now_ms() - l.now), (unsigned long long)info.expired,
	       (unsigned long long)info.skipped);
}

/* Writes counted by every shard since start. */
static uint64_t changes(const struct kv_server *k)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < k->n; i++)
		n += atomic_load_explicit(&k->stats[i].changes, memory_order_relaxed);
	return n;
}

/* Whether a rule asks for a save now, as Redis decides. */
static bool rule_due(const struct kv_shard *sh, int64_t now)
{
	struct kv_persist_info p;
	uint64_t dirty;

	kv_persist_get(&p);
	if (p.saving || (!p.last_ok && now - p.last_try_ms < RETRY_MS))
		return false;
	dirty = changes(sh->srv) - p.changes_at_save;
	for (uint32_t i = 0; i < sh->cfg.nsave; i++)
		if (dirty >= sh->cfg.save[i].changes && now / 1000 - p.last_save > sh->cfg.save[i].secs)
			return true;
	return false;
}

void kv_persist_tick(struct kv_shard *sh, int64_t now)
{
	kv_bgsave_tick(sh);
	if (sh->idx == 0 && sh->cfg.nsave && rule_due(sh, now)) {
		pc_log(PC_LOG_INFO, "kv: save rule met, saving the dump");
		kv_persist_background_save(sh);
	}
}

/* The save of the whole server a rule starts: a BGSAVE (bgsave.c), its
 * outcome recorded when it ends (kv_persist_save_done). */
void kv_persist_background_save(struct kv_shard *sh)
{
	int rc = kv_bgsave_start(sh);

	if (rc && rc != -EBUSY && rc != -EAGAIN) /* -EAGAIN: a rewrite runs; the rule waits */
		pc_log(PC_LOG_WARN, "kv: the save a rule started could not begin: %s", strerror(-rc));
}

/* ---- the dump at a stop --------------------------------------------------- */

/* One shard's records, taken as it stopped. */
struct kv_stop_part {
	bool taken;               /* it serialized its keys (else no save) */
	struct kv_rdb_keys keys;
};

int kv_persist_stop_init(struct kv_server *k)
{
	k->stop_parts = calloc(k->n, sizeof(*k->stop_parts));
	return k->stop_parts ? 0 : -ENOMEM;
}

void kv_persist_stop_free(struct kv_server *k)
{
	if (!k->stop_parts)
		return;
	for (unsigned i = 0; i < k->n; i++)
		kv_rdb_buf_free(&k->stop_parts[i].keys.b);
	free(k->stop_parts);
	k->stop_parts = NULL;
}

void kv_persist_stop_part(struct kv_shard *sh)
{
	struct kv_server *k = sh->srv;
	struct kv_stop_part *p;

	if (!k->stop_parts || !sh->cfg.nsave ||
	    atomic_load_explicit(&k->stopped_by_shutdown, memory_order_relaxed))
		return;
	p = &k->stop_parts[sh->idx];
	p->keys = (struct kv_rdb_keys){ .b = KV_RDB_BUF_INIT };
	if (kv_rdb_file_keys(sh->db, kv_now_ms(), sh->cfg.rdbcompression, &p->keys) == 0)
		p->taken = true;
	else
		fprintf(stderr, "kv: shard %u: no memory to serialize its keys for the dump "
			"at the stop\n", sh->idx);
	if (sh->idx == 0)
		k->stop_cfg = sh->cfg; /* the settings as they are now (CONFIG SET) */
}

int kv_persist_stop_save(struct kv_server *k)
{
	const struct kv_rdb_keys *kp[k->n ? k->n : 1];
	char why[512];
	int rc = 0;

	if (!k->stop_parts)
		return 0;
	for (unsigned i = 0; i < k->n; i++) {
		if (!k->stop_parts[i].taken) {
			kv_persist_stop_free(k); /* no rules, SHUTDOWN, or a part missing */
			return 0;
		}
		kp[i] = &k->stop_parts[i].keys;
	}
	const struct kv_rdb_save_opts o = { .dir = k->stop_cfg.dir, .name = k->stop_cfg.dbfilename,
					    .checksum = k->stop_cfg.rdbchecksum, .now = kv_now_ms() };
	/* the engine and its log are gone: stderr, as SHUTDOWN's save */
	fprintf(stderr, "kv: saving the dump before exiting\n");
	rc = kv_rdb_file_save(&o, kp, k->n, why, sizeof(why));
	if (rc)
		fprintf(stderr, "kv: the dump at the stop failed: %s\n", why);
	else
		fprintf(stderr, "kv: dump saved\n");
	kv_persist_stop_free(k);
	return rc;
}
