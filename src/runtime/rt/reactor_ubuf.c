/* SPDX-License-Identifier: MIT */
/* percore rt: the io_uring backend's set-up and its completion receive:
 * the ring of provided buffers, the multishot receive's completions and
 * the completions held back for fds that did not want input (see
 * reactor_uring.c for the whole picture).
 *
 * Buffer ownership: a buffer is the kernel's while it sits in the ring;
 * a completion hands it to the reactor, which lends it to the fd's receive
 * callback for the length of the call and puts it back in the ring when
 * the call returns, unless bytes are left over (then it is held, with the
 * completion, until they are taken or the fd is deleted). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt/reactor_uring.h"

/* Linux 6.3's; this liburing's header may predate it. */
#ifndef IORING_FEAT_REG_REG_RING
#define IORING_FEAT_REG_REG_RING (1U << 13)
#endif

/* ---- set-up ---------------------------------------------------------------- */

/* One line per process naming what this kernel lacks, for the ring's
 * set-up and for each missing request kind (said: which line). */
static void say_missing(atomic_flag *said, const char *what, const char *effect)
{
	if (!atomic_flag_test_and_set(said))
		fprintf(stderr, "percore: io_uring without %s: %s\n", what, effect);
}

static atomic_flag said_setup = ATOMIC_FLAG_INIT, said_recv = ATOMIC_FLAG_INIT,
		   said_accept = ATOMIC_FLAG_INIT;

/* Multishot requests have no probe bits of their own: multishot receive
 * came in the release (6.0) that added IORING_OP_SEND_ZC, and multishot
 * accept in the one (5.19) that added IORING_OP_SOCKET; their bits stand
 * for them. */
static bool has_op(struct io_uring *ring, int op)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(ring);
	bool ok = p && io_uring_opcode_supported(p, op);

	io_uring_free_probe(p);
	return ok;
}

static uint8_t *buf_at(const struct ur_state *st, unsigned bid)
{
	return st->bufs + (size_t)bid * UR_BUF_STRIDE;
}

static void buf_put(struct ur_state *st, unsigned bid)
{
	io_uring_buf_ring_add(st->br, buf_at(st, bid), UR_BUF_SIZE, (unsigned short)bid,
			      io_uring_buf_ring_mask(UR_BUFS), 0);
	io_uring_buf_ring_advance(st->br, 1);
	st->bufs_out--;
}

/* The buffers are only reserved here: the kernel's first write into each
 * happens on the owner thread, so their pages come from its node. */
static int bufs_setup(struct ur_state *st)
{
	struct io_uring_buf_reg reg = { .ring_entries = UR_BUFS, .bgid = UR_BGID };
	void *br;
	int rc;

	if (posix_memalign(&br, 4096, UR_BUFS * sizeof(struct io_uring_buf)))
		return -ENOMEM;
	st->br = br;
	st->bufs = malloc((size_t)UR_BUFS * UR_BUF_STRIDE);
	if (!st->bufs)
		return -ENOMEM;
	reg.ring_addr = (uintptr_t)br;
	rc = io_uring_register_buf_ring(&st->ring, &reg, 0);
	if (rc)
		return rc;
	io_uring_buf_ring_init(st->br);
	st->bufs_out = UR_BUFS;
	for (unsigned bid = 0; bid < UR_BUFS; bid++)
		buf_put(st, bid);
	return 0;
}

static void bufs_free(struct ur_state *st)
{
	free(st->br);
	free(st->bufs);
	st->br = NULL;
	st->bufs = NULL;
}

