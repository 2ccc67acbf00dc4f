/* SPDX-License-Identifier: MIT */
/* INFO [section ...]: the server, clients, memory, persistence, stats and
 * keyspace sections in Redis's "field:value" form. Whole-server figures come from
 * view->totals; without a server view the figures are this keyspace's and
 * this connection's, and the lines no one counts are left out rather than
 * shown as zero. */
#include "cmd_impl.h"

#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "keyhash.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "persist.h"

#define S_SERVER   0x01u
#define S_CLIENTS  0x02u
#define S_MEMORY   0x04u
#define S_STATS    0x08u
#define S_KEYSPACE 0x10u
#define S_PERSIST  0x20u
#define S_ALL      0x3fu

struct info {
	struct kv_text t;
	struct kv_totals tot;
	bool counted;        /* tot came from a server view */
	const struct kv_config *cfg;
	int64_t now;
	bool first;          /* no section written yet */
};

/* Which sections the arguments name; Redis ignores names it does not
 * know, and "default", "all" and "everything" mean every one here. */
static unsigned sections(const struct kv_call *c)
{
	static const char *const names[] = { "server", "clients", "memory", "stats", "keyspace",
					     "persistence" };
	unsigned mask = c->argc == 1 ? S_ALL : 0;
	for (uint32_t a = 1; a < c->argc; a++) {
		if (kv_arg_is(c, a, "default") || kv_arg_is(c, a, "all") || kv_arg_is(c, a, "everything"))
			mask = S_ALL;
		for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (kv_arg_is(c, a, names[i]))
				mask |= 1u << i;
	}
	return mask;
}

static void header(struct info *in, const char *title)
{
	kv_text_printf(&in->t, "%s# %s\r\n", in->first ? "" : "\r\n", title);
	in->first = false;
}

/* A 40-hex-digit id for this process, as Redis's run_id: from the
 * process's random hash key, so it is the same on every call and shard
 * and differs between runs. */
static void run_id(char id[41])
{
	uint64_t a = kv_keyhash("run_id:a", 8) ^ (uint64_t)getpid();
	uint64_t b = kv_keyhash("run_id:b", 8);
	snprintf(id, 41, "%016llx%016llx%08x", (unsigned long long)a, (unsigned long long)b,
		 (unsigned)(a >> 17 ^ b));
}

static void server_section(struct info *in)
{
	struct utsname u;
	char id[41];
	struct pc_reactor *r = pc_shard_reactor(); /* NULL off a shard */
	const char *api = r ? pc_backend_name(pc_reactor_backend(r)) : "epoll";
	int64_t up = in->tot.start_time && in->now > in->tot.start_time ?
		     (in->now - in->tot.start_time) / 1000 : 0;

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	run_id(id);
	header(in, "Server");
	kv_text_printf(&in->t,
		       "redis_version:%s\r\nredis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%d\r\n"
		       "multiplexing_api:%s\r\nprocess_id:%ld\r\nrun_id:%s\r\ntcp_port:%u\r\n"
		       "server_time_usec:%lld\r\n",
		       KV_REDIS_VERSION, u.sysname, u.release, u.machine, (int)(8 * sizeof(void *)),
		       api, (long)getpid(), id, in->cfg->port, (long long)in->now * 1000);
	if (in->counted)
		kv_text_printf(&in->t, "uptime_in_seconds:%lld\r\nuptime_in_days:%lld\r\n",
			       (long long)up, (long long)up / 86400);
	kv_text_printf(&in->t, "hz:%u\r\nshards:%u\r\n", in->cfg->hz, in->tot.shards);
}

static void clients_section(struct info *in)
{
	header(in, "Clients");
	kv_text_printf(&in->t, "connected_clients:%llu\r\nmaxclients:%u\r\nblocked_clients:%llu\r\n",
		       (unsigned long long)in->tot.connected_clients, in->cfg->maxclients,
		       (unsigned long long)in->tot.blocked_clients);
}

