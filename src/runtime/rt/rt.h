/* SPDX-License-Identifier: MIT */
/* percore rt: the engine's and the mesh's internal layout.
 *
 * Memory map of one shard j (allocated on j's NUMA node, first touched by
 * j's thread):
 *   rt_inbox   the "sleeping" flag (written by j) and the doorbell words
 *              (written by producers, cleared by j), each on its own line;
 *   in[i]      ring (i, j) for every shard i, plus ring (ext, j) for
 *              threads outside the engine: the producer's block of each
 *              ring is written by i, the consumer's by j;
 *   slots      the rings' 64-byte message slots.
 * Shard j's producer state towards every k (rt_out) is private to j and
 * lives in j's own struct.
 */
#ifndef PERCORE_SRC_RT_RT_H
#define PERCORE_SRC_RT_RT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "percore/defs.h"
#include "percore/engine.h"
#include "percore/shard.h"
#include "percore/shared_buf.h"
#include "percore/spsc_seq.h"

enum rt_kind {
	RT_MSG_PTR = 1,  /* fn(arg) */
	RT_MSG_PTRS,     /* fn(arg), then fn(x.args[i]) for i < len (rt_mesh_pack) */
	RT_MSG_COPY,     /* fn(bytes) */
	RT_MSG_CALL,     /* result = fn(arg); reply to the sender */
	RT_MSG_REPLY,    /* reply(ctx, result) */
	RT_MSG_FREE,     /* a list of shared buffers to free (owner side) */
	RT_MSG_GONE,     /* outbox only: a reply that went ahead of a waiting
	                  * call (outbox.c) */
	RT_MSG_MIX,      /* fn(arg), then x.mix[i].fn(x.mix[i].arg) for i < len
	                  * (rt_msg_join) */
};

/* Bytes a message fits in its first 32 (rt_head): the mailbox's limit. */
#define RT_HEAD_INLINE 16

/* A message's first 32 bytes: everything but a call's reply address and
 * an inline copy's bytes past the 16th. A pair mailbox half (below) is
 * exactly this; a ring slot starts with it. */
struct rt_head {
	void (*fn)(void);        /* cast to the kind's function type */
	_Atomic uint32_t word;   /* ring slot: the ring's sequence word, never
	                          * written by the mesh; mailbox: the tag */
	uint16_t kind;
	uint16_t len;            /* RT_MSG_COPY: bytes used */
	union {
		void *arg;
		unsigned char bytes[RT_HEAD_INLINE]; /* a copy's first bytes */
		struct { void *ctx; intptr_t result; } reply;
		struct pc_shared_buf *free_list;
	} u;
};

_Static_assert(sizeof(struct rt_head) == 32, "a mailbox half is half a line");

/* Pointer messages to the same function that one ring slot carries
 * beyond its first (RT_MSG_PTRS). */
#define RT_PACK_MAX (PC_MSG_PACK - 1)

/* Pointer messages to any functions one slot carries beyond its first
 * (RT_MSG_MIX). */
#define RT_MIX_MAX (PC_MSG_PACK_MIXED - 1)

struct rt_pair {
	void (*fn)(void);
	void *arg;
};

/* One ring slot: exactly one cache line, its sequence word included, so
 * the consumer's poll for the next message and its read of it touch one
 * line (spsc_seq.h). An inline copy runs on from h.u.bytes into x. */
struct rt_msg {
	struct rt_head h;
	union {
		unsigned char more[PC_MSG_INLINE - RT_HEAD_INLINE];
		struct { pc_shard_reply_fn reply; void *ctx; } call; /* h.u.arg */
		void *args[RT_PACK_MAX];  /* RT_MSG_PTRS: the later messages' */
		struct rt_pair mix[RT_MIX_MAX]; /* RT_MSG_MIX: the later messages */
	} x;
} __attribute__((aligned(PC_CACHE_LINE)));

_Static_assert(sizeof(struct rt_msg) == PC_CACHE_LINE, "a message is one cache line");
_Static_assert(sizeof(((struct rt_msg *)0)->x.mix) <= PC_MSG_INLINE - RT_HEAD_INLINE,
	       "a mixed slot's pairs fit after its head");
