/* SPDX-License-Identifier: MIT */
/* percore net: what the listener, sessions and server share inside.
 *
 * Memory of one shard (allocated by its own thread, so on its node):
 *   struct net_shard   the shard's sessions machinery and statistics;
 *   slab               struct pc_session objects;
 *   slots              id -> session (index and generation);
 *   pool               input and output rings, attached only while bytes
 *                      are buffered.
 * The only state shared between shards is the per-address table
 * (addrtab.h) and the statistics, which each shard writes alone and any
 * thread may read (relaxed atomics).
 */
#ifndef PERCORE_SRC_NET_NET_H
#define PERCORE_SRC_NET_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/addrtab.h"
#include "net/bufpool.h"
#include "percore/clock.h"
#include "percore/defs.h"
#include "percore/metrics.h"
#include "percore/reactor.h"
#include "percore/server.h"
#include "percore/session.h"
#include "percore/slab.h"
#include "percore/wheel.h"

/* Session flags. */
enum {
	NS_PAUSED = 1u << 0,   /* not read: output above high water */
	NS_EOF = 1u << 1,      /* the client closed its side */
	NS_CLOSING = 1u << 2,  /* close asked: flush, then FIN */
	NS_FIN = 1u << 3,      /* FIN sent: discarding input until EOF or linger */
	NS_DIRTY = 1u << 4,    /* on the shard's flush list */
	NS_DRAIN = 1u << 5,    /* server draining: reads what arrives for a while, then FIN */
	NS_DEAD = 1u << 6,     /* freed as soon as its callbacks unwind */
	NS_OPEN = 1u << 7,     /* on_open ran: on_close is owed */
	NS_WBLOCKED = 1u << 8, /* the last write came back short: wait for OUT */
	NS_PARTIAL = 1u << 9,  /* an incomplete frame is buffered: frame deadline */
	NS_REPLY_OWED = 1u << 10, /* an error reply is queued, counted once written */
	NS_HELD = 1u << 11,    /* pc_session_pause_read(): not read */
	NS_UNREAD = 1u << 12,  /* the frame in hand is offered again */
	NS_RESUME = 1u << 13,  /* held, resuming from a task (session_hold.c) */
	NS_RECV = 1u << 14,    /* bytes come by completion (session_uring.c) */
	NS_BUDGET = 1u << 15,  /* not read: the shard is over its input budget */
};

/* No input is taken in these states. */
#define NS_NO_READ (NS_PAUSED | NS_EOF | NS_CLOSING | NS_FIN | NS_DEAD | NS_HELD | NS_BUDGET)

struct net_shard;

/* Two cache lines (128 bytes): an idle session costs this, its id slot
 * and the reactor's entry for its fd; no buffer. */
struct pc_session {
	struct net_shard *sh;
	struct pc_ringbuf *rx;        /* NULL while nothing is buffered */
	struct pc_ringbuf *tx;        /* NULL while nothing is queued */
	void *data;                   /* the application's */
	struct pc_timer timer;        /* idle, heartbeat, frame deadline, linger */
	uint32_t dirty_next;          /* the shard's flush list: the next
	                               * session's slot + 1; 0: the last */
	/* Ticks (net_tick()) as 32 bits: only their age is used, through
	 * pc_elapsed32(), which stays right because the timer looks at them
	 * at least every 2^31 ticks (each timer is at most 2^31 - 1 ms). */
	uint32_t last_rx;             /* tick of the last byte received */
	uint32_t frame_t0;            /* NS_PARTIAL (with a frame timeout or an
	                               * input budget): tick at which the first
	                               * byte of the incomplete frame came */
	uint32_t slot;                /* in the shard's id table */
	/* Output still in the input ring (see struct net_ref): the first and
	 * last of this session's references (index + 1; 0: none) and their
	 * bytes. */
	uint32_t ref_head, ref_tail, ref_bytes;
	int fd;
	uint16_t flags;
	uint8_t events;               /* interest registered with the reactor */
	uint8_t busy;                 /* nesting of this session's callbacks */
	uint8_t why;                  /* enum pc_close_reason, once known */
	uint8_t family;               /* AF_INET or AF_INET6 */
	uint16_t port;                /* the client's, network order */
	uint8_t addr[NET_ADDR_LEN];   /* the client's, v4-mapped for IPv4 */
};

