/* SPDX-License-Identifier: MIT */
/* What the kv commands know beyond one shard's keyspace: the connection
 * that sent the request (struct kv_conn), the server's settings (struct
 * kv_config) and a view of the whole server for INFO and CLIENT (struct
 * kv_server_view).
 *
 * The network server owns all three: it fills a kv_conn per connection on
 * the shard that owns the connection, keeps one kv_config per shard (a copy:
 * CONFIG SET hands the new settings to view->config_set, which carries them
 * to every shard) and answers view->totals with figures from every shard.
 * A kv_conn is used on its connection's shard only; each shard reads its
 * own kv_config copy. */
#ifndef KV_CONN_H
#define KV_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "resp.h"

/* Connection flags. */
#define KV_CONN_CLOSE     0x1u   /* close once the replies so far are written (QUIT) */
#define KV_CONN_NO_EVICT  0x2u   /* CLIENT NO-EVICT on: kept as state, reported by CLIENT INFO */
#define KV_CONN_BLOCKED   0x4u   /* waiting on keys (set by the server): CLIENT LIST's b */

/* The Redis release whose replies and errors the commands follow, as HELLO
 * and INFO report it (clients choose features by it). */
#define KV_REDIS_VERSION "7.0.15"

/* A connection's buffers as its server sees them, for CLIENT LIST and
 * CLIENT INFO (Redis's fields of the same names; docs/KV.md). */
struct kv_conn_buffers {
	size_t qbuf, qbuf_free;   /* input held, not run yet; the room left where it is */
	size_t rbs, rbp;          /* the input buffers' size; the most input held at once */
	size_t obl;               /* reply bytes built, not yet queued for the socket */
	size_t oll;               /* requests out on other shards, their replies awaited */
	size_t omem;              /* reply bytes queued for the socket, not yet written */
	size_t mem;               /* what the server holds for it (tot-mem but for
				   * argv-mem and multi-mem) */
	bool reading, writing;    /* events: read; waiting to write */
};

/* One client connection's state. */
struct kv_conn {
	uint64_t id;            /* unique in the server, from 1 (CLIENT ID) */
	int64_t ctime;          /* when it connected, ms since the epoch */
	int64_t last_active;    /* when its last command ran, ms since the epoch */
	int proto;              /* RESP version: 2 (HELLO 3 is refused) */
	int db;                 /* selected database: always 0 */
	unsigned flags;         /* KV_CONN_* */
	/* the last command's name, lower case ("NULL" before any): the
	 * command table's own text, so recording it costs one store */
	const char *last_cmd;
	char addr[64];          /* peer "ip:port", set by the server ("" when none) */
	char laddr[64];         /* local "ip:port", set by the server ("" when none) */
	int fd;                 /* the socket, -1 when none (CLIENT INFO's fd=) */
	/* CLIENT SETNAME and CLIENT SETINFO LIB-NAME / LIB-VER: allocated,
	 * NULL when unset */
	char *name;
	char *lib_name;
	char *lib_ver;
	/* MULTI's queue and WATCH's keys (txn.h); NULL until first used */
	struct kv_txn *txn;
	/* its channels and patterns (pubsub.h); NULL until first used */
	struct kv_subs *subs;
	/* the tables of the shard it lives on (set by the server; NULL:
	 * none): its subscriptions are made there alone */
	struct kv_pubsub *ps;
	/* its buffers' figures (set by the server, called on its shard;
	 * NULL: none held, and read from) */
	void (*buffers)(const struct kv_conn *c, struct kv_conn_buffers *b);
};

/* Replaces one of c's strings (&c->name, &c->lib_name, &c->lib_ver) with
 * s[0..n) (n 0: unset). Returns 0 or -ENOMEM (unchanged). */
int kv_conn_set_str(char **field, const char *s, size_t n);

/* A fresh connection: id, created now (ms since the epoch), RESP2, db 0,
 * no name, fd -1, no addresses. */
void kv_conn_init(struct kv_conn *c, uint64_t id, int64_t now);

/* Frees what the connection holds (its name and library strings). */
void kv_conn_fini(struct kv_conn *c);

/* appendfsync's values, Redis's. */
enum kv_fsync { KV_FSYNC_ALWAYS, KV_FSYNC_EVERYSEC, KV_FSYNC_NO };

/* Their names, by value. */
extern const char *const kv_fsync_names[];

/* One save rule ("save <seconds> <changes>"): a dump is due once at
 * least changes writes were counted and more than secs seconds passed
 * since the last one. */
struct kv_save_rule {
	uint32_t secs;
	uint32_t changes;
};
#define KV_SAVE_RULES_MAX 16
/* Redis 7.0's rules when none are given (the server's default). */
#define KV_SAVE_DEFAULT "3600 1 300 100 60 10000"

