/* SPDX-License-Identifier: MIT */
/* The kv server's life: configuration, start, totals, shutdown. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aof_rewrite.h"
#include "aof_shard.h"
#include "keyhash.h"
#include "percore/metrics.h"
#include "server_internal.h"

/* Reading stops while this much output waits for a slow client; the
 * largest single write is max_body (16 MiB). */
#define KV_HIGH_WATER (1u << 20)

void kv_server_opts_init(struct kv_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	pc_server_cfg_init(&o->net);
	o->net.host = "127.0.0.1";
	o->net.port = KV_SERVER_PORT;
	o->net.max_input_bytes = KV_SERVER_MAX_INPUT;
	/* Wait in the kernel when nothing is left, as Redis does, rather than
	 * poll for a while: polling asks the kernel once per empty turn (0.8
	 * epoll calls a request more under redis-benchmark at depth 1, 2.8
	 * system calls a request against Redis's 2.0) and keeps the core busy
	 * for other processes that could run there. Except while another
	 * shard owes an answer (await): it comes within microseconds, and a
	 * sleeping shard pays a wake-up for it. On two shards that gave 1.07-
	 * 1.5x sleep's throughput on every hop row and on EXEC across shards,
	 * at 0.93-1.11x its CPU per request; keys held for another shard's
	 * transaction await their unlock too, which doubled EXEC's throughput
	 * across shards at half its CPU (docs/BENCHMARKS.md, "The await idle
	 * policy"). One shard never awaits, so it sleeps as before. */
	o->net.engine.idle = PC_IDLE_AWAIT;
	/* io_uring: a request's receive and the wait cost no system call of
	 * their own (multishot receive). On one shard it took a median 0.94x
	 * epoll's CPU per request over redis-benchmark's rows at depth 1 and
	 * 0.98x at depth 16; on two about even (SET 1.07x, GET 0.96x), and
	 * 0.9-1.3x per pub/sub delivery across them, still below
	 * redis-server's (docs/BENCHMARKS.md, "percore kv's backend"). The
	 * engine falls back to epoll, logged, where the kernel refuses it. */
	o->net.engine.backend = PC_BACKEND_URING;
	/* SCHED_BATCH: a shard woken by the other shard's message or by a
	 * client's bytes waits for the thread on its CPU to block instead of
	 * preempting it. Where shards share CPUs with each other and with
	 * clients (two shards on two CPUs), preemption came 0.3 times per
	 * request at depth 1 and 0.02 at depth 16; under SCHED_BATCH 0.006
	 * and 0.0003, for 0.80-0.96x the CPU per request at depth 16 and
	 * 0.85-0.99x at depth 1 (docs/BENCHMARKS.md, "Shards under
	 * SCHED_BATCH"). A shard alone on its CPU preempts nobody either way. */
	o->net.engine.sched_batch = true;
	o->move_clients = true;
	kv_config_init(&o->cfg);
	kv_config_save_parse(&o->cfg, KV_SAVE_DEFAULT, strlen(KV_SAVE_DEFAULT));
}

static uint64_t rd(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* The keyspace's figures per shard, as metrics (percore_kv_*): a copy of
 * the relaxed counters the shard alone writes. */
struct kv_metric_figs {
	uint64_t keys, expires, used, expired, evicted, commands, aof_size, aof_err;
	uint64_t locks, lock_waits;
};

#define KV_ROW(n, k, f, h) { .name = n, .help = h, .kind = PC_METRIC_##k, \
			     .offset = offsetof(struct kv_metric_figs, f), .scale = 1 }
static const struct pc_metric_field kv_metric_rows[] = {
	KV_ROW("kv_keys", GAUGE, keys, "Keys the shard holds, expired ones not yet deleted included."),
	KV_ROW("kv_keys_with_expiry", GAUGE, expires, "Of those, keys with a time to live."),
	KV_ROW("kv_used_bytes", GAUGE, used, "Bytes the shard's keyspace holds."),
	KV_ROW("kv_expired_keys_total", COUNTER, expired, "Keys deleted because they expired."),
	KV_ROW("kv_evicted_keys_total", COUNTER, evicted, "Keys evicted under maxmemory."),
	KV_ROW("kv_commands_total", COUNTER, commands, "Commands the shard ran."),
	KV_ROW("kv_tx_locks_total", COUNTER, locks,
	       "Locks that commands over several shards took on the shard."),
	KV_ROW("kv_tx_lock_waits_total", COUNTER, lock_waits,
	       "Of those, the locks that waited for another holder or an older waiting job."),
	KV_ROW("kv_aof_bytes", GAUGE, aof_size, "Bytes of the shard's append-only file."),
	KV_ROW("kv_aof_write_errno", GAUGE, aof_err,
	       "The errno of the shard's failing append-only file (writes refused); 0: ok."),
};