/* A reply whose bytes are still in the session's own input ring: the
 * echo of a frame (its header too, and consecutive echoes as one range),
 * a forward of its body. Instead of copying them into the output ring,
 * the session notes where they lie, and the flush hands them to sendmsg
 * from there. The bytes
 * stay put until then: nothing reads into that ring while it is
 * referenced (the read waits for the next turn), and a ring about to be
 * replaced or given back first has its references copied ("materialized")
 * into the output ring. A short write materializes what is left. Valid
 * within one turn: the shard's list empties at the end of every flush. */
struct net_ref {
	const uint8_t *p;
	uint32_t len;
	uint32_t at;                  /* owned output bytes queued before it */
	uint32_t next;                /* the session's next (index + 1), 0 none */
	uint32_t count;               /* in a session's first: how many it has */
};

/* id -> session: index (low 24 bits) and generation (next 24 bits). */
struct net_slot {
	struct pc_session *s;         /* NULL: free */
	uint32_t gen;
	union {
		uint32_t next_free;   /* free: the next free slot */
		/* live: input bytes its application holds outside the
		 * session's ring (pc_session_hold_input); here, not in the
		 * session, which has no byte to spare */
		uint32_t held_app;
	};
};

/* Writable by the owning shard only; other threads read them with
 * relaxed loads (pc_server_stats). */
#define NET_STAT_ADD(sh, f, n) \
	__atomic_store_n(&(sh)->stats.f, (sh)->stats.f + (uint64_t)(n), __ATOMIC_RELAXED)
#define NET_STAT_SUB(sh, f, n) \
	__atomic_store_n(&(sh)->stats.f, (sh)->stats.f - (uint64_t)(n), __ATOMIC_RELAXED)

struct net_shard {
	/* ---- owner shard only ------------------------------------------ */
	struct pc_server *srv;
	const struct pc_server_cfg *cfg;
	unsigned index;
	unsigned nshards;
	struct pc_reactor *r;
	struct pc_wheel *w;
	struct pc_slab *slab;
	struct net_bufpool pool;
	struct pc_dispatch dispatch;  /* with on_dispatch only */
	bool dispatching;
	struct net_slot *slots;
	uint32_t nslots, slot_cap, free_slot; /* free_slot: UINT32_MAX none */
	uint32_t dirty;               /* sessions with output to write: the
	                               * first one's slot + 1; 0: none */
	struct net_ref *refs;         /* this turn's references, all sessions */
	uint32_t nrefs, refs_cap;
	/* Where references may point now: the body a handler of session
	 * ref_owner is looking at (NULL outside input handling). */
	struct pc_session *ref_owner;
	const uint8_t *ref_lo, *ref_hi;
	bool flush_queued;            /* the flush task is deferred */
	struct net_rseq **rseq;       /* reply sequencers by id slot (reply_seq.c) */
	uint32_t rseq_cap;
	struct pc_session *in_frame;  /* whose on_frame is running, or NULL */
	uint32_t nsessions;
	int lfd;                      /* -1 once closed */
	bool accept_paused;           /* out of fds: retrying on a timer */
	bool draining;
	/* while draining, sessions read what their clients sent until this
	 * time (pc_now_ns), then flush and end: a client that never stops
	 * sending does not hold the drain open until its deadline */
	uint64_t drain_read_end;
	struct pc_session *feeding;   /* bytes in hand, not yet all taken */
	bool drained;                 /* reported to the server */
	struct pc_timer accept_timer;
	struct pc_timer drain_timer;
	/* Sessions moving to other shards (session_move.c), oldest first,
	 * and the timer that looks again at those waiting for their output
	 * to be written. */
	struct net_move *moves;
	struct pc_timer move_timer;
	uint8_t *scratch;             /* discarded input after FIN */
	/* Limits and sizes, derived once from the configuration. */
	uint32_t max_body;            /* effective (pc_frame_max_body) */
	size_t rx_max, tx_max;        /* ring capacities a session may reach */
	uint64_t idle_ticks, hb_ticks, frame_ticks, linger_ticks;
	/* The input budget (session_budget.c): buffered bytes above which
	 * the largest holders stop being read, and the low watermark under
	 * which they are read again. */
	uint64_t max_input, input_low;
	uint32_t budget_paused;       /* sessions with NS_BUDGET */
	bool budget_acting;
	bool budget_queued;           /* a look at the budget is deferred */

	/* ---- written by the owner, read by any thread -------------------- */
	PC_CACHE_ALIGNED struct pc_server_stats stats;
};