_Static_assert(offsetof(struct rt_msg, x) == offsetof(struct rt_msg, h.u) + RT_HEAD_INLINE,
	       "an inline copy is contiguous");

PC_SPSC_SEQ_TYPED(rt_ring, struct rt_msg, h.word)

/* rt_ring_stage() of a slot known to be free (rt_out.limit): no look at
 * the room. Producer only. */
PC_INLINE struct rt_msg *rt_ring_stage_free(struct rt_ring *q)
{
	return (struct rt_msg *)pc_spsc__stage_free(&q->ring._ring, sizeof(struct rt_msg));
}

/* The line shards i < j share: half[0] carries i's messages to j, half[1]
 * j's to i, one at a time each (mailbox.h says when and why). Padded to
 * its own line pair. */
struct rt_mailbox {
	struct rt_head half[2];
} __attribute__((aligned(PC_CACHE_PAD)));

_Static_assert(PC_MSG_INLINE < 1u << 16, "len fits its field");

/* Slab size classes: 64, 128, ... PC_SHARD_SLAB_MAX bytes. */
#define RT_SLAB_MIN 64
#define RT_SLAB_CLASSES 7
_Static_assert(RT_SLAB_MIN << (RT_SLAB_CLASSES - 1) == PC_SHARD_SLAB_MAX, "size classes");

#define RT_BELL_WORDS ((PC_ENGINE_MAX_SHARDS + 1 + 63) / 64)

/* Written by others: each block starts its own padded line. */
struct rt_inbox {
	/* Writer: the owner shard, when it announces it will sleep and when
	 * it wakes. Readers: producers, after each publish. */
	PC_CACHE_ALIGNED _Atomic uint32_t sleeping;
	/* Writers: producers set bit i (ring (i, owner) has news), the owner
	 * clears words by exchange. Bit N stands for the external ring. */
	PC_CACHE_ALIGNED _Atomic uint64_t bell[RT_BELL_WORDS];
	/* Writer: the owner, when ring i starts or stops being polled every
	 * turn ("hot"). Readers: producers, after each publish: a hot ring
	 * needs no doorbell. Read-mostly: changes only when traffic starts
	 * or stops. */
	PC_CACHE_ALIGNED _Atomic uint8_t hot[PC_ENGINE_MAX_SHARDS + 1];
	/* Writer: producer i sets want_room[i] before it sleeps with
	 * messages for the owner in its outbox; the owner clears it after
	 * freeing slots of ring i and rings i's doorbell (outbox.c). Read
	 * by the owner after each batch it takes from ring i: read-mostly. */
	PC_CACHE_ALIGNED _Atomic uint8_t want_room[PC_ENGINE_MAX_SHARDS];
};

/* Between a seq_cst store (or RMW) and the seq_cst load that follows it
 * in the wake-up handshake (idle.c, mesh_send.c). C11 already orders the
 * two, and hardware does: x86-64 locks the store, aarch64 keeps STLR
 * before LDAR. An emulator may not: qemu running aarch64 code on an x86
 * host fences before a store-release and after a load-acquire, never
 * between them, so the host lets the load pass the store and a wake-up
 * is lost (measured: about one in 300,000 round trips of test_pingpong
 * under qemu-aarch64; none in 788 runs of 20,000 with this fence). An
 * explicit fence becomes a full host fence. On x86-64 the locked store
 * is one already, so the fence is left out there. */