static int read_figs(void *ctx, unsigned i, void *out)
{
	const struct kv_server *k = ctx;
	const struct kv_shard_stats *s = &k->stats[i];

	*(struct kv_metric_figs *)out = (struct kv_metric_figs){
		.keys = rd(&s->keys), .expires = rd(&s->expires), .used = rd(&s->used),
		.expired = rd(&s->expired), .evicted = rd(&s->evicted), .commands = rd(&s->commands),
		.aof_size = rd(&s->aof_size), .aof_err = rd(&s->aof_err),
		.locks = rd(&s->locks), .lock_waits = rd(&s->lock_waits),
	};
	return 0;
}

static int add_metrics(struct kv_server *k, char *err, size_t errlen)
{
	return pc_metrics_add_table(pc_server_metrics(k->net), kv_metric_rows,
				    sizeof(kv_metric_rows) / sizeof(kv_metric_rows[0]),
				    sizeof(struct kv_metric_figs), true, read_figs, k, err, errlen);
}

/* The shard count when none is asked for: one per usable CPU the
 * placement gives (n), less one when that leaves at least one. Why: a
 * key hashed to another shard costs a hop (two messages, often two
 * wake-ups), and the clients and the kernel's network work need a CPU
 * too; on two CPUs one shard served redis-benchmark's SET, GET and MSET
 * with random keys at 1.5-2.2x the rate of two shards and half their CPU
 * per request (docs/KV.md). */
static unsigned default_shards(unsigned n)
{
	return n > 1 ? n - 1 : n;
}

/* Once every shard has stopped, no answer still out will ever run: the
 * clients waiting for them go, with their jobs. */
static void free_orphans(struct kv_server *k)
{
	for (unsigned i = 0; i < k->n; i++) {
		uint64_t n = kv_client_free_orphans(k->orphans[i]);

		k->orphans[i] = NULL;
		atomic_fetch_sub_explicit(&k->closing, n, memory_order_relaxed);
		kv_ps_free_orphans(k->ps_orphans[i]);
		k->ps_orphans[i] = NULL;
	}
	kv_bgsave_free_orphans(k);
}

/* What kv_server_start allocated besides the network server. */
static void free_server(struct kv_server *k)
{
	kv_aofrw_free_left(k);
	free(k->dump);
	free(k->stats);
	free(k->orphans);
	free(k->ps_orphans);
	free(k->snap_orphans);
	kv_persist_stop_free(k);
	pthread_mutex_destroy(&k->load_lock);
	free(k);
}

int kv_server_start(const struct kv_server_opts *o, struct kv_server **out, char *err,
		    size_t errlen)
{
	struct kv_server *k = calloc(1, sizeof(*k));
	int n, rc;

	if (!k)
		return -ENOMEM;
	k->o = *o;
	rc = kv_keyhash_init();
	n = rc ? rc : pc_engine_cfg_shards(&o->net.engine, err, errlen);
	if (n < 0) {
		free(k);
		return n;
	}
	k->n = o->net.engine.shards ? (unsigned)n : default_shards((unsigned)n);
	k->o.cfg.shards = k->n;
	k->o.cfg.port = o->net.port;
	k->start_ms = kv_now_ms();
	kv_save_mark(k->start_ms / 1000); /* the save rules count from the start */
	atomic_store_explicit(&k->bg_last_secs, -1, memory_order_relaxed);
	atomic_store_explicit(&k->rw_last_secs, -1, memory_order_relaxed);
	atomic_store_explicit(&k->aof_state, o->cfg.appendonly ? KV_AOF_ON : KV_AOF_OFF,
			      memory_order_relaxed);
	k->stats = calloc(k->n, sizeof(*k->stats));
	k->orphans = calloc(k->n, sizeof(*k->orphans));
	k->ps_orphans = calloc(k->n, sizeof(*k->ps_orphans));
	k->snap_orphans = calloc(k->n, sizeof(*k->snap_orphans));
	pthread_mutex_init(&k->load_lock, NULL);
	rc = !k->stats || !k->orphans || !k->ps_orphans || !k->snap_orphans ? -ENOMEM : 0;
	if (!rc && o->save_on_stop)
		rc = kv_persist_stop_init(k);
	/* Redis loads the append-only files instead of the dump when
	 * appendonly is on */
	if (!rc && o->load_dump && !o->cfg.appendonly)
		rc = kv_persist_read_rdb(k, err, errlen);
	if (rc) {
		free_server(k);
		return rc;
	}
	struct pc_server_cfg *c = &k->o.net;

	c->engine.shards = k->n;
	c->raw = true;
	c->on_data = kv_client_data;
	c->on_open = kv_client_open;
	c->on_close = kv_client_close;
	if (k->o.move_clients)
		c->on_moved = kv_client_moved;
	c->on_shard_start = kv_shard_start;
	c->on_shard_stop = kv_shard_stop;
	c->user = k;
	/* The largest write, and with its header the library's floor of
	 * max_input_bytes: 16 MiB even, KV_SERVER_MIN_INPUT. */
	c->max_body = KV_SERVER_MIN_INPUT - PC_FRAME_HEADER_LEN;
	if (!c->high_water)
		c->high_water = KV_HIGH_WATER;
	rc = kv_aof_prepare(k, err, errlen);
	if (!rc) {
		rc = pc_server_start(c, &k->net, err, errlen);
		/* every shard has loaded its keys (or failed to) by now */
		bool aof_bad = kv_aof_started(k, err, errlen);

		free(k->dump);
		k->dump = NULL;
		if (!rc && (aof_bad || k->load_err)) {
			rc = aof_bad ? -EBADMSG : k->load_err; /* a file could not be loaded */
			if (!aof_bad)
				snprintf(err, errlen, "%s", k->load_why);
			pc_server_stop(k->net);
			pc_server_wait(k->net);
			free_orphans(k);
			pc_server_destroy(k->net);
		}
	}
	if (!rc) {
		atomic_store_explicit(&k->net_pub, k->net, memory_order_release);
		if (c->metrics && (rc = add_metrics(k, err, errlen))) {
			pc_server_stop(k->net);
			pc_server_wait(k->net);
			pc_server_destroy(k->net);
		}
	}
	if (rc) {
		free_server(k);
		return rc;
	}
	*out = k;
	return 0;
}