struct pc_server {
	struct pc_server_cfg cfg;     /* copy; host dropped */
	struct pc_engine *engine;
	struct net_addrtab *addrs;    /* NULL when max_per_addr is 0 */
	unsigned n;
	uint16_t port;
	int lfd0;                     /* shard 0's listener, opened up front to
	                               * fix the port; the others open theirs */
	struct sockaddr_storage addr; /* the address it is bound to */
	socklen_t addr_len;
	struct net_shard **shards;    /* set by each shard at start */
	/* Start-up rendezvous: shards report set-up done (or failed). */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned started;
	int start_err;
	/* Shards still draining; the last one stops the engine. */
	_Atomic unsigned draining;
	_Atomic bool shutdown;
	uint32_t drain_ms;
	/* Request latency family, set once when metrics are added; read by
	 * every shard per frame (read-mostly: never written again). */
	struct pc_metric *latency;
	struct pc_metrics *metrics;   /* cfg.metrics: the registry served */
	bool metrics_own;             /* made here (no cfg.metrics_registry) */
	_Atomic bool ready;           /* pc_server_start() has succeeded */
	struct pc_metrics_http *http; /* and its endpoint */
};

/* server_metrics.c: start the endpoint when cfg.metrics (0 otherwise);
 * stop its thread; free the registry once no shard runs. */
int net_server_metrics_start(struct pc_server *srv, const char *host, char *err, size_t len);
void net_server_metrics_stop(struct pc_server *srv);
void net_server_metrics_free(struct pc_server *srv);

/* metrics_lib.c: the latency family shards record into, NULL: none.
 * Release/acquire: the handle's fields are visible before the pointer. */
static inline struct pc_metric *net_server_latency(const struct pc_server *srv)
{
	return __atomic_load_n(&srv->latency, __ATOMIC_ACQUIRE);
}

static inline void net_server_set_latency(struct pc_server *srv, struct pc_metric *h)
{
	__atomic_store_n(&srv->latency, h, __ATOMIC_RELEASE);
}

/* The net shard running on this thread (NULL elsewhere). */
extern __thread struct net_shard *net_self;

/* The clock in wheel ticks, for a session's stamps (kept as 32 bits).
 * Read from the clock rather than the wheel, whose tick lags it by up to a
 * turn and would make bytes received this turn look older than they are. */
static inline uint64_t net_tick(void)
{
	return pc_now_ns() / PC_REACTOR_TICK_NS;
}

/* session.c */
struct pc_session *net_session_new(struct net_shard *sh, int fd, const struct sockaddr *peer);
void net_session_abort(struct pc_session *s, enum pc_close_reason why);
void net_session_drain(struct pc_session *s);
/* Queue an error reply and close gracefully with why; the reply is counted
 * in error_replies once written. Returns as pc_session_refuse(). */
int net_session_refuse(struct pc_session *s, enum pc_close_reason why, uint32_t msg_id,
		       const void *body, size_t len);
/* Input ended with an incomplete frame: start its deadline when it is a
 * new one (fresh: frames were consumed since the last read, so what is
 * left began with the latest bytes). */
void net_session_partial(struct pc_session *s, bool fresh);
/* A session on the flush list by its link (slot + 1), NULL for 0. */
static inline struct pc_session *net_dirty_at(const struct net_shard *sh, uint32_t link)
{
	return link ? sh->slots[link - 1].s : NULL;
}
void net_shard_flush(struct net_shard *sh);
size_t net_session_bytes(void);

/* Output bytes not yet written: owned ones and references. */
static inline size_t net_session_queued(const struct pc_session *s)
{
	return (s->tx ? pc_ringbuf_used(s->tx) : 0) + s->ref_bytes;
}

/* session_io.c */
void net_session_io(struct pc_reactor *r, int fd, unsigned events, void *arg);
void net_session_input(struct pc_session *s);
void net_session_read_once(struct pc_session *s);
/* Bytes received for s by the completion path: n > 0 bytes at p, 0 the
 * client's EOF, < 0 -errno; the same as a read that brought them. Copies
 * what the session can take into its input ring and decodes it. Returns
 * how many bytes it took (fewer while it takes no input: the rest is
 * offered again). */