/* Every setting of the server, with Redis 7's defaults from
 * kv_config_init(). Sizes in bytes, times in seconds. */
struct kv_config {
	uint16_t port;                 /* 6379 */
	uint32_t shards;               /* shards running (set by the server; 1) */
	uint64_t maxmemory;            /* the whole server's limit; 0: none */
	enum kv_policy maxmemory_policy;
	uint32_t maxmemory_samples;    /* keys looked at per eviction (5) */
	uint64_t proto_max_bulk_len;   /* 512 MiB */
	uint32_t max_multibulk_len;    /* arguments in one request (1,048,576) */
	uint32_t maxclients;           /* 10000 */
	uint64_t client_output_limit;  /* unsent reply bytes before a close; 0: none (Redis's "normal 0 0 0") */
	/* a subscriber's: closed past the hard limit, or over the soft one
	 * for its seconds (Redis's "pubsub 32mb 8mb 60"); 0: none */
	uint64_t pubsub_output_limit, pubsub_soft_limit;
	uint32_t pubsub_soft_seconds;
	uint32_t timeout;              /* idle seconds before a close; 0: never */
	uint32_t tcp_keepalive;        /* 300 */
	uint32_t hz;                   /* background task frequency (10) */
	uint32_t hash_max_listpack_entries;  /* 512 (redis-server 7.0's built-in default): a larger hash is a hashtable */
	uint64_t hash_max_listpack_value;    /* 64: a longer field or value makes it one */
	uint32_t set_max_intset_entries;     /* 512: a larger integer set is a hashtable */
	int32_t list_max_listpack_size;      /* -2: list nodes of up to 8 KiB (kvlist.h's fill) */
	uint32_t zset_max_listpack_entries;  /* 128: a larger sorted set is a skiplist */
	uint64_t zset_max_listpack_value;    /* 64: a longer member makes it one */
	char bind[128];                /* listen address ("* -::*" as Redis reports it) */
	/* persistence: where SAVE writes and the start loads the dump */
	char dir[256];                 /* the working directory at start */
	char dbfilename[256];          /* dump.rdb */
	bool rdbcompression;           /* yes: LZF for long strings */
	bool rdbchecksum;              /* yes: the file's CRC-64 (no: 0) */
	/* the append-only files (aof.h): kept when appendonly, synced as
	 * appendfsync says, named from appendfilename and the shard */
	bool appendonly;               /* no */
	enum kv_fsync appendfsync;     /* everysec */
	char appendfilename[256];      /* appendonly.aof */
	bool aof_load_truncated;       /* yes: a torn last record is cut at start */
	/* the automatic rewrite: when the files grew by this percentage over
	 * their size after the last rewrite (0: never), once past min_size */
	uint32_t auto_aof_rewrite_percentage;  /* 100 */
	uint64_t auto_aof_rewrite_min_size;    /* 64 MiB */

	/* save rules (CONFIG save); none: no dump unless asked */
	struct kv_save_rule save[KV_SAVE_RULES_MAX];
	uint32_t nsave;
};

/* Redis 7's defaults, port 6379, one shard, and no save rules: a keyspace
 * without a server has nothing to save on its own (the server's options
 * start from KV_SAVE_DEFAULT, kv_server_opts_init). */
void kv_config_init(struct kv_config *cfg);

/* Reads save rules as Redis does: "<seconds> <changes> ...", seconds at
 * least 1, changes at least 0, pairs separated by spaces; "" means none.
 * Returns false (cfg unchanged) when the text is not such a list or has
 * more than KV_SAVE_RULES_MAX rules. */
bool kv_config_save_parse(struct kv_config *cfg, const char *s, size_t n);

/* The rules as CONFIG GET save prints them ("3600 1 300 100"), into
 * buf. */
void kv_config_save_format(const struct kv_config *cfg, char *buf, size_t cap);

/* The parser limits the settings name. */
struct kv_resp_limits kv_config_resp_limits(const struct kv_config *cfg);

/* One shard's figures for INFO. */
struct kv_shard_totals {
	uint64_t keys;          /* keys held (DBSIZE's share) */
	uint64_t expires;       /* of which with an expiry time */
	uint64_t used_memory;   /* bytes its keyspace holds */
};