uint16_t kv_server_port(const struct kv_server *k)
{
	return pc_server_port(k->net);
}

struct pc_server *kv_server_net(struct kv_server *k)
{
	return k->net;
}

void kv_server_totals(const struct kv_server *k, struct kv_server_totals *t)
{
	struct pc_server_stats ns;

	memset(t, 0, sizeof(*t));
	if (!pc_server_stats(k->net, -1, &ns)) {
		t->input_held = ns.buffered_bytes;
		t->input_shed = ns.input_shed;
	}
	for (unsigned i = 0; i < k->n; i++) {
		t->keys += rd(&k->stats[i].keys);
		t->expires += rd(&k->stats[i].expires);
		t->used_bytes += rd(&k->stats[i].used);
		t->expired += rd(&k->stats[i].expired);
		t->commands += rd(&k->stats[i].commands);
	}
	t->clients = rd(&k->clients);
	t->rejected_clients = rd(&k->rejected);
	t->output_limit_closes = rd(&k->outlimit);
	t->closing = rd(&k->closing);
	t->protocol_errors = rd(&k->proto_errors);
}

void kv_view_totals(void *arg, struct kv_totals *t)
{
	struct kv_shard *sh = arg;
	struct kv_server *k = sh->srv;
	struct pc_server *net = atomic_load_explicit(&k->net_pub, memory_order_acquire);
	struct pc_server_stats ns;

	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < k->n; i++) {
		const struct kv_shard_stats *s = &k->stats[i];
		struct kv_shard_totals *p = &sh->per_shard[i];

		p->keys = rd(&s->keys);
		p->expires = rd(&s->expires);
		p->used_memory = rd(&s->used);
		t->keys += p->keys;
		t->expires += p->expires;
		t->used_memory += p->used_memory;
		t->expired_keys += rd(&s->expired);
		t->evicted_keys += rd(&s->evicted);
		t->total_commands += rd(&s->commands);
		t->aof_size += rd(&s->aof_size);
		t->aof_pending += rd(&s->aof_pending);
		if (!t->aof_err)
			t->aof_err = -(int)rd(&s->aof_err);
		t->dirty += rd(&s->changes);
		t->blocked_clients += rd(&s->blocked);
		t->tx_locks += rd(&s->locks);
		t->tx_lock_waits += rd(&s->lock_waits);
	}
	t->connected_clients = rd(&k->clients);
	t->total_connections = rd(&k->accepted);
	t->rejected_connections = rd(&k->rejected);
	if (net && !pc_server_stats(net, -1, &ns)) {
		t->net_input_bytes = ns.bytes_in;
		t->net_output_bytes = ns.bytes_out;
		t->moved_connections = ns.moved_out;
	}
	t->start_time = k->start_ms;
	kv_bgsave_totals(k, t);
	kv_aofrw_totals(k, t);
	t->shards = k->n;
	t->per_shard = sh->per_shard;
}

void kv_server_stop(struct kv_server *k)
{
	pc_server_stop(k->net);
}

int kv_server_wait(struct kv_server *k)
{
	pc_server_wait(k->net);
	free_orphans(k);
	return kv_persist_stop_save(k);
}

void kv_server_destroy(struct kv_server *k)
{
	if (!k)
		return;
	pc_server_destroy(k->net);
	free_orphans(k); /* destroyed without a wait: the shards ended now */
	free_server(k);
}