int ur_setup(struct ur_state *st, unsigned flags)
{
	/* Each with TASKRUN_FLAG first (the kernel says in the shared flags
	 * when task work waits: ur_enter's idle poll needs no system call
	 * otherwise), then without it. */
	static const unsigned tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED |
			IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED,
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	unsigned i;
	int rc = -EINVAL;

	for (i = 0; i < sizeof(tries) / sizeof(tries[0]) && rc == -EINVAL; i++)
		rc = io_uring_queue_init(UR_ENTRIES, &st->ring, tries[i]);
	if (rc)
		return rc;
	st->defer_taskrun = i <= 2;
	st->taskrun_flag = tries[i - 1] & IORING_SETUP_TASKRUN_FLAG;
	if (i > 2)
		say_missing(&said_setup, i <= 4 ? "DEFER_TASKRUN" : "DEFER_TASKRUN or COOP_TASKRUN",
			    "completions run as task work");
	/* Wake-ups from ring to ring (rt_reactor_wake_from): the message,
	 * a success that posts nothing on the sender's side, and a kernel
	 * from 6.3 on (told by a feature of that release), where a message
	 * to a ring that defers its task work is posted by the woken task
	 * itself (a wake-up lost this way was reported on 6.1). */
	st->msg_ring = (st->ring.features & IORING_FEAT_CQE_SKIP) &&
		       (st->ring.features & IORING_FEAT_REG_REG_RING) &&
		       has_op(&st->ring, IORING_OP_MSG_RING);
	if (flags & PC_REACTOR_NO_COMPLETION)
		return 0;
	st->accept = has_op(&st->ring, IORING_OP_SOCKET);
	if (!st->accept)
		say_missing(&said_accept, "multishot accept", "listeners use readiness polling");
	if (!has_op(&st->ring, IORING_OP_SEND_ZC)) {
		say_missing(&said_recv, "multishot receive", "sessions use readiness polling");
		return 0;
	}
	rc = bufs_setup(st);
	if (rc == -ENOMEM) {
		io_uring_queue_exit(&st->ring);
		bufs_free(st);
		return rc;
	}
	if (rc) {
		say_missing(&said_recv, "provided buffer rings", "sessions use readiness polling");
		bufs_free(st);
		return 0;
	}
	st->completion = true;
	return 0;
}

/* On the owner thread, at its first wait: a SINGLE_ISSUER ring belongs to
 * the thread that enables it, and a registered ring fd to the thread that
 * registers it. */
