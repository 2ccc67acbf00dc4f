/* SPDX-License-Identifier: MIT */
/* percore: TCP sessions.
 *
 * A session is one accepted connection. It belongs to the shard that
 * accepted it, lives in that shard's slab and is touched only by that
 * shard's thread: every function taking a struct pc_session * must be
 * called there (inside a handler, a timer, a task or a mesh message running
 * on that shard). Other shards reach a session by its id through
 * pc_session_send_to().
 *
 * Input is read into a ring buffer, framed sessions decode frames in place
 * (percore/frame.h) and hand each to the server's handler; output is queued
 * in a second ring and written with one writev per session at the end of
 * the shard's turn, whatever number of frames were queued. Both rings come
 * from the shard's pool when bytes arrive and go back when drained: an
 * idle session holds neither.
 *
 * The application may hold reading back itself: pc_session_pause_read()
 * stops reading a session until pc_session_resume_read(), for instance
 * while the shard it forwards to is under pressure (percore/outbox.h).
 *
 * Backpressure: once a session's unsent output reaches the high-water mark
 * it is no longer read (its buffered frames wait too) until the output
 * drains below the low-water mark. A client that does not read therefore
 * holds at most high water plus one reply of the server's memory, and the
 * kernel's buffers absorb the rest until its own sends block.
 */
#ifndef PERCORE_SESSION_H
#define PERCORE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "percore/defs.h"
#include "percore/frame.h"

PC_BEGIN_DECLS

struct pc_session;

/* Message ids from here up belong to percore (PC_MSG_STATS, ...). */
#define PC_MSG_RESERVED 0xffffff00u
/* A frame with this id asks for the server's statistics when the server
 * has stats_frames on: the reply carries the same id and a JSON object: the
 * server's statistics (server.h) plus rss_bytes, shards,
 * session_struct_bytes and shard, the shard serving that connection. */
#define PC_MSG_STATS 0xffffff01u

/* Why a session ended, as on_close reports it. */
enum pc_close_reason {
	PC_CLOSE_PEER = 0,    /* the client closed its side */
	PC_CLOSE_LOCAL,       /* pc_session_close() */
	PC_CLOSE_RESET,       /* connection reset or other socket error */
	PC_CLOSE_IDLE,        /* nothing received for the idle timeout */
	PC_CLOSE_MALFORMED,   /* bad version, flag or reserved field */
	PC_CLOSE_OVERSIZE,    /* a frame body over the maximum */
	PC_CLOSE_NOMEM,       /* no buffer or no memory for its state */
	PC_CLOSE_SHUTDOWN,    /* the server stopped, or the drain deadline passed */
	PC_CLOSE_FRAME_TIMEOUT, /* a frame still incomplete at the frame timeout */
	PC_CLOSE_REASONS,
	/* No end: the session moved to another shard (pc_session_move()),
	 * its application state with it. Not counted among the closes. */
	PC_CLOSE_MOVED = PC_CLOSE_REASONS + 1
};

/* "peer", "local", "reset", "idle", "malformed", "oversize", "nomem",
 * "shutdown", "frame_timeout"; "moved". */
PC_API const char *pc_close_reason_name(enum pc_close_reason why);

/* Handlers (the server's configuration names them). user is the server's
 * user pointer. They run on the session's shard.
 *
 * on_frame: one well-formed frame; f->body is valid until the handler
 * returns. Heartbeats and PC_MSG_STATS requests are answered by the
 * session layer and never reach it. */
typedef void (*pc_frame_fn)(struct pc_session *s, const struct pc_frame *f, void *user);
/* on_frames (instead of on_frame): the frames of one receive, up to
 * PC_SESSION_BURST at a time, in order, so that a handler pays its fixed
 * costs once per burst rather than once per frame. The frames of a call
 * lie one after another in memory, each header (f[i].body -
 * PC_FRAME_HEADER_LEN) as received: an echo answers them all with one
 * pc_session_send_frames(). Bodies are valid until the handler
 * returns. It returns how many it handled, from the first; the rest are
 * left unread as pc_session_unread_frame() leaves one (the session
 * pauses; once resumed they are offered again first). A handler that
 * pauses reading handles the frame in hand and returns its count. Limits
 * (the output high water, an early flush) are looked at between bursts:
 * a burst's replies may pass the high water by what its frames answer.
 * Heartbeats and PC_MSG_STATS requests end a burst and are answered by
 * the session layer, in their place in the stream. */
