/* SPDX-License-Identifier: MIT */
/* percore net: a session's output: queueing frames and bytes, replies
 * that stay in the input ring until written (struct net_ref), and the
 * flush: one send per session and turn, right after the session's
 * read (session_io.c) or, for output queued otherwise, at the end of the
 * turn.
 *
 * Shard thread only, like everything of a session. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/net.h"

/* Bytes worth a reference that adds an iovec of its own: below this,
 * copying into the output ring is cheaper than one more iovec for the
 * kernel to walk (and than keeping the reference: a 64-byte echo costs
 * fewer instructions copied). A reference that continues the last one
 * adds none and is taken at any size. */
#define NET_REF_MIN 1024
/* References per session and turn: keeps one flush within one sendmsg
 * (IOV_MAX is 1024; each reference adds at most three iovecs). */
#define NET_REF_MAX 256
#define NET_OUT_IOV (3 * NET_REF_MAX + 2)

/* ---- buffers ------------------------------------------------------------ */

void net_mem_update(struct net_shard *sh)
{
	__atomic_store_n(&sh->stats.buffer_bytes, sh->pool.busy_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->stats.pool_bytes, sh->pool.idle_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->stats.buffers_mapped, sh->pool.maps, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->stats.buffer_maps, net_arena_chunks(&sh->pool.arena),
			 __ATOMIC_RELAXED);
}

struct pc_ringbuf *net_session_buf_get(struct net_shard *sh, size_t bytes)
{
	struct pc_ringbuf *rb = net_buf_get(&sh->pool, bytes);

	net_mem_update(sh);
	return rb;
}

void net_session_buf_release(struct net_shard *sh, struct pc_ringbuf **rb)
{
	if (*rb && !pc_ringbuf_used(*rb)) {
		net_buf_put(&sh->pool, *rb);
		*rb = NULL;
		net_mem_update(sh);
	}
}

/* ---- the output as a sequence of pieces ------------------------------------ */

/* Add bytes [a, b) of the output ring's readable region (t, nt iovecs). */
static int add_range(struct iovec *out, int k, const struct iovec *t, int nt, size_t a, size_t b)
{
	size_t len0 = nt ? t[0].iov_len : 0;

	if (a < b && a < len0) {
		size_t end = b < len0 ? b : len0;
		out[k++] = (struct iovec){ (char *)t[0].iov_base + a, end - a };
	}
	if (a < b && b > len0 && nt == 2) {
		size_t start = a > len0 ? a - len0 : 0;
		out[k++] = (struct iovec){ (char *)t[1].iov_base + start, b - len0 - start };
	}
	return k;
}

/* Everything queued, in order: owned bytes of the output ring with the
 * references at the places they were queued. Returns the iovec count. */
static int out_pieces(const struct pc_session *s, struct iovec *out)
{
	const struct net_shard *sh = s->sh;
	struct iovec t[2] = { { 0 } };
	int nt = s->tx ? pc_ringbuf_read_iov(s->tx, t) : 0, k = 0;
	size_t pos = 0;

	for (uint32_t i = s->ref_head; i; i = sh->refs[i - 1].next) {
		const struct net_ref *r = &sh->refs[i - 1];

		k = add_range(out, k, t, nt, pos, r->at);
		out[k++] = (struct iovec){ (void *)r->p, r->len };
		pos = r->at;
	}
	return add_range(out, k, t, nt, pos, s->tx ? pc_ringbuf_used(s->tx) : 0);
}

static void refs_forget(struct pc_session *s)
{
	s->ref_head = s->ref_tail = s->ref_bytes = 0;
}

/* Drop the first `skip` bytes of the output and copy the rest, references
 * included, into an output ring of its own, so nothing points into the
 * input ring any more. Returns 0 or -ENOMEM. */
