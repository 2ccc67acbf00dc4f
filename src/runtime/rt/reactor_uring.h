/* SPDX-License-Identifier: MIT */
/* percore rt: what the io_uring backend's files share: the ring, its
 * set-up and the receive path with its buffers and held completions
 * (reactor_ubuf.c), the sends (reactor_usend.c), and the request plumbing
 * (reactor_uring.c). */
#ifndef PERCORE_SRC_RT_REACTOR_URING_H
#define PERCORE_SRC_RT_REACTOR_URING_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt/reactor_impl.h"

#define UR_ENTRIES 256
/* Receive buffers of one reactor: a multishot receive takes one per
 * completion and each comes back when its callback returns (or at the
 * next wait, when replies lend from it), so the pool only needs to cover
 * the completions of one turn. The kernel takes them in ring order and
 * writes only what arrived, so the pool's cache footprint is its count
 * times the bytes of a completion; a buffer's size bounds a completion,
 * and a frame that crosses a buffer's end is copied into the session.
 * Buffers lie one cache line more than their size apart: at a stride of
 * 64 KiB every buffer's first bytes would share one set of a 512 KiB
 * 8-way cache (this AMD EPYC's L2), and a turn of small completions
 * would evict its own.
 * Server CPU per echo over the plain epoll server's (medians of 7
 * interleaved rounds), 64 x 16 KiB / 32 x 64 KiB / 32 x 64 KiB a line
 * apart: 64 B 1.09x / 1.26x / 1.05x (16 connections), 1.29x / 1.12x /
 * 0.99x (64); 4 KiB 1.28x / 1.06x / 1.08x, 1.31x / 1.18x / 1.03x. Fewer
 * buffers cost more with many connections (16 x 64 KiB: 1.23x at 512 B
 * and 256 connections); 64 x 16 KiB a line apart measured 1.18-1.21x. */
#define UR_BUFS 32
#define UR_BUF_SIZE 65536
#define UR_BUF_STRIDE (UR_BUF_SIZE + PC_CACHE_LINE)
#define UR_BGID 0
#define UR_GEN_MASK 0x1fffffffu
#define UR_KIND_SHIFT 61

/* The top three bits of a request's user_data. */
enum ur_kind { UR_POLL = 0, UR_RECV = 1, UR_CANCEL = 2, UR_ACCEPT = 3, UR_SEND = 4, UR_WAKE = 5 };

struct ur_send;

/* A receive completion kept back: its fd did not want input when it came,
 * or did not take all of it. */
struct ur_held {
	int fd;                /* -1: taken or dropped */
	uint32_t rgen;
	int32_t res;           /* bytes left (> 0), 0 end of stream, -errno */
	uint32_t off;          /* into the buffer */
	uint16_t bid;
	bool buf;              /* holds buffer bid */
};

struct ur_state {
	struct io_uring ring;
	/* A re-arm found no submission entry (the queue full and the kernel
	 * not taking more): retried before the next wait, so no fd, and not
	 * the wake-up eventfd, is left unwatched. */
	bool rearm;
	bool enabled;          /* bound to its thread, ring fd registered */
	bool completion;       /* multishot receive and provided buffers */
	bool accept;           /* multishot accept */
	bool defer_taskrun;
	bool taskrun_flag;     /* IORING_SQ_TASKRUN tells of waiting task work */
	bool msg_ring;         /* wakes other rings by IORING_OP_MSG_RING */
	/* Set once enabled, for other threads: a disabled ring refuses
	 * messages, so until then its wake-ups go through the eventfd. */
	_Atomic bool live;
	uint64_t wakes_sent;   /* such wake-ups queued for other rings */
	uint64_t wakes_in;     /* such wake-ups that ended a wait here */
	uint64_t quiet_polls;  /* polls answered without a system call */
	int cb_fd;             /* whose poll callback runs now, or -1 */
	uint32_t requests;     /* submitted and not finished */
	uint32_t bufs_out;     /* buffers taken by completions, not returned */
	uint32_t pass;         /* held-delivery passes */
	struct io_uring_buf_ring *br;
	uint8_t *bufs;
	struct ur_held *held;  /* FIFO, in completion order */
	/* Buffers an rfn kept (pc_reactor_recv_keep): back to the kernel when
	 * the next wait begins. At most every buffer. */
	uint16_t kept[UR_BUFS];
	unsigned nkept;
	unsigned nheld, held_cap;
	struct ur_send *sends_free, *sends_all; /* send objects (reactor_usend.c) */
	uint32_t sends;        /* in flight */
};

/* reactor_uring.c */
struct io_uring_sqe *ur_sqe(struct ur_state *st);
int ur_recv_sync(struct ur_state *st, int fd, struct rt_fd *f);

/* reactor_ubuf.c: fd's held bytes to fn, in order (pc_reactor_recv_take). */
int ur_recv_take(struct pc_reactor *r, int fd, struct rt_fd *f, pc_recv_fn fn, void *arg);

/* reactor_usend.c */
int ur_send(struct pc_reactor *r, int fd, struct rt_fd *f, const struct iovec *iov, int iovcnt,
	    pc_sent_fn fn, void *token);
/* A send's completion; returns 1 when its callback ran. */
int ur_send_done(struct pc_reactor *r, uint64_t tag, int res);
/* f is being deleted: cancel its send, wait for the kernel to let go of
 * the bytes, and run its callback with -ECANCELED. */
void ur_send_cancel(struct pc_reactor *r, int fd, struct rt_fd *f);
void ur_sends_free(struct ur_state *st);

/* reactor_ubuf.c */
int ur_setup(struct ur_state *st, unsigned flags);
int ur_enable(struct ur_state *st);
void ur_teardown(struct ur_state *st);
int ur_recv_done(struct pc_reactor *r, int fd, uint32_t gen, int res, unsigned flags);
int ur_held_offer(struct pc_reactor *r);
bool ur_held_ready(const struct pc_reactor *r);
void ur_held_drop(struct ur_state *st, int fd);
void ur_kept_return(struct ur_state *st);

#endif