typedef size_t (*pc_frames_fn)(struct pc_session *s, const struct pc_frame *f, size_t n,
			       void *user);
#define PC_SESSION_BURST 32u /* the most frames one on_frames call gets */
/* on_data (raw sessions): bytes as they arrive; return how many were used
 * (the rest is offered again at once; once a call uses none, the rest
 * stays buffered and is offered again, in one piece, with what comes
 * next). data is valid until the handler returns: it may be the receive
 * buffer itself. */
typedef size_t (*pc_data_fn)(struct pc_session *s, const uint8_t *data, size_t len, void *user);
/* A session opened: called once, before its first frame or bytes. */
typedef void (*pc_open_fn)(struct pc_session *s, void *user);
/* A session closed, for the reason why: called once, the last handler
 * call for s. */
typedef void (*pc_close_fn)(struct pc_session *s, enum pc_close_reason why, void *user);
/* A session moved here from another shard (pc_session_move()): called
 * instead of on_open, with the state its old shard gave, before any of
 * its input. s is NULL when it could not be set up here (out of memory,
 * the shard's session limit): the connection was closed, and the
 * application frees what state points to. */
typedef void (*pc_moved_fn)(struct pc_session *s, const void *state, size_t len, void *user);

/* The session's id: unique across the server's shards for its lifetime
 * (the shard index sits in the top 16 bits, then a generation and a slot,
 * so an id is not reused until its slot has been recycled 16 million
 * times). Never 0. */
PC_API uint64_t pc_session_id(const struct pc_session *s);

/* The live session with this id, for the calling shard's own sessions:
 * a handler that kept only an id (a reply from another shard, a session
 * paused until something frees) finds its session again. NULL when the
 * session is gone or closing, lives on another shard, or off a server
 * shard. Valid until the current callback returns. */
PC_API struct pc_session *pc_session_find(uint64_t id);

/* The shard an id belongs to. */
static inline unsigned pc_session_id_shard(uint64_t id)
{
	return (unsigned)(id >> 48);
}

/* A pointer of the application's own, NULL until set. */
PC_API void *pc_session_data(const struct pc_session *s);
PC_API void pc_session_set_data(struct pc_session *s, void *data);

/* The client's address. Returns 0 and fills *ss and *len. */
PC_API int pc_session_peer(const struct pc_session *s, struct sockaddr_storage *ss, socklen_t *len);

/* The server's address the client reached (its listener's, as accepted).
 * Returns 0 and fills *ss and *len, or -errno. The session's shard. */
PC_API int pc_session_local(const struct pc_session *s, struct sockaddr_storage *ss, socklen_t *len);

/* The session's socket, to report it (Redis's CLIENT LIST fd=): reading,
 * writing or closing it behind the session breaks the session. */
PC_API int pc_session_fd(const struct pc_session *s);

/* Output bytes queued and not yet written to the socket. */
PC_API size_t pc_session_queued(const struct pc_session *s);

/* A session's buffers as they stand, to report them (Redis's CLIENT LIST
 * qbuf, omem...): input received and not yet taken by the application,
 * and the size of the ring holding it; output queued and not yet written
 * (pc_session_queued()), and the size of its ring. A ring's size is 0
 * while the session holds none (an idle session holds neither). */
struct pc_session_buffers {
	size_t in_used, in_size;
	size_t out_used, out_size;
};
/* Fills *b with s's buffers (above); on the session's own shard. */
PC_API void pc_session_buffers(const struct pc_session *s, struct pc_session_buffers *b);