static int materialize(struct pc_session *s, size_t skip)
{
	struct net_shard *sh = s->sh;
	struct iovec iov[NET_OUT_IOV];
	size_t left = net_session_queued(s) - skip;
	int k = out_pieces(s, iov);
	struct pc_ringbuf *n = NULL;

	if (left) {
		n = net_session_buf_get(sh, left > sh->cfg->tx_buffer ? left : sh->cfg->tx_buffer);
		if (!n)
			return -ENOMEM;
	}
	for (int i = 0; i < k; i++) {
		size_t len = iov[i].iov_len, off = skip < len ? skip : len;

		skip -= off;
		if (len > off)
			pc_ringbuf_write(n, (char *)iov[i].iov_base + off, len - off);
	}
	if (s->tx)
		net_buf_put(&sh->pool, s->tx);
	s->tx = n;
	refs_forget(s);
	net_mem_update(sh);
	return 0;
}

int net_session_materialize(struct pc_session *s)
{
	return s->ref_head ? materialize(s, 0) : 0;
}

/* ---- queueing ------------------------------------------------------------ */

void net_session_mark_dirty(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	if (s->flags & NS_DIRTY)
		return;
	s->flags |= NS_DIRTY;
	s->dirty_next = sh->dirty;
	sh->dirty = s->slot + 1;
	if (!sh->flush_queued && !pc_reactor_defer_end(sh->r, (pc_task_fn)net_shard_flush, sh))
		sh->flush_queued = true;
}

/* Whether these bytes lie in the frame the session's own handler is
 * looking at (in its input ring): they stay put until the flush. */
static bool lent(const struct net_shard *sh, const uint8_t *p, size_t len)
{
	return len && p >= sh->ref_lo && p + len <= sh->ref_hi;
}

/* An echoed header: when the first piece repeats the lent bytes just
 * before the second, itself lent, it is taken from there instead, so the
 * two leave as one range of the input ring (an echo of a whole frame is
 * the frame's own bytes, and consecutive echoes one range). */
static void lend_header(const struct net_shard *sh, struct iovec *v)
{
	const uint8_t *b = v[1].iov_base;
	size_t h = v[0].iov_len;

	if (!h || h >= NET_REF_MIN || !lent(sh, b, v[1].iov_len) || (size_t)(b - sh->ref_lo) < h)
		return;
	/* The frame header's size inlined: the usual case costs no call. */
	if (h == PC_FRAME_HEADER_LEN ? !memcmp(b - h, v[0].iov_base, PC_FRAME_HEADER_LEN)
				     : !memcmp(b - h, v[0].iov_base, h))
		v[0].iov_base = (void *)(b - h);
}

/* Where a reference would continue the output's last one (nothing owned
 * after it); NULL when the output does not end with a reference. */
static const uint8_t *ref_end(const struct pc_session *s)
{
	const struct net_ref *t = s->ref_tail ? &s->sh->refs[s->ref_tail - 1] : NULL;

	return t && t->at == (s->tx ? pc_ringbuf_used(s->tx) : 0) ? t->p + t->len : NULL;
}

