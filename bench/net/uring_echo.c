/* SPDX-License-Identifier: MIT */
/* The plain io_uring echo server.
 *
 * One ring, set up with SINGLE_ISSUER | DEFER_TASKRUN and owned by the
 * serving thread; one multishot accept on the listener; one multishot
 * receive per connection, selecting buffers from a ring of provided
 * buffers; each buffer received is sent back as it is, from that buffer,
 * and returns to the ring when its send has completed. A connection keeps
 * one send in flight (a later one could overtake an earlier one that the
 * kernel had to retry): the buffers received meanwhile wait in a FIFO
 * chained through the buffer ids, and the next send gathers them all
 * (sendmsg, up to 32 buffers). Everything queued in a turn goes to the kernel
 * in the next io_uring_enter, which also waits. The load generator's
 * framed messages are echoed as bytes, unparsed, as the epoll peer does. */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "epoll_echo.h"
#include "uring_echo.h"

#define UE_ENTRIES 1024
#define UE_BUFS 1024
#define UE_BUF_SIZE 8192
#define UE_NONE 0xffff
#define UE_IOV 32

enum { UE_ACCEPT, UE_RECV, UE_SEND, UE_STOP };

struct ue_conn {
	bool open, recv_armed, sending, eof;
	uint16_t head, tail;       /* buffers to send, chained by ue->next */
	uint32_t off;              /* sent of the head buffer */
	struct iovec iov[UE_IOV];  /* the send in flight */
	struct msghdr msg;
};

struct uring_echo {
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	uint8_t *bufs;
	uint32_t len[UE_BUFS];     /* bytes received into each buffer */
	uint16_t next[UE_BUFS];    /* the FIFO link of a buffer to send */
	struct ue_conn *conns;     /* indexed by fd */
	unsigned nconns;
	int lfd, stopfd, cpu, err;
	uint64_t stopval;
	pthread_t thread;
	pthread_mutex_t lock;      /* start-up handshake */
	pthread_cond_t cond;
	bool ready;
	bool ring_up;
};

static uint64_t ue_tag(int kind, int fd)
{
	return (uint64_t)kind << 32 | (uint32_t)fd;
}

static struct io_uring_sqe *ue_sqe(struct uring_echo *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

	if (!sqe) {
		io_uring_submit(&s->ring);
		sqe = io_uring_get_sqe(&s->ring);
	}
	return sqe;
}

static void buf_put(struct uring_echo *s, unsigned bid)
{
	io_uring_buf_ring_add(s->br, s->bufs + (size_t)bid * UE_BUF_SIZE, UE_BUF_SIZE,
			      (unsigned short)bid, io_uring_buf_ring_mask(UE_BUFS), 0);
	io_uring_buf_ring_advance(s->br, 1);
}

static void arm_accept(struct uring_echo *s)
{
	struct io_uring_sqe *sqe = ue_sqe(s);

	if (!sqe)
		return;
	io_uring_prep_multishot_accept(sqe, s->lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ue_tag(UE_ACCEPT, s->lfd));
}

static void arm_recv(struct uring_echo *s, int fd)
{
	struct io_uring_sqe *sqe = ue_sqe(s);

	if (!sqe)
		return;
	io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 0;
	io_uring_sqe_set_data64(sqe, ue_tag(UE_RECV, fd));
	s->conns[fd].recv_armed = true;
}

/* Send everything queued (up to UE_IOV buffers) in one sendmsg. */
static void send_queued(struct uring_echo *s, int fd)
{
	struct ue_conn *c = &s->conns[fd];
	struct io_uring_sqe *sqe = ue_sqe(s);
	unsigned n = 0;

	if (!sqe)
		return;
	for (unsigned bid = c->head; bid != UE_NONE && n < UE_IOV; bid = s->next[bid], n++) {
		uint32_t off = n ? 0 : c->off;

		c->iov[n].iov_base = s->bufs + (size_t)bid * UE_BUF_SIZE + off;
		c->iov[n].iov_len = s->len[bid] - off;
	}
	c->msg = (struct msghdr){ .msg_iov = c->iov, .msg_iovlen = n };
	io_uring_prep_sendmsg(sqe, fd, &c->msg, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, ue_tag(UE_SEND, fd));
	c->sending = true;
}

/* Close once nothing of the connection is in flight. */
static void conn_settle(struct uring_echo *s, int fd)
{
	struct ue_conn *c = &s->conns[fd];

	if (!c->eof || c->recv_armed || c->sending)
		return;
	while (c->head != UE_NONE) {
		unsigned bid = c->head;
		c->head = s->next[bid];
		buf_put(s, bid);
	}
	close(fd);
	c->open = false;
}

static void on_accept(struct uring_echo *s, int res, unsigned flags)
{
	int one = 1;

	if (!(flags & IORING_CQE_F_MORE))
		arm_accept(s);
	if (res < 0)
		return;
	if ((unsigned)res >= s->nconns) {
		unsigned n = s->nconns ? s->nconns : 1024;
		struct ue_conn *g;

		while (n <= (unsigned)res)
			n *= 2;
		g = realloc(s->conns, n * sizeof(*g));
		if (!g) {
			close(res);
			return;
		}
		memset(g + s->nconns, 0, (n - s->nconns) * sizeof(*g));
		s->conns = g;
		s->nconns = n;
	}
	setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s->conns[res] = (struct ue_conn){ .open = true, .head = UE_NONE, .tail = UE_NONE };
	arm_recv(s, res);
}