/* The whole server's figures, as INFO and CLIENT LIST show them. */
struct kv_totals {
	uint64_t connected_clients;
	uint64_t blocked_clients;       /* waiting on keys (BLPOP...) */
	uint64_t total_connections;     /* accepted since start */
	uint64_t rejected_connections;  /* refused over maxclients */
	uint64_t moved_connections;     /* moved to the shard of their keys */
	uint64_t tx_locks;              /* locks of commands over several shards */
	uint64_t tx_lock_waits;         /* of them, those that queued */
	uint64_t total_commands;        /* commands processed */
	uint64_t net_input_bytes, net_output_bytes;
	uint64_t expired_keys;          /* deleted by lazy or active expiry */
	uint64_t evicted_keys;          /* deleted by maxmemory eviction */
	uint64_t keys, expires;         /* summed over the shards */
	uint64_t used_memory;           /* summed over the shards */
	/* the append-only files: kept, their bytes and records not yet
	 * confirmed summed, the first failing shard's -errno (0: all ok) */
	bool aof_enabled;
	uint64_t aof_size, aof_pending;
	int aof_err;
	int64_t start_time;             /* ms since the epoch */
	uint64_t dirty;                 /* writes counted since start (kv_db_count_changes) */
	/* BGSAVE: whether one runs and since when (ms since the epoch), the
	 * last one's outcome and length (s; -1: none yet); the bytes of key
	 * records its shards hold now (serialized, not yet on disk: the
	 * snapshot's extra memory) and the most they held at once during the
	 * last or current one; the keys serialized early because a change
	 * came before the walk reached them (copies before a write) */
	bool bgsave_in_progress, bgsave_last_ok;
	int64_t bgsave_started_ms, bgsave_last_secs;
	/* BGREWRITEAOF, the same (scheduled: waiting for a BGSAVE to end),
	 * rewrites done and failed in a row, and the files' bytes after their
	 * last rewrite (or at start) */
	bool aofrw_in_progress, aofrw_scheduled, aofrw_last_ok;
	int64_t aofrw_started_ms, aofrw_last_secs;
	uint64_t aofrw_count, aofrw_fail_streak, aof_base_size;
	uint64_t snapshot_bytes, snapshot_peak_bytes, snapshot_copied_keys;
	uint32_t shards;                /* entries in per_shard */
	/* one per shard, or NULL: storage owned by the server, valid until
	 * the next totals() call from the same shard */
	const struct kv_shard_totals *per_shard;
};

/* A growable text for INFO and CLIENT LIST (bulk string replies). */
struct kv_text {
	char *buf;
	size_t len, cap;
	bool failed;    /* out of memory: later appends are dropped */
};

/* Appends a printf-formatted text. */
void kv_text_printf(struct kv_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Frees the text; it may be used again from empty. */
void kv_text_free(struct kv_text *t);

/* Appends the CLIENT INFO / CLIENT LIST line of c (ending in '\n') as of
 * now (ms since the epoch); argv_mem: the bytes of the arguments of the
 * request c is running (the caller's own; 0 for the others). */
void kv_client_info_line(struct kv_text *t, const struct kv_conn *c, int64_t now,
			 size_t argv_mem);

/* The server as the commands see it. Every member may be NULL (kv_exec and
 * the tests have no server): commands then report this one connection and
 * the keyspace they run on. */
struct kv_server_view {
	/* Fills *t with the server's current figures. */
	void (*totals)(void *arg, struct kv_totals *t);
	/* Applies new settings on every shard (CONFIG SET): 0, or a negative
	 * errno, the settings unchanged (and, when why is not empty, the
	 * error's text after "ERR "). */
	int (*config_set)(void *arg, const struct kv_config *next, char *why, size_t whylen);
	/* Calls fn(ctx, conn) for each connection of this shard, oldest
	 * first (CLIENT LIST runs on every shard). NULL: the caller's own
	 * connection is the only one. */
	void (*clients)(void *arg, void (*fn)(void *ctx, const struct kv_conn *conn), void *ctx);
	/* Ends the wait of this shard's connection id blocked on keys
	 * (CLIENT UNBLOCK): its reply is the timeout's nil, or the UNBLOCKED
	 * error when error. Returns whether it was waiting. NULL: none
	 * waits. */
	bool (*client_unblock)(void *arg, uint64_t id, bool error);
	/* Closes this shard's connection id (CLIENT KILL): at once, but the
	 * caller's own (self), which closes once its reply is written.
	 * Returns false when there is none open (or it is closing already).
	 * NULL: nothing to close. */
	bool (*client_kill)(void *arg, uint64_t id, bool self);
	/* Stops the server (SHUTDOWN, once its dump is written): the
	 * connections close without another reply, the process exits.
	 * NULL: no server to stop. */
	void (*shutdown)(void *arg);
	/* Starts a background save (BGSAVE): 0, -EBUSY while one runs,
	 * -EAGAIN while an append-only file rewrite runs, 1 when scheduled
	 * after that rewrite (schedule: BGSAVE SCHEDULE), or a negative
	 * errno. NULL: no background saves here. */
	int (*bgsave)(void *arg, bool schedule);
	/* Starts a rewrite of the append-only files (BGREWRITEAOF): 0, 1
	 * when scheduled after a running BGSAVE, -EBUSY while one runs,
	 * -ENOTSUP when appendonly is off, or a negative errno. NULL: none
	 * here. */
	int (*bgrewriteaof)(void *arg);
	void *arg;
};

#endif