/* Room in the shard's list for n more references. */
static int refs_reserve(struct net_shard *sh, uint32_t n)
{
	uint32_t cap = sh->refs_cap ? sh->refs_cap : 256;
	struct net_ref *r;

	if (sh->nrefs + n <= sh->refs_cap)
		return 0;
	while (cap < sh->nrefs + n)
		cap *= 2;
	r = realloc(sh->refs, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	sh->refs = r;
	sh->refs_cap = cap;
	return 0;
}

static void add_ref(struct pc_session *s, const struct iovec *v)
{
	struct net_shard *sh = s->sh;
	uint32_t at = s->tx ? (uint32_t)pc_ringbuf_used(s->tx) : 0;
	struct net_ref *t = s->ref_tail ? &sh->refs[s->ref_tail - 1] : NULL;

	s->ref_bytes += (uint32_t)v->iov_len;
	/* Right after the last one with nothing owned between: one range. */
	if (t && t->at == at && t->p + t->len == (const uint8_t *)v->iov_base) {
		t->len += (uint32_t)v->iov_len;
		return;
	}
	sh->refs[sh->nrefs] = (struct net_ref){ .p = v->iov_base, .len = (uint32_t)v->iov_len, .at = at };
	if (t)
		t->next = sh->nrefs + 1;
	else
		s->ref_head = sh->nrefs + 1;
	s->ref_tail = sh->nrefs + 1;
	sh->refs[s->ref_head - 1].count++;
	sh->nrefs++;
}

/* Room in the output ring for `owned` more bytes. */
static int tx_room(struct pc_session *s, size_t owned)
{
	struct net_shard *sh = s->sh;

	if (!owned)
		return 0; /* references only: no ring needed */
	if (!s->tx) {
		s->tx = net_session_buf_get(sh, owned > sh->cfg->tx_buffer ? owned : sh->cfg->tx_buffer);
		return s->tx ? 0 : -ENOMEM;
	}
	if (pc_ringbuf_space(s->tx) >= owned)
		return 0;
	struct pc_ringbuf *n = net_buf_grow(&sh->pool, s->tx, pc_ringbuf_used(s->tx) + owned);
	net_mem_update(sh);
	if (!n)
		return -ENOMEM;
	s->tx = n; /* byte offsets from the head, so references' places, hold */
	return 0;
}

/* Which pieces stay where they are (refer[i]); returns the bytes the
 * others take in the output ring. A piece is judged with the one after
 * it when the two are contiguous (an echoed header and its body, once
 * lend_header has moved the header); a short run stays only where it
 * continues the last reference, else it joins the owned bytes around it.
 * The references are counted before any is added, so one flush stays
 * within NET_OUT_IOV. */
static size_t choose_refs(struct pc_session *s, struct iovec *v, int n, bool *refer)
{
	struct net_shard *sh = s->sh;
	size_t owned = 0;

	if (refs_reserve(sh, (uint32_t)n)) {
		for (int i = 0; i < n; i++) {
			refer[i] = false;
			owned += v[i].iov_len;
		}
		return owned;
	}
	if (n > 1)
		lend_header(sh, v);
	uint32_t count = s->ref_head ? sh->refs[s->ref_head - 1].count : 0;
	const uint8_t *end = ref_end(s);

	for (int i = 0; i < n; i++) {
		const uint8_t *p = v[i].iov_base;
		size_t len = v[i].iov_len, run = len;

		if (i + 1 < n && p + len == (const uint8_t *)v[i + 1].iov_base)
			run += v[i + 1].iov_len;
		refer[i] = count < NET_REF_MAX && lent(sh, p, len) && (run >= NET_REF_MIN || p == end);
		if (refer[i]) {
			count++;
			end = p + len;
		} else if (len) {
			owned += len;
			end = NULL;
		}
	}
	return owned;
}

int net_session_queue(struct pc_session *s, const struct iovec *iov, int iovcnt, size_t len)
{
	struct net_shard *sh = s->sh;
	struct iovec v[17];
	bool refer[17];
	size_t owned;
	int rc;

	if ((s->flags & (NS_CLOSING | NS_FIN | NS_DEAD)) ||
	    ((s->flags & NS_EOF) && !net_reply_owed(s)))
		return -EPIPE;
	if (net_session_queued(s) + len > sh->tx_max) {
		NET_STAT_ADD(sh, send_refused, 1);
		return -ENOBUFS;
	}
	if (iovcnt < 0 || iovcnt > 17)
		return -EINVAL;
	/* Nothing to refer to, or too little to be worth it and nothing to
	 * continue: copied, without weighing each piece (a small echo). */
	bool copy = sh->ref_owner != s || (len < NET_REF_MIN && !ref_end(s));
	if (!copy)
		memcpy(v, iov, (size_t)iovcnt * sizeof(*v));
	/* All or nothing: every allocation happens before the first byte. */
	owned = copy ? len : choose_refs(s, v, iovcnt, refer);
	rc = tx_room(s, owned);
	if (rc)
		return rc;
	for (int i = 0; i < iovcnt; i++) {
		if (!copy && refer[i])
			add_ref(s, &v[i]);
		else if (iov[i].iov_len)
			pc_ringbuf_write(s->tx, copy ? iov[i].iov_base : v[i].iov_base, iov[i].iov_len);
	}
	NET_STAT_ADD(sh, queued_bytes, len);
	net_session_mark_dirty(s);
	return 0;
}

/* The small reply of an echo or a request's answer, copied: a frame's
 * header is encoded where it goes, and none of net_session_queue's
 * pieces, references and room-making is paid for (half the instructions
 * of a 64-byte echo went there). */
uint8_t *net_session_tail(struct pc_session *s, size_t len)
{
	const struct net_shard *sh = s->sh;
	size_t room;
	uint8_t *p;

	if ((s->flags & (NS_CLOSING | NS_FIN | NS_DEAD | NS_EOF)) || !s->tx ||
	    net_session_queued(s) + len > sh->tx_max ||
	    (sh->ref_owner == s && (len >= NET_REF_MIN || ref_end(s))))
		return NULL;
	p = pc_ringbuf_write_span(s->tx, &room);
	return room >= len ? p : NULL;
}

void net_session_tail_commit(struct pc_session *s, size_t len)
{
	pc_ringbuf_commit(s->tx, len);
	NET_STAT_ADD(s->sh, queued_bytes, len);
	net_session_mark_dirty(s);
}

/* ---- writing ------------------------------------------------------------- */

/* One send of everything queued. MSG_NOSIGNAL: a client gone is an
 * error, not SIGPIPE. Whatever is left afterwards no longer refers to the
 * input ring. */
static void write_out(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	struct iovec iov[NET_OUT_IOV];
	struct msghdr m = { .msg_iov = iov };
	size_t total = net_session_queued(s);
	ssize_t n;

	m.msg_iovlen = (size_t)out_pieces(s, iov);
	if (!m.msg_iovlen)
		return;
	/* One piece (a copied reply, or references that are adjacent): send,
	 * which spares the kernel the message header and iovec it would copy
	 * in and check. */
	n = m.msg_iovlen == 1 ? send(s->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
			      : sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		net_session_abort(s, PC_CLOSE_RESET);
		return;
	}
	n = n < 0 ? 0 : n;
	NET_STAT_ADD(sh, bytes_out, n);
	NET_STAT_SUB(sh, queued_bytes, n);
	if ((size_t)n == total) {
		if (s->tx)
			pc_ringbuf_consume(s->tx, pc_ringbuf_used(s->tx));
		refs_forget(s);
		s->flags &= (uint16_t)~NS_WBLOCKED;
		if (s->flags & NS_REPLY_OWED) {
			/* The refusal's reply was the last thing queued. */
			s->flags &= (uint16_t)~NS_REPLY_OWED;
			NET_STAT_ADD(sh, error_replies, 1);
		}
		return;
	}
	/* Short: the socket buffer is full; wait for OUT. */
	s->flags |= NS_WBLOCKED;
	if (!s->ref_head)
		pc_ringbuf_consume(s->tx, (size_t)n);
	else if (materialize(s, (size_t)n))
		net_session_abort(s, PC_CLOSE_NOMEM);
}

void net_session_flush(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	if (s->tx || s->ref_head)
		write_out(s);
	if (s->flags & NS_DEAD)
		return;
	net_session_buf_release(sh, &s->tx);
	/* Kept for the references just written: empty, it goes back now, or
	 * an idle session would hold it until its next read. */
	if (!s->ref_head)
		net_session_buf_release(sh, &s->rx);
	if ((s->flags & NS_PAUSED) && net_session_queued(s) <= sh->cfg->low_water) {
		s->flags &= (uint16_t)~NS_PAUSED;
		NET_STAT_SUB(sh, paused, 1);
		/* Frames may be waiting in the input ring with no more bytes
		 * coming to announce them: decode them now. */
		net_session_input(s);
	}
	net_session_settle(s);
	/* a move waiting for this session's output to be written */
	if (PC_UNLIKELY(sh->moves) && !(s->flags & NS_DEAD) && !net_session_queued(s))
		net_move_written(s);
}

void net_shard_flush(struct net_shard *sh)
{
	struct pc_session *s;

	sh->flush_queued = false;
	/* Pop one at a time: a session freed meanwhile unlinks itself from
	 * this same list, and one that queues more goes back on it. */
	while ((s = net_dirty_at(sh, sh->dirty))) {
		sh->dirty = s->dirty_next;
		s->flags &= (uint16_t)~NS_DIRTY;
		s->busy++;
		net_session_flush(s);
		net_session_unwind(s);
	}
	/* Every session's references were written or copied: none left. */
	sh->nrefs = 0;
}
