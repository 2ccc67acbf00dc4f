/* SPDX-License-Identifier: MIT */
/* percore: sending to another shard without failing for a full ring.
 *
 * Which call to use:
 *  - pc_shard_send(), pc_shard_send_copy(), pc_shard_call_q() (here):
 *    the message goes into the ring when it has room, and otherwise
 *    waits in this shard's outbox towards that shard, in order, until it
 *    does. Use them wherever a refusal would leave the caller with
 *    nothing sensible to do: inside a message handler, to answer, to
 *    forward. They refuse only past the shard's memory budget
 *    (-ENOBUFS: the application is producing faster than the receiver
 *    can take, and should stop reading input; see pc_shard_on_pressure).
 *  - pc_shard_submit(), pc_shard_submit_copy(), pc_shard_call()
 *    (percore/shard.h): -EAGAIN when the ring is full, or while messages
 *    to that shard wait in the outbox (they may not overtake them). For
 *    callers that prefer to drop or retry themselves and want no memory
 *    held for them.
 *
 * Order: the messages one shard sends to another run in the order they
 * were sent, whichever of these calls sent them and whether they went by
 * ring, pair mailbox or outbox (docs/ARCHITECTURE.md, "The outbox").
 *
 * The outbox is drained at the end of every turn and by every later send
 * to the same shard. Memory: the outboxes of one shard hold at most
 * outbox_budget messages (percore/engine.h) of 64 bytes each, in 4 KiB
 * chunks from the shard's own slab; replies, and the messages the library
 * sends for itself, are never refused and may pass the budget.
 *
 * Every function here must be called on a shard; -EPERM elsewhere.
 */
#ifndef PERCORE_OUTBOX_H
#define PERCORE_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/shard.h"

PC_BEGIN_DECLS

#ifdef __cplusplus
extern "C" {
#endif

/* Run fn(arg) on shard `to` (this one included: a later turn). Returns
 * 0; -ENOBUFS past the outbox budget (nothing queued); -ENOMEM when no
 * chunk could be allocated; -EINVAL for a bad shard or NULL fn; -EPERM
 * off a shard. */
PC_API int pc_shard_send(unsigned to, pc_msg_fn fn, void *arg);

/* Like pc_shard_send, for a message that completes work already accepted
 * (an answer, a result going back): it may pass the budget, since
 * refusing it would lose the work rather than push back on new work.
 * Returns 0, -ENOMEM, -EINVAL, -EPERM. */
PC_API int pc_shard_send_reply(unsigned to, pc_msg_fn fn, void *arg);

/* Like pc_shard_send, with len bytes of data copied into the message (fn
 * gets a pointer to the copy, valid until it returns, aligned to 8).
 * -EMSGSIZE when len > PC_MSG_INLINE; otherwise as pc_shard_send. */
PC_API int pc_shard_send_copy(unsigned to, pc_msg_fn fn, const void *data, size_t len);

/* Options of pc_shard_call_q(). Zeroed: no deadline, nothing to drop. */
struct pc_call_opts {
	/* The reply runs with -ETIMEDOUT when no answer came within this
	 * many milliseconds (at most one reactor tick late); 0: no deadline. */
	uint32_t timeout_ms;
	/* An answer that arrives after the deadline is not given to reply:
	 * drop(result) runs instead, on this shard, to free what the result
	 * points at (a pc_shared_buf goes home with pc_shared_buf_put). NULL:
	 * nothing to free. */
	void (*drop)(intptr_t result);
};

/* Run fn(arg) on shard `to`, then reply(ctx, result) here exactly once:
 * with fn's return value; or with -ETIMEDOUT when opts->timeout_ms passed
 * first; or with -ECANCELED when the engine stops before the answer came
 * (the reply then runs on this shard after its last turn, before
 * on_stop). A result that can equal -ETIMEDOUT or -ECANCELED is
 * ambiguous: return such values some other way. opts may be NULL.
 * Past call_limit calls to `to` awaiting their answers (percore/engine.h)
 * the call waits in this shard's outbox until an answer frees one, and
 * what is sent to `to` after it waits behind it, in order.
 * Returns 0 (reply will run); -ECANCELED when the engine is stopping;
 * -ENOBUFS past the outbox budget (the moment to stop reading input);
 * -ENOMEM; -EINVAL
 * for a bad shard, NULL fn or reply; -EPERM off a shard. On any error
 * reply never runs. */
PC_API int pc_shard_call_q(unsigned to, pc_shard_call_fn fn, void *arg, pc_shard_reply_fn reply,
			   void *ctx, const struct pc_call_opts *opts);

/* Pressure: fn(to, true, arg) runs on this shard when its outbox towards
 * `to` reaches outbox_high messages, fn(to, false, arg) when it is back
 * down to outbox_low; once per crossing each way (the low one at the end
 * of a turn). A server stops reading the sessions that feed `to`
 * (pc_session_pause_read) on the first and resumes them on the second.
 * fn may send. NULL removes it. Returns 0 or -EPERM. */
PC_API int pc_shard_on_pressure(void (*fn)(unsigned to, bool high, void *arg), void *arg);

/* Messages waiting in this shard's outbox towards `to` (0 for a bad
 * shard or off a shard). */
PC_API uint32_t pc_shard_outbox_depth(unsigned to);

/* True while the outbox towards `to` is under pressure: it reached the
 * high mark and has not come back down to the low one. */
PC_API bool pc_shard_outbox_pressured(unsigned to);

#ifdef __cplusplus
}
#endif

PC_END_DECLS

#endif