/* Queue a frame: header (version 1, flags, msg_id, len) and body. The body
 * is copied, so it may be freed on return. Written at the end of this
 * turn. Returns 0; -EINVAL for a flag other than heartbeat and error;
 * -EMSGSIZE for a body over the hard cap (16 MiB); -ENOBUFS when the queue
 * would exceed the session's output bound (high water plus the largest
 * frame: a client that stopped reading; the caller may close it);
 * -EPIPE once the session is closing; -ENOMEM when no buffer is left. */
PC_API int pc_session_send_flags(struct pc_session *s, uint32_t msg_id, uint8_t flags,
				 const void *body, size_t len);

/* pc_session_send_flags() with flags 0. */
PC_API int pc_session_send(struct pc_session *s, uint32_t msg_id, const void *body, size_t len);

/* A frame whose body is the concatenation of iovcnt pieces (at most 16).
 * Returns as pc_session_send_flags(), or -EINVAL for a bad iovcnt. */
PC_API int pc_session_sendv(struct pc_session *s, uint32_t msg_id, uint8_t flags,
			    const struct iovec *iov, int iovcnt);

/* Queue bytes as they are: the output of a raw session, or frames the
 * caller encoded (one buffer fanned out to many sessions). Returns as
 * pc_session_send_flags(). */
PC_API int pc_session_write(struct pc_session *s, const void *data, size_t len);

/* Queue frames as they were received, header and body (an echo, or
 * frames passed on unchanged): frames of the on_frame or on_frames call in
 * progress, whose headers lie just before their bodies. Frames one after
 * another in memory go out as one write, each counted as a frame sent.
 * Returns as pc_session_send_flags(); after an error the frames before
 * the failed run stay queued. */
PC_API int pc_session_send_frames(struct pc_session *s, const struct pc_frame *f, size_t n);

/* Close gracefully: stop reading, write what is queued, then end the
 * connection (FIN) and wait briefly for the client to close its side (so
 * the last replies are not destroyed by a reset). on_close runs when the
 * session is gone. Calling it again does nothing. The session stays valid
 * until the current handler returns. */
PC_API void pc_session_close(struct pc_session *s);

/* Refuse what the client sent, as the session layer refuses a malformed
 * header: queue an error reply (flags PC_FRAME_ERROR, msg_id, body), then
 * close gracefully (pc_session_close) with why as on_close's reason. For
 * a frame whose header was fine but whose body the application finds
 * malformed, one pc_fb_<table>_read() refused say (PC_CLOSE_MALFORMED),
 * or too large for what it asks (PC_CLOSE_OVERSIZE). Counted as the
 * session layer counts its own refusals: malformed or oversize, and
 * error_replies once the reply has been written. Returns 0; -EINVAL for another
 * why (nothing done); -EPIPE when the session is closing already (nothing
 * done); or the errors of pc_session_send_flags() (the reply was not
 * queued, the session is closed all the same). */
PC_API int pc_session_refuse(struct pc_session *s, enum pc_close_reason why, uint32_t msg_id,
			     const void *body, size_t len);

/* Longest message pc_session_error() sends. */
#define PC_SESSION_ERROR_MAX 1024

/* percore's error reply for FlatBuffers protocols: an Error {code,
 * message} (schemas/error.fbs, percore/fb_error.h) under PC_MSG_ERROR,
 * with the error flag. refuse false: one request is refused and the
 * session goes on. refuse true: what the client sent is malformed (a body
 * pc_fb_<table>_read() refused): the reply goes out and the session is
 * closed and counted as pc_session_refuse(PC_CLOSE_MALFORMED) does.
 * code: a positive errno value; message may be NULL (left out). Returns
 * as pc_session_send_flags() or pc_session_refuse(); -EMSGSIZE for a
 * message over PC_SESSION_ERROR_MAX bytes (nothing done). */
PC_API int pc_session_error(struct pc_session *s, int32_t code, const char *message, bool refuse);

/* A session's application state may carry this many bytes to another
 * shard (pc_session_move()). */
#define PC_SESSION_MOVE_STATE_MAX 4096