size_t net_session_feed(struct pc_session *s, const uint8_t *p, ssize_t n);
int net_session_ping(struct pc_session *s);
void net_session_unwind(struct pc_session *s);
void net_session_settle(struct pc_session *s);
void net_session_set_interest(struct pc_session *s);
void net_session_pause(struct pc_session *s);
void net_session_opened(struct pc_session *s);
/* Before the final close() after FIN: drop what the client sent since
 * (at most NET_DISCARD_READS reads of the scratch buffer), so the close
 * ends the connection with the FIN already sent rather than a reset. */
#define NET_DISCARD_READS 16
void net_session_discard(struct pc_session *s);

/* session_move.c */
struct net_move;
void net_move_init(struct net_shard *sh);
/* s is going away (closed, or its move is done): forget its move. */
void net_move_forget(struct pc_session *s);
/* Whether s is on its way to another shard. */
bool net_moving(const struct pc_session *s);
/* s's output is all written: a move waiting for that goes on. */
void net_move_written(struct pc_session *s);

/* session_uring.c */
/* Register a new session's fd with its reactor: completion receive where
 * the reactor has it, readiness otherwise. Returns 0 or -errno. */
int net_session_watch(struct pc_session *s);

/* session_out.c */
void net_mem_update(struct net_shard *sh);
struct pc_ringbuf *net_session_buf_get(struct net_shard *sh, size_t bytes);
/* Give back a ring once it holds nothing: idle sessions hold no memory. */
void net_session_buf_release(struct net_shard *sh, struct pc_ringbuf **rb);
/* Queue iov's iovcnt pieces (at most 17), len bytes in all; all or
 * nothing. 0, -EPIPE (closing), -ENOBUFS (over tx_max), -ENOMEM. */
int net_session_queue(struct pc_session *s, const struct iovec *iov, int iovcnt, size_t len);
/* Where len more owned bytes go, contiguous at the output ring's tail,
 * when they may be queued now and copying them is what net_session_queue
 * would do; NULL otherwise (then net_session_queue decides). The bytes
 * count once net_session_tail_commit() is called, before anything else
 * touches the session. */
uint8_t *net_session_tail(struct pc_session *s, size_t len);
void net_session_tail_commit(struct pc_session *s, size_t len);
void net_session_mark_dirty(struct pc_session *s);
/* Copy referenced output into the output ring (before the input ring
 * changes). Returns 0 or -ENOMEM. */
int net_session_materialize(struct pc_session *s);
void net_session_flush(struct pc_session *s);

/* server.c */
void net_shard_drained(struct net_shard *sh);

/* listener.c: a connection accepted by the kernel on our behalf
 * (pc_reactor_add_accept()): TCP_NODELAY as pc_accept() sets, and its
 * peer's address. Returns 0 or -errno. */
int net_accepted(int fd, struct sockaddr_storage *peer, socklen_t *len);

/* slots (session.c) */
struct pc_session *net_slot_find(struct net_shard *sh, uint64_t id);
/* Run fn on every session of the shard (fn may free the one it is given). */
void net_each_session(struct net_shard *sh, void (*fn)(struct pc_session *s));

/* reply_seq.c */
void net_reply_forget(struct pc_session *s);
/* Sequenced answers s still owes its client and will write: reserved
 * slots not yet written, unless the application closed it. A client
 * that sent its last request and shut its side (EOF), or a draining
 * server, waits for them before the FIN. */
bool net_reply_owed(const struct pc_session *s);
void net_reply_table_free(struct net_shard *sh);

/* session_budget.c */
/* Pause, shed or resume as the budget asks (see net_budget_settle). */
void net_budget_act(struct net_shard *sh);
/* A session leaving: forget its pause. */
void net_budget_forget(struct pc_session *s);
/* Input bytes s holds: in its ring and held by the application. */
size_t net_budget_held(const struct pc_session *s);
static inline uint32_t *net_held_app(const struct pc_session *s)
{
	return &s->sh->slots[s->slot].held_app;
}
/* After a session read or left: act when it held bytes before or holds
 * some now (held: a holder added or finished; a session that held none
 * and holds none changed nothing) and the shard is over the budget, or
 * when under the low watermark with sessions paused. */
static inline void net_budget_settle(struct net_shard *sh, bool held)
{
	uint64_t b = sh->stats.buffered_bytes;

	if (PC_UNLIKELY((b > sh->max_input && held) || (sh->budget_paused && b <= sh->input_low)))
		net_budget_act(sh);
}

/* stats.c */
int net_stats_reply(struct pc_session *s);

#endif