/* Redis's "human" sizes: B, K, M, G with two decimals. */
static void human(char *buf, size_t cap, uint64_t n)
{
	static const char units[] = "BKMGTP";
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < 5)
		v /= 1024, u++;
	if (u == 0)
		snprintf(buf, cap, "%lluB", (unsigned long long)n);
	else
		snprintf(buf, cap, "%.2f%c", v, units[u]);
}

/* Resident set size, from /proc/self/statm; 0 when it cannot be read. */
static uint64_t rss_bytes(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void memory_section(struct info *in)
{
	static const char *const policy[] = { "noeviction", "allkeys-lru" };
	char used[32], max[32];
	uint64_t rss = rss_bytes();

	human(used, sizeof(used), in->tot.used_memory);
	human(max, sizeof(max), in->cfg->maxmemory);
	header(in, "Memory");
	kv_text_printf(&in->t,
		       "used_memory:%llu\r\nused_memory_human:%s\r\nused_memory_rss:%llu\r\n"
		       "maxmemory:%llu\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\n"
		       "mem_allocator:libc\r\n",
		       (unsigned long long)in->tot.used_memory, used, (unsigned long long)rss,
		       (unsigned long long)in->cfg->maxmemory, max, policy[in->cfg->maxmemory_policy]);
}

/* Redis's persistence fields of the dump, the keys a load skipped
 * (--rdb-skip-unsupported), and the background save's extra memory: the
 * key records its shards hold (serialized, not yet written), the most
 * at once, and the keys copied before a change reached them. A clock
 * stepped back reads a running save's age as 0. */
static void aof_fields(struct info *in);

static void persistence_section(struct info *in)
{
	const struct kv_totals *t = &in->tot;
	struct kv_persist_info p;
	uint64_t changes;
	int64_t cur = -1;

	kv_persist_get(&p);
	changes = t->dirty > p.changes_at_save ? t->dirty - p.changes_at_save : 0;
	if (t->bgsave_in_progress)
		cur = in->now > t->bgsave_started_ms ? (in->now - t->bgsave_started_ms) / 1000 : 0;
	header(in, "Persistence");
	kv_text_printf(&in->t,
		       "loading:%d\r\nasync_loading:0\r\nrdb_changes_since_last_save:%llu\r\n"
		       "rdb_bgsave_in_progress:%d\r\nrdb_last_save_time:%lld\r\n"
		       "rdb_last_bgsave_status:%s\r\nrdb_last_bgsave_time_sec:%lld\r\n"
		       "rdb_current_bgsave_time_sec:%lld\r\nrdb_saves:%llu\r\n"
		       "rdb_last_load_keys_expired:%llu\r\nrdb_last_load_keys_loaded:%llu\r\n"
		       "rdb_last_load_keys_skipped:%llu\r\nrdb_snapshot_buffer_bytes:%llu\r\n"
		       "rdb_snapshot_peak_bytes:%llu\r\nrdb_snapshot_copied_keys:%llu\r\n",
		       p.loading, (unsigned long long)changes, t->bgsave_in_progress,
		       (long long)kv_save_last(), !in->counted || t->bgsave_last_ok ? "ok" : "err",
		       (long long)(in->counted ? t->bgsave_last_secs : -1), (long long)cur,
		       (unsigned long long)p.saves, (unsigned long long)p.expired,
		       (unsigned long long)p.loaded, (unsigned long long)p.skipped,
		       (unsigned long long)t->snapshot_bytes,
		       (unsigned long long)t->snapshot_peak_bytes,
		       (unsigned long long)t->snapshot_copied_keys);
	aof_fields(in);
}

static void stats_section(struct info *in)
{
	const struct kv_totals *t = &in->tot;
	header(in, "Stats");
	if (in->counted)
		kv_text_printf(&in->t,
			       "total_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
			       "total_net_input_bytes:%llu\r\ntotal_net_output_bytes:%llu\r\n"
			       "rejected_connections:%llu\r\nmoved_connections:%llu\r\n"
			       "tx_locks:%llu\r\ntx_lock_waits:%llu\r\n",
			       (unsigned long long)t->total_connections,
			       (unsigned long long)t->total_commands,
			       (unsigned long long)t->net_input_bytes,
			       (unsigned long long)t->net_output_bytes,
			       (unsigned long long)t->rejected_connections,
			       (unsigned long long)t->moved_connections,
			       (unsigned long long)t->tx_locks,
			       (unsigned long long)t->tx_lock_waits);
	kv_text_printf(&in->t, "expired_keys:%llu\r\nevicted_keys:%llu\r\n",
		       (unsigned long long)t->expired_keys, (unsigned long long)t->evicted_keys);
}

/* The append-only files' fields, Redis's names. */
static void aof_fields(struct info *in)
{
	const struct kv_totals *t = &in->tot;
	long long cur = -1;

	if (t->aofrw_in_progress)
		cur = in->now > t->aofrw_started_ms ? (in->now - t->aofrw_started_ms) / 1000 : 0;
	kv_text_printf(&in->t,
		       "aof_enabled:%d\r\n"
		       "aof_rewrite_in_progress:%d\r\naof_rewrite_scheduled:%d\r\n"
		       "aof_last_rewrite_time_sec:%lld\r\naof_current_rewrite_time_sec:%lld\r\n"
		       "aof_last_bgrewrite_status:%s\r\naof_rewrites:%llu\r\n"
		       "aof_rewrites_consecutive_failures:%llu\r\naof_last_write_status:%s\r\n",
		       t->aof_enabled, t->aofrw_in_progress, t->aofrw_scheduled,
		       (long long)(in->counted ? t->aofrw_last_secs : -1), cur,
		       !in->counted || t->aofrw_last_ok ? "ok" : "err",
		       (unsigned long long)t->aofrw_count, (unsigned long long)t->aofrw_fail_streak,
		       t->aof_err ? "err" : "ok");
	if (t->aof_enabled)
		kv_text_printf(&in->t, "aof_current_size:%llu\r\naof_base_size:%llu\r\n"
			       "aof_pending_rewrite:%d\r\naof_buffer_length:%llu\r\n",
			       (unsigned long long)t->aof_size, (unsigned long long)t->aof_base_size,
			       t->aofrw_scheduled, (unsigned long long)t->aof_pending);
}

static void keyspace_section(struct info *in)
{
	header(in, "Keyspace");
	if (in->tot.keys)
		kv_text_printf(&in->t, "db0:keys=%llu,expires=%llu,avg_ttl=0\r\n",
			       (unsigned long long)in->tot.keys, (unsigned long long)in->tot.expires);
}

/* The figures: the server's, or this keyspace's and connection's. */
static void gather(const struct kv_call *c, struct info *in)
{
	if (c->view && c->view->totals) {
		c->view->totals(c->view->arg, &in->tot);
		in->counted = true;
		return;
	}
	struct kv_db_stats s;
	kv_db_stats(c->db, &s);
	in->tot = (struct kv_totals){ .connected_clients = c->conn ? 1 : 0, .keys = s.keys,
				      .expires = s.expires, .used_memory = s.used,
				      .expired_keys = s.expired, .evicted_keys = s.evicted,
				      .dirty = s.changes, .shards = 1 };
}

void kv_info(struct kv_call *c)
{
	struct kv_config defaults;
	struct info in = { .now = c->now, .first = true, .cfg = c->cfg };
	unsigned mask = sections(c);

	if (!in.cfg) {
		kv_config_init(&defaults);
		in.cfg = &defaults;
	}
	gather(c, &in);
	if (mask & S_SERVER)
		server_section(&in);
	if (mask & S_CLIENTS)
		clients_section(&in);
	if (mask & S_MEMORY)
		memory_section(&in);
	if (mask & S_PERSIST)
		persistence_section(&in);
	if (mask & S_STATS)
		stats_section(&in);
	if (mask & S_KEYSPACE)
		keyspace_section(&in);
	if (in.t.failed)
		kv_err_oom(c);
	else
		kv_reply_bulk(c->out, in.t.buf ? in.t.buf : "", in.t.len);
	kv_text_free(&in.t);
}
