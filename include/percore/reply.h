/* SPDX-License-Identifier: MIT */
/* percore: answers in request order, for sessions that forward.
 *
 * A session that answers some requests itself and forwards others to
 * the shards that own their data gets the answers back in any order. The
 * reply sequencer puts them back in the order the requests were read:
 *
 *   on_frame:   pc_reply_reserve(s, &ticket)     a slot, in request order
 *               ...answer now, or forward ticket and pc_session_id(s)
 *   answer:     pc_reply_fill(s, ticket, ...)     on the session's shard
 *          or   pc_reply_fill_to(id, ticket, ...) from any shard
 *
 * A filled slot is written as soon as every slot before it is filled;
 * until then its frame waits, copied, beside the session. A slot that
 * will get no answer is given up with pc_reply_skip(), or the frames
 * after it wait for ever (the session's idle timeout still closes it).
 *
 * A session that closes while answers are outstanding loses its slots;
 * answers that arrive afterwards are discarded and counted
 * (pc_server_stats.replies_discarded). Frames that pc_session_send
 * would refuse when written (the client stopped reading) are counted
 * there too.
 *
 * Every function runs on a shard of a server; those taking a session on
 * the session's own shard.
 */
#ifndef PERCORE_REPLY_H
#define PERCORE_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "percore/session.h"

PC_BEGIN_DECLS

#ifdef __cplusplus
extern "C" {
#endif

/* Slots one session may have reserved and not yet written. */
#define PC_REPLY_MAX_PENDING 65536

/* Reserve the next reply slot of s and store its ticket. Returns 0;
 * -ENOBUFS when PC_REPLY_MAX_PENDING slots wait already; -ENOMEM;
 * -EPIPE when the session is closing. */
PC_API int pc_reply_reserve(struct pc_session *s, uint32_t *ticket);

/* Fill slot `ticket` of s with a frame (msg_id, flags, body copied).
 * Returns 0; -EINVAL for a ticket not reserved or already filled; -ENOMEM
 * (the slot stays empty); -EMSGSIZE for a body over the hard cap; or,
 * when the frame is written at once, pc_session_send_flags()'s error (the
 * slot is used all the same). */
PC_API int pc_reply_fill(struct pc_session *s, uint32_t ticket, uint32_t msg_id, uint8_t flags,
			 const void *body, size_t len);

/* Take back the newest reservation, still unfilled: for a request that
 * could not be forwarded and will be read again (pc_session_unread_frame).
 * Returns 0, or -EINVAL when ticket is not the newest or was filled. */
PC_API int pc_reply_unreserve(struct pc_session *s, uint32_t ticket);

/* Give slot `ticket` up: the slots after it need not wait for it. A
 * session that stayed open only for its answers (the client's EOF, a
 * close, a drain) ends once the last is given up, as once it is written.
 * Returns 0 or -EINVAL as pc_reply_fill. */
PC_API int pc_reply_skip(struct pc_session *s, uint32_t ticket);

/* pc_reply_fill for the session with this id, from any shard of its
 * server (through the outbox when the session lives elsewhere: never
 * refused for a full ring, nor for the outbox budget: it completes work
 * already accepted). A session gone meanwhile discards the frame and its
 * shard counts it. Returns 0; -ENOENT for a session of this shard that is
 * gone (counted); -EINVAL for an
 * id of no shard or, locally, a bad ticket; -EMSGSIZE; -ENOMEM; -EPERM
 * off a server shard. */
PC_API int pc_reply_fill_to(uint64_t id, uint32_t ticket, uint32_t msg_id, uint8_t flags,
			    const void *body, size_t len);

/* Slots of s reserved and not yet written. */
PC_API uint32_t pc_reply_pending(const struct pc_session *s);

#ifdef __cplusplus
}
#endif

PC_END_DECLS

#endif