static inline void rt_store_load_fence(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* Messages to one destination that found its ring full (outbox.c): a
 * FIFO of chunks from the sender's slab, drained into the ring before
 * anything sent later. Private to the sender. */
struct rt_outbox {
	struct rt_obx_chunk *first, *last;
	uint32_t depth;              /* messages waiting */
	uint32_t replies;            /* of them, replies (RT_MSG_REPLY) */
	uint64_t full_turn;          /* the turn a drain found the ring full:
	                              * sends skip the look until the next */
	bool listed;                 /* on the shard's obx_dests list */
	bool pressured;              /* above the high watermark, not yet
	                              * back at the low one */
};

/* Shard i's producer state towards one destination: private to i. */
struct rt_out {
	/* The send's fast path reads the first two (mesh_send.h). */
	struct rt_ring *ring;    /* ring (i, dest), in dest's memory */
	/* The ring position the fast path stages below: the mailbox is out
	 * of the question (slots staged, or none, or the ring found busy
	 * this turn), each slot below it is free beyond e->reserve as last
	 * seen, the one at limit - 1 completes a publish_batch, and the
	 * ring is on the dirty list. 0 else, and while the outbox to dest
	 * holds anything, so that nothing overtakes it (outbox.c); 0 at
	 * each turn's flush. */
	size_t limit;
	size_t published;        /* the ring's position at the last publish */
	/* The slot the fast path last staged a pointer message into, and the
	 * ring position after it: later pointer messages join it while it is
	 * the last slot staged and unpublished (rt_mesh_pack). pack_fn: the
	 * function it carries while it carries one only (NULL once mixed).
	 * packed: messages so joined since the last publish. */
	struct rt_msg *pack;
	size_t pack_end;
	void (*pack_fn)(void);
	uint32_t packed;
	uint32_t batch;          /* e->cfg.publish_batch */
	bool polled_seen;        /* a publish since the last flush found the
	                          * ring polled (hot) */
	bool bell_due;           /* published since then, no doorbell check */
	/* Copies of dest's pointers: reading them from dest's struct would
	 * pull in a line dest writes every turn. */
	struct rt_inbox *inbox;
	struct pc_reactor *reactor;
	struct rt_head *mail;    /* this shard's half of the pair's mailbox;
	                          * NULL towards itself */
	uint64_t skip_turn;      /* the turn the ring to dest was found busy:
	                          * no mailbox until the next */
	uint64_t sent;           /* messages sent to dest, all time: stored
	                          * relaxed at each publish and mail, for
	                          * pc_engine_sent_to() */
	uint32_t calls;          /* calls to dest awaiting their reply */
	bool dirty;              /* on the dirty list */
	struct pc_shared_buf *frees; /* dest's buffers to send back */
	struct rt_outbox obx;        /* what waits for room in the ring */
};

/* A shard's application-facing state (outbox.c, calls.c, service.c):
 * private to the shard. */
struct rt_app {
	unsigned *obx_dests;         /* destinations with an outbox listed */
	unsigned nobx;
	uint32_t obx_total;          /* messages in all outboxes */
	uint32_t obx_budget, obx_high, obx_low;
	uint32_t call_limit;         /* calls to one shard awaiting replies */
	void (*on_pressure)(unsigned to, bool high, void *arg);
	void *pressure_arg;
	struct rt_call *calls;       /* calls with a record (calls.c) */
	struct rt_map *maps;         /* pc_shard_map() runs awaiting answers */
	void *user;                  /* pc_shard_user() */
};

struct rt_shard {
	/* ---- written by the owner shard only ---------------------------- */
	unsigned id;
	int cpu, node;
	struct pc_engine *e;
	struct pc_reactor *reactor;
	struct rt_inbox *inbox;      /* in this shard's memory */
	struct rt_ring **in;         /* in[i]: ring (i, me); in[n]: external */
	uint64_t pending[RT_BELL_WORDS]; /* rings to look at: may be non-empty */
	struct rt_head **mail_in;    /* mail_in[i]: the half i sends in, or NULL */
	struct rt_mailbox *mailboxes; /* pairs (id, j > id): allocated here */
	size_t mailboxes_size;
	uint8_t *is_hot;             /* is_hot[i]: private copy of inbox->hot */
	uint32_t *cold_turns;        /* empty polls of hot ring i in a row */
	unsigned nhot;
	struct rt_out *out;          /* out[k]: towards shard k */
	unsigned *dirty;             /* destinations with staged messages */
	unsigned ndirty;
	unsigned nfrees;             /* owners with buffers to return */
	bool mailed;                 /* posted a mail since the last empty turn */
	int awaiting;                /* answers awaited (pc_shard_expect) */
	bool woke;                   /* the last turn ended in the reactor's wait */
	struct pc_arena *arena;      /* pc_shard_arena() */
	struct pc_slab *slabs[RT_SLAB_CLASSES]; /* pc_shard_slab(), lazily */
	void *mem;                   /* inbox + rings + slots, one mapping */
	size_t mem_size;
	uint64_t start_ns;
	/* When the idle span now running began (0: busy): stored relaxed
	 * so that readers on other threads count it as idle already. */
	uint64_t idle_from;
	struct pc_shard_stats stats;
	struct pc_shard_mem mem_figs; /* pc_engine_mem_refresh(): stored relaxed */
	struct rt_app app;
	/* File I/O (src/runtime/io), made on first use; io_free frees it
	 * at engine teardown, after the engine's file threads stopped.
	 * Where its completions signal no eventfd, io_poll collects them
	 * each turn (no system call; returns the callbacks run) and
	 * io_sleep replaces pc_reactor_poll() for a sleeping shard. */
	void *io;
	void (*io_free)(void *io);
	unsigned (*io_poll)(void *io);
	int (*io_sleep)(void *io, int64_t timeout_ns);
	pthread_t thread;
	int setup_err;

	/* ---- written by external submitters, under the lock ------------- */
	PC_CACHE_ALIGNED pthread_mutex_t ext_lock;

	/* ---- the stall watchdog's (stall.c): written rarely ------------- */
	/* The shard sets it (release, after self) when its loop starts and
	 * clears it under stall_lock when the loop ends; the watchdog signals
	 * self only under that lock while it reads 1. */
	PC_CACHE_ALIGNED _Atomic int looping;
	pthread_t self;              /* the thread running the shard */
	pid_t tid;                   /* its kernel thread id */
	pthread_mutex_t stall_lock;
	_Atomic uint64_t stalls;     /* written by the watchdog */
};

struct pc_engine {
	/* Written once by pc_engine_stop(); read by every shard each turn. */
	PC_CACHE_ALIGNED _Atomic int stop;

	PC_CACHE_ALIGNED unsigned n;
	struct pc_engine_cfg cfg;        /* copy; placement string dropped */
	uint32_t capacity;               /* messages per ring */
	uint32_t reserve;                /* slots kept free for replies */
	uint64_t budget_ns;
	/* Start-up: shards wait at the gate until the starter has seen them
	 * all set up; shut-down: every shard publishes its last message
	 * before any drains what is left (the barrier). */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cond;
	unsigned arrived;
	bool gate_open;
	pthread_barrier_t done;
	_Atomic int setup_failed;
	bool ran0;                       /* pc_engine_run() was called */
	bool joined;                     /* pc_engine_join() returned */
	bool signals;                    /* holds SIGINT/SIGTERM */
	struct rt_shard *shards;         /* n entries, padded */
	struct pc_placement *placement;
	struct rt_stall *stall;          /* the watchdog, or NULL */
	bool log_owner;                  /* opened the log (rt_log_engine_open) */
	/* The file threads (src/runtime/io/io_pool.c), started by the first
	 * shard that needs them, under io_lock. */
	pthread_mutex_t io_lock;
	void *io_pool;
	void (*io_pool_free)(void *pool);
};

/* Count into a shard's statistics. Only the shard itself writes them; the
 * store is atomic (relaxed, a plain store on x86-64) so that another
 * thread may read them at any time (pc_engine_stats_read). */
#define RT_STAT_ADD(s, field, n) \
	__atomic_store_n(&(s)->stats.field, (s)->stats.field + (n), __ATOMIC_RELAXED)
#define RT_STAT_SET(s, field, v) __atomic_store_n(&(s)->stats.field, (v), __ATOMIC_RELAXED)

/* The shard running on this thread (NULL elsewhere). Initial-exec: every
 * send reads it, and in position-independent code the default model
 * would make that a call to __tls_get_addr (the compiler then keeps the
 * send's arguments in saved registers even where the linker removes the
 * call); a pointer fits the static TLS that glibc keeps spare for
 * libraries loaded later. */
extern __thread struct rt_shard *rt_self __attribute__((tls_model("initial-exec")));

/* mesh.c (memory), mesh_send.c, mesh_recv.c, mesh_api.c, mesh_ext.c,
 * mesh_returns.c */
int rt_mesh_setup(struct rt_shard *s);        /* on s's thread: its inbox */
void rt_mesh_connect(struct rt_shard *s);     /* after every setup: out[] */
void rt_mesh_free(struct rt_shard *s);
unsigned rt_mesh_drain(struct rt_shard *s);
void rt_mesh_flush(struct rt_shard *s);
bool rt_mesh_may_have_work(struct rt_shard *s); /* seq_cst doorbell check */
bool rt_mesh_cool_all(struct rt_shard *s);    /* stop polling hot rings */
void rt_mesh_final_drain(struct rt_shard *s);
int rt_mesh_push_external(struct pc_engine *e, unsigned to, void (*fn)(void *), void *arg);
void rt_mesh_return_buf(struct rt_shard *s, struct pc_shared_buf *b);
unsigned rt_mesh_send_returns(struct rt_shard *s);
void rt_mesh_drop_returns(struct rt_shard *s);

/* outbox.c */
int rt_outbox_check_cfg(const struct pc_engine_cfg *c, char *err, size_t len);
int rt_outbox_setup(struct rt_shard *s);      /* on s's thread */
void rt_outbox_free(struct rt_shard *s);
unsigned rt_outbox_drain(struct rt_shard *s);             /* every turn */
uint32_t rt_outbox_drain_to(struct rt_shard *s, unsigned to); /* left */
uint32_t rt_outbox_drain_send(struct rt_shard *s, unsigned to); /* from a send */
/* The outbox to `to` waits for an answer: its oldest entry is a call past
 * call_limit (pc_shard_call_q), not one waiting for room. */
bool rt_outbox_call_blocked(const struct rt_shard *s, unsigned to);
bool rt_outbox_waiting(const struct rt_shard *s);
bool rt_outbox_before_sleep(struct rt_shard *s);    /* true: do not sleep */
void rt_outbox_room_made(struct rt_shard *s, unsigned from);
void rt_outbox_end(struct rt_shard *s);       /* after the last drain */
void rt_outbox_reply(struct rt_shard *s, unsigned to, pc_shard_reply_fn fn, void *ctx,
		     intptr_t result);

/* calls.c */
void rt_calls_cancel(struct rt_shard *s);   /* the loop has ended */
void rt_calls_free(struct rt_shard *s);     /* nothing runs any more */

/* service.c */
void rt_maps_free(struct rt_shard *s);      /* nothing runs any more */

/* idle.c */
struct rt_idle {
	uint32_t empty;      /* consecutive empty turns */
	uint64_t t0;         /* when the idle streak was first timed; 0: not */
	uint64_t msgs_seen;  /* mesh policy: messages in and out when it last looked */
	bool polling;        /* mesh policy: this idle streak polls first */
};
void rt_idle_busy(struct rt_shard *s, struct rt_idle *st);
void rt_idle_step(struct rt_shard *s, struct rt_idle *st);

/* stats.c: time since the shard started less its idle time, on its own
 * thread. */
uint64_t rt_busy_ns(const struct rt_shard *s);

/* shard_mem.c */
int rt_shard_mem_setup(struct rt_shard *s);
void rt_shard_mem_free(struct rt_shard *s);

/* stall.c: the watchdog thread, when cfg.stall_threshold_ms is set (one
 * that cannot start is logged; the engine runs without). */
void rt_stall_start(struct pc_engine *e);
void rt_stall_stop(struct pc_engine *e);
void rt_stall_loop_begin(struct rt_shard *s);  /* on the shard */
void rt_stall_loop_end(struct rt_shard *s);

/* log.c: the engine's share of the log. */
int rt_log_engine_open(const struct pc_engine_cfg *cfg, bool *owner, char *err, size_t len);
void rt_log_engine_close(bool owner);
/* A ring for the calling shard's thread while the log is open; stat: the
 * shard's drop figure. Detach when the shard ends (the writer drains
 * the ring, then frees it). */
void rt_log_attach(int shard, uint64_t *stat);
void rt_log_detach(void);

/* crash.c: the calling thread's alternate signal stack, for the crash
 * report (kept until the thread ends or rt_crash_thread_end). */
void rt_crash_thread_stack(void);
void rt_crash_thread_end(void);

/* signals.c */
void rt_signals_release(struct pc_engine *e);

/* shared_buf.c */
void rt_shared_buf_free_list(struct pc_shared_buf *list);

#endif