/* Serve s on shard `to` of its server from now on, where its keys or its
 * peers live (a connection whose requests all go to another shard's data
 * costs that shard's messages and wake-ups on every request). s stops
 * reading at once. Once what is queued for it has been written (at the
 * end of this turn, or later for a client slow to read), and the bytes
 * the kernel already received for it have been collected, on_close(s,
 * PC_CLOSE_MOVED) runs here and the server's on_moved on `to` gets a new
 * session on the same connection with a copy of state[0..len): the
 * application's own state moves in it (a pointer to its connection
 * state, say). Input s received and did not consume is offered there
 * first, before anything newer, so nothing the client sent is lost or
 * reordered. Should the message to `to` fail, the session comes back on
 * this shard the same way. Call on s's shard, with no reply owed
 * (percore/reply.h) and s not paused. Returns 0, -EINVAL (`to` is s's
 * shard or none of the server's), -EOPNOTSUPP (the server has no
 * on_moved), -EBUSY (s is closing, paused, owes replies or is moving;
 * the server is draining), -EMSGSIZE (len over
 * PC_SESSION_MOVE_STATE_MAX), -EPERM (off s's shard), -ENOMEM. */
PC_API int pc_session_move(struct pc_session *s, unsigned to, const void *state, size_t len);

/* Stop reading s: nothing more is taken from its socket (the kernel's
 * buffers fill and TCP pushes back on the client) or from its input
 * buffer, until pc_session_resume_read(). It still writes, its idle
 * timeout still runs (a session held longer than that is closed as
 * idle), and it closes as usual. Called inside on_frame, the frame in
 * hand counts as handled. Calling it again does nothing. */
PC_API void pc_session_pause_read(struct pc_session *s);

/* Read s again: frames already buffered are handed to on_frame from a
 * task on this turn's end (never inside this call), then the socket is
 * read as before. Does nothing for a session not paused by
 * pc_session_pause_read(). */
PC_API void pc_session_resume_read(struct pc_session *s);

/* Inside on_frame only: this frame cannot be handled now. The session
 * pauses as pc_session_pause_read() does and, once resumed, offers the
 * same frame again first. Returns 0, or -EINVAL outside on_frame for s
 * (nothing done). */
PC_API int pc_session_unread_frame(struct pc_session *s);

/* True while s is paused by pc_session_pause_read(). */
PC_API bool pc_session_read_paused(const struct pc_session *s);

/* A raw server's on_data that keeps input it consumed but cannot act on
 * yet (a partial request copied aside, requests waiting their turn) says
 * here how many such bytes of s it holds now (each call replaces the
 * last count; 0 when none; counted up to 4 GiB). They count in the
 * shard's buffered_bytes and against its input budget (max_input_bytes)
 * as if still unread: over the budget s may stop being read, and when
 * every holder is stopped the oldest holders are closed (PC_CLOSE_NOMEM,
 * counted in input_shed), so many clients each holding part of a large
 * request cannot exhaust memory. The budget acts at the end of the turn,
 * never inside this call. Shard thread of s, until its on_close. */
PC_API void pc_session_hold_input(struct pc_session *s, size_t bytes);

/* Queue a frame on the session with this id, which may live on any shard
 * of the same server: directly when it is on the calling shard, else
 * through the mesh (the body is copied into the message). Delivery is
 * asynchronous: a session that closed meanwhile drops the frame and the
 * receiving shard counts it (send_to_gone). Call from a shard of the
 * server. A full mesh ring does not refuse it: the frame waits in this
 * shard's outbox, in order (percore/outbox.h). Returns 0; -ENOBUFS past
 * the outbox budget (the receiver is far behind: stop reading input
 * until the pressure ends); -ENOENT when the id is not a live session of
 * the calling shard; -EINVAL for an id of no shard; -EPERM off a server
 * shard; -ENOMEM; or the errors of pc_session_send_flags() (local
 * delivery). */
PC_API int pc_session_send_to(uint64_t id, uint32_t msg_id, uint8_t flags, const void *body,
			      size_t len);

PC_END_DECLS

#endif