static void on_recv(struct uring_echo *s, int fd, int res, unsigned flags)
{
	struct ue_conn *c = &s->conns[fd];

	if (!(flags & IORING_CQE_F_MORE))
		c->recv_armed = false;
	if (res > 0 && (flags & IORING_CQE_F_BUFFER)) {
		unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;

		s->len[bid] = (uint32_t)res;
		s->next[bid] = UE_NONE;
		if (c->head == UE_NONE)
			c->head = (uint16_t)bid;
		else
			s->next[c->tail] = (uint16_t)bid;
		c->tail = (uint16_t)bid;
		if (!c->sending)
			send_queued(s, fd);
	} else if (res != -ENOBUFS) {
		c->eof = true; /* end of stream or error */
	}
	if (!c->recv_armed && !c->eof)
		arm_recv(s, fd);
	conn_settle(s, fd);
}

static void on_send(struct uring_echo *s, int fd, int res)
{
	struct ue_conn *c = &s->conns[fd];
	uint32_t left = res > 0 ? (uint32_t)res : 0;

	c->sending = false;
	if (res <= 0)
		c->eof = true;
	/* Give back every buffer sent whole; a short send leaves an offset. */
	while (left && c->head != UE_NONE) {
		unsigned bid = c->head;
		uint32_t rest = s->len[bid] - c->off;

		if (left < rest) {
			c->off += left;
			break;
		}
		left -= rest;
		c->off = 0;
		c->head = s->next[bid];
		buf_put(s, bid);
	}
	if (c->head == UE_NONE)
		c->tail = UE_NONE;
	else if (!c->eof)
		send_queued(s, fd);
	conn_settle(s, fd);
}

static int ring_setup(struct uring_echo *s)
{
	struct io_uring_buf_reg reg = { .ring_entries = UE_BUFS, .bgid = 0 };
	void *br;
	int rc;

	rc = io_uring_queue_init(UE_ENTRIES, &s->ring,
				 IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	if (rc)
		return rc;
	s->ring_up = true;
	if (posix_memalign(&br, 4096, UE_BUFS * sizeof(struct io_uring_buf)))
		return -ENOMEM;
	s->br = br;
	s->bufs = malloc((size_t)UE_BUFS * UE_BUF_SIZE);
	if (!s->bufs)
		return -ENOMEM;
	reg.ring_addr = (uintptr_t)br;
	rc = io_uring_register_buf_ring(&s->ring, &reg, 0);
	if (rc)
		return rc;
	io_uring_buf_ring_init(s->br);
	for (unsigned bid = 0; bid < UE_BUFS; bid++)
		buf_put(s, bid);
	io_uring_register_ring_fd(&s->ring);
	arm_accept(s);
	struct io_uring_sqe *sqe = ue_sqe(s);
	io_uring_prep_read(sqe, s->stopfd, &s->stopval, sizeof(s->stopval), 0);
	io_uring_sqe_set_data64(sqe, ue_tag(UE_STOP, s->stopfd));
	return 0;
}

static void serve_loop(struct uring_echo *s)
{
	struct io_uring_cqe *cqe;

	for (;;) {
		unsigned head, seen = 0;

		io_uring_submit_and_wait(&s->ring, 1);
		io_uring_for_each_cqe(&s->ring, head, cqe) {
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			int fd = (int)(uint32_t)tag, kind = (int)(tag >> 32);

			seen++;
			if (kind == UE_STOP) {
				io_uring_cq_advance(&s->ring, seen);
				return;
			}
			if (kind == UE_ACCEPT)
				on_accept(s, cqe->res, cqe->flags);
			else if (kind == UE_RECV)
				on_recv(s, fd, cqe->res, cqe->flags);
			else
				on_send(s, fd, cqe->res);
		}
		io_uring_cq_advance(&s->ring, seen);
	}
}

static void *serve(void *arg)
{
	struct uring_echo *s = arg;
	int rc;

	if (s->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(s->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	/* The ring is this thread's: SINGLE_ISSUER binds it to its creator. */
	rc = ring_setup(s);
	pthread_mutex_lock(&s->lock);
	s->err = rc;
	s->ready = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (!rc)
		serve_loop(s);
	return NULL;
}

static void free_all(struct uring_echo *s)
{
	for (unsigned fd = 0; fd < s->nconns; fd++)
		if (s->conns[fd].open)
			close((int)fd);
	if (s->ring_up)
		io_uring_queue_exit(&s->ring);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stopfd >= 0)
		close(s->stopfd);
	free(s->conns);
	free(s->br);
	free(s->bufs);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

int uring_echo_start(struct uring_echo **out, uint16_t *port, int cpu)
{
	struct uring_echo *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->cpu = cpu;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->lfd = echo_listen_loopback(port);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	err = s->lfd < 0 ? s->lfd : s->stopfd < 0 ? -errno : 0;
	if (!err)
		err = -pthread_create(&s->thread, NULL, serve, s);
	if (err) {
		free_all(s);
		return err;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->ready)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->err) {
		err = s->err;
		pthread_join(s->thread, NULL);
		free_all(s);
		return err;
	}
	*out = s;
	return 0;
}

void uring_echo_stop(struct uring_echo *s)
{
	uint64_t one = 1;

	if (write(s->stopfd, &one, sizeof(one)) != sizeof(one))
		return; /* cannot happen on a fresh eventfd; leak rather than hang */
	pthread_join(s->thread, NULL);
	free_all(s);
}