int ur_enable(struct ur_state *st)
{
	/* This liburing declares io_uring_enable_rings() without exporting it. */
	if (st->defer_taskrun && syscall(__NR_io_uring_register, st->ring.ring_fd,
					 IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	st->enabled = true;
	atomic_store_explicit(&st->live, true, memory_order_release);
	if (io_uring_register_ring_fd(&st->ring) != 1)
		say_missing(&said_setup, "registered ring fds", "each wait looks up the ring's file");
	return 0;
}

void ur_teardown(struct ur_state *st)
{
	/* Cancels every request; the buffer ring goes with the ring. */
	io_uring_queue_exit(&st->ring);
	bufs_free(st);
	free(st->held);
	ur_sends_free(st);
}

/* ---- held completions ------------------------------------------------------ */

static int held_push(struct ur_state *st, const struct ur_held *h)
{
	if (st->nheld == st->held_cap) {
		unsigned cap = st->held_cap ? st->held_cap * 2 : 16;
		struct ur_held *n = realloc(st->held, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->held = n;
		st->held_cap = cap;
	}
	st->held[st->nheld++] = *h;
	return 0;
}

void ur_held_drop(struct ur_state *st, int fd)
{
	for (unsigned i = 0; i < st->nheld; i++) {
		struct ur_held *h = &st->held[i];

		if (h->fd != fd)
			continue;
		if (h->buf)
			buf_put(st, h->bid);
		h->fd = -1;
	}
}

/* Drop the entries taken or dropped, keeping the others' order. */
static void held_compact(struct ur_state *st)
{
	unsigned n = 0;

	for (unsigned i = 0; i < st->nheld; i++)
		if (st->held[i].fd >= 0)
			st->held[n++] = st->held[i];
	st->nheld = n;
}

/* f's registration, when h still belongs to it. */
static struct rt_fd *held_owner(struct pc_reactor *r, int fd, uint32_t rgen)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	return f && f->recv && f->rgen == rgen ? f : NULL;
}

/* Hand h to its fd's callback. Returns true when bytes are left over: h
 * then describes them and keeps its buffer. */
static bool deliver(struct pc_reactor *r, struct ur_held *h)
{
	struct ur_state *st = r->backend_state;
	struct rt_fd *f = held_owner(r, h->fd, h->rgen);
	const uint8_t *p = h->buf ? buf_at(st, h->bid) + h->off : NULL;
	size_t took;
	bool keep;

	r->recv_keep = false;
	took = f->rfn(r, h->fd, p, h->res, f->arg);
	keep = r->recv_keep;
	r->recv_keep = false;

	/* The callback may have deleted the fd, or added others (moving the
	 * fd table): look it up again. */
	f = held_owner(r, h->fd, h->rgen);
	if (f && h->res > 0 && took < (size_t)h->res) {
		h->off += (uint32_t)took;
		h->res -= (int32_t)took;
		return true;
	}
	if (h->buf && keep)
		st->kept[st->nkept++] = h->bid; /* each buffer is out once */
	else if (h->buf)
		buf_put(st, h->bid);
	return false;
}

void ur_kept_return(struct ur_state *st)
{
	for (unsigned i = 0; i < st->nkept; i++)
		buf_put(st, st->kept[i]);
	st->nkept = 0;
}

/* Keep h for later; without memory for that, the fd is told it failed. */
static void hold(struct pc_reactor *r, struct rt_fd *f, struct ur_held *h)
{
	struct ur_state *st = r->backend_state;

	if (held_push(st, h) == 0) {
		f->held++;
		return;
	}
	if (h->buf)
		buf_put(st, h->bid);
	f->recv_done = 1;
	*h = (struct ur_held){ .fd = h->fd, .rgen = h->rgen, .res = -ENOMEM };
	deliver(r, h);
}

int ur_held_offer(struct pc_reactor *r)
{
	struct ur_state *st = r->backend_state;
	int ran = 0;

	st->pass++;
	/* Callbacks add no entries (only completions do) but may drop some. */
	for (unsigned i = 0; i < st->nheld; i++) {
		struct ur_held h = st->held[i];
		struct rt_fd *f;

		if (h.fd < 0)
			continue;
		f = held_owner(r, h.fd, h.rgen);
		if (!f || !(f->events & PC_EV_IN) || f->pass == st->pass)
			continue; /* not wanted now, or an earlier entry was kept */
		st->held[i].fd = -1;
		f->held--;
		ran++;
		if (deliver(r, &h)) {
			f = held_owner(r, h.fd, h.rgen);
			st->held[i] = h;
			f->held++;
			f->pass = st->pass;
		} else if ((f = held_owner(r, h.fd, h.rgen)) && ur_recv_sync(st, h.fd, f)) {
			st->rearm = true;
		}
	}
	held_compact(st);
	return ran;
}

int ur_recv_take(struct pc_reactor *r, int fd, struct rt_fd *f, pc_recv_fn fn, void *arg)
{
	struct ur_state *st = r->backend_state;
	int n = 0;

	uint32_t rgen = f->rgen;

	/* fn may add fds (moving the table): f is not used after it. */
	for (unsigned i = 0; i < st->nheld; i++) {
		struct ur_held h = st->held[i];

		if (h.fd != fd || h.rgen != rgen)
			continue;
		st->held[i].fd = -1;
		f = rt_reactor_slot(r, fd);
		if (f)
			f->held--;
		fn(r, fd, h.buf ? buf_at(st, h.bid) + h.off : NULL, h.res, arg);
		if (h.buf)
			buf_put(st, h.bid);
		n++;
	}
	held_compact(st);
	return n;
}

bool ur_held_ready(const struct pc_reactor *r)
{
	const struct ur_state *st = r->backend_state;

	for (unsigned i = 0; i < st->nheld; i++) {
		const struct ur_held *h = &st->held[i];
		const struct rt_fd *f = &r->fds[h->fd];

		if (f->events & PC_EV_IN)
			return true;
	}
	return false;
}

/* ---- receive completions --------------------------------------------------- */

int ur_recv_done(struct pc_reactor *r, int fd, uint32_t gen, int res, unsigned flags)
{
	struct ur_state *st = r->backend_state;
	struct ur_held h = { .fd = fd, .res = res, .buf = flags & IORING_CQE_F_BUFFER,
			     .bid = (uint16_t)(flags >> IORING_CQE_BUFFER_SHIFT) };
	struct rt_fd *f = rt_reactor_slot(r, fd);
	bool kept;

	if (h.buf)
		st->bufs_out++;
	if (!f || !f->recv || (f->rgen & UR_GEN_MASK) != gen) {
		if (h.buf)
			buf_put(st, h.bid); /* a deleted fd's last bytes */
		return 0;
	}
	h.rgen = f->rgen;
	if (!(flags & IORING_CQE_F_MORE))
		f->recv_armed = f->recv_cancel = 0;
	if (res == -ECANCELED || res == -ENOBUFS) {
		/* Cancelled for a drop of interest, or the pool ran dry this
		 * turn: the bytes wait in the socket; arm again if wanted. */
		if (ur_recv_sync(st, fd, f))
			st->rearm = true;
		return 0;
	}
	if (res <= 0)
		f->recv_done = 1; /* end of stream or error: offered once */
	if (f->held || !(f->events & PC_EV_IN)) {
		hold(r, f, &h);
		return 0;
	}
	kept = deliver(r, &h);
	f = held_owner(r, fd, h.rgen);
	if (kept)
		hold(r, f, &h);
	else if (f && ur_recv_sync(st, fd, f))
		st->rearm = true;
	return 1;
}
