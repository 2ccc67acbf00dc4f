/* SPDX-License-Identifier: MIT */
/* percore: what code running on a shard may do: who am I, and messages to
 * other shards over the mesh.
 *
 * The mesh is N x N single-producer single-consumer rings: ring (i, j)
 * carries shard i's messages to shard j, in the order i submitted them.
 * A message is one 64-byte slot: a function pointer and either a pointer
 * argument or up to PC_MSG_INLINE bytes copied in. Submitting stages the
 * message in the ring; the ring's tail is published (made visible to the
 * receiver) when the shard's turn ends, or sooner after publish_batch
 * staged messages, or on pc_shard_flush(). A message that finds the ring
 * to its shard empty and fits in 16 bytes (a pointer, a reply, a short
 * copy) goes at once through the line the two shards share instead (the
 * pair's mailbox: the one-at-a-time path, no batching to wait for); the
 * order stays the order of submission either way. A full ring refuses
 * with -EAGAIN: nothing is dropped and nothing blocks, the caller decides
 * (retry on a later turn, shed load, ...).
 *
 * Every function here must be called from a shard thread (inside a
 * message, fd callback, timer, task or on_start/on_stop hook); from any
 * other thread they return -EPERM (or -1 / NULL where they return an id
 * or pointer).
 */
#ifndef PERCORE_SHARD_H
#define PERCORE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct pc_arena;
struct pc_engine;
struct pc_reactor;
struct pc_shard_stats;
struct pc_slab;

/* Bytes a message carries inline (pc_shard_submit_copy). */
#define PC_MSG_INLINE 48

/* Pointer messages to one function, sent one after another to the same
 * shard with pc_shard_submit() or pc_shard_send(), that share one ring
 * slot (a cache line): a stream moves this many per line. A ring of
 * ring_capacity slots then holds up to this many times as many. */
#define PC_MSG_PACK 5

/* Pointer messages to different functions that share one slot the same
 * way: each carries its function beside its argument, so fewer fit. A
 * slot begun by two messages to one function takes only that function
 * (up to PC_MSG_PACK); one begun by two different functions takes any
 * (up to PC_MSG_PACK_MIXED). */
#define PC_MSG_PACK_MIXED 3

/* A message's function, run on the shard it was sent to. */
typedef void (*pc_msg_fn)(void *arg);
/* A call's function, run on the called shard; its result goes back to
 * the caller's reply function. */
typedef intptr_t (*pc_shard_call_fn)(void *arg);
/* A call's reply, run on the calling shard with the call's result. */
typedef void (*pc_shard_reply_fn)(void *ctx, intptr_t result);

/* This thread's shard index, or -1 when it is not a shard. */
PC_API int pc_shard_id(void);
/* Shards in this thread's engine, 0 when not a shard. */
PC_API unsigned pc_shard_count(void);
/* Counts the answers the calling shard awaits from other shards: +1 when
 * it sends a request whose answer it will wait for, -1 when the answer
 * arrives. The await idle policy polls instead of sleeping while the
 * count is above zero. No effect outside a shard. */
PC_API void pc_shard_expect(int delta);
/* This shard's reactor (fds, timers, tasks), NULL when not a shard. */
PC_API struct pc_reactor *pc_shard_reactor(void);
/* This shard's engine, NULL when not a shard. */
PC_API struct pc_engine *pc_shard_engine(void);

/* This shard's arena (percore/arena.h) for request-lifetime scratch, on
 * its NUMA node: take a mark when a request starts, rewind when it ends.
 * NULL when not a shard. */
PC_API struct pc_arena *pc_shard_arena(void);

/* Largest object pc_shard_slab() serves. */
#define PC_SHARD_SLAB_MAX 4096

/* This shard's slab pool (percore/slab.h) for objects of up to size bytes:
 * one pool per power-of-two class from 64 to PC_SHARD_SLAB_MAX bytes,
 * 64-byte aligned, created on first use on the shard's node. Allocate and
 * free on this shard with pc_slab_alloc/pc_slab_free; another shard frees
 * with pc_slab_free_remote. The pools live until pc_engine_destroy().
 * Returns NULL when not a shard, for size 0 or above the largest class,
 * or when memory runs out. */
PC_API struct pc_slab *pc_shard_slab(size_t size);

/* Run fn(arg) on shard `to` (which may be this shard: it then runs on a
 * later turn, never inside this call). Returns 0, -EAGAIN when ring
 * (self, to) is full or messages to `to` wait in this shard's outbox,
 * -EINVAL for a bad shard or NULL fn, -EPERM off a shard. To have a full
 * ring wait instead of refusing, use pc_shard_send() (percore/outbox.h). */
PC_API int pc_shard_submit(unsigned to, pc_msg_fn fn, void *arg);

/* Like pc_shard_submit, but copies len bytes of data into the message;
 * fn receives a pointer to the copy, valid until fn returns (aligned to 8
 * bytes). Returns -EMSGSIZE when len > PC_MSG_INLINE, otherwise as
 * pc_shard_submit. */
PC_API int pc_shard_submit_copy(unsigned to, pc_msg_fn fn, const void *data, size_t len);

/* Run fn(arg) on shard `to`, then reply(ctx, result) back on this shard
 * with fn's return value. The reply is never refused: each pair of shards
 * keeps ring room for the replies it may owe, and a shard may have at most
 * pc_shard_call_limit() calls to one shard awaiting their replies.
 * Returns 0, -EAGAIN (ring full, or that many calls outstanding), -EINVAL,
 * -EPERM. */
PC_API int pc_shard_call(unsigned to, pc_shard_call_fn fn, void *arg, pc_shard_reply_fn reply,
			 void *ctx);

/* Calls to one shard that may await their replies at once (the engine
 * configuration's call_limit). */
PC_API unsigned pc_shard_call_limit(void);

/* Submit fn(arg) to every shard, this one included: all or none. Returns
 * 0, -EAGAIN when any ring is full (nothing sent), -EINVAL, -EPERM. */
PC_API int pc_shard_broadcast(pc_msg_fn fn, void *arg);

/* Publish every staged message now instead of at the end of the turn
 * (for latency-critical sends inside a long handler). Returns the number
 * of rings published, or -EPERM. */
PC_API int pc_shard_flush(void);

/* Collect every shard's statistics through the mesh: each shard copies a
 * snapshot of its own figures when the request reaches it, and once all
 * have answered done(stats, n, arg) runs on this shard (stats valid during
 * the call only). The requests go through the outbox (percore/outbox.h):
 * a full ring delays them, never refuses them; if the engine stops
 * first, done does not run. Returns 0, -ECANCELED when the engine is
 * stopping, -ENOMEM, -EPERM. */
PC_API int pc_engine_stats(void (*done)(const struct pc_shard_stats *stats, unsigned n, void *arg),
			   void *arg);

PC_END_DECLS

#endif
