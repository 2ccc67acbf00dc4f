/* SPDX-License-Identifier: MIT */
/* percore net: sessions on the reactor's completion receive (io_uring
 * multishot receive into the reactor's provided buffers).
 *
 * The reactor lends a buffer of received bytes for the length of one call;
 * net_session_feed() uses them where they lie and copies into the
 * session's input ring only what is left (an incomplete frame, input a
 * pause or a hold left); the ring goes back to the pool once empty, as
 * after a read: an idle session holds no buffer. Everything else (interest,
 * output, closing) is the readiness path's: the reactor turns PC_EV_IN
 * interest into a running receive and its removal into a cancellation. */
#include <errno.h>

#include "net/net.h"

static size_t session_recv(struct pc_reactor *r, int fd, const void *p, ssize_t n, void *arg)
{
	struct pc_session *s = arg;
	size_t took;

	(void)r;
	(void)fd;
	s->busy++;
	if (s->flags & NS_FIN) {
		/* After our FIN: drop input until the client's EOF. */
		took = n > 0 ? (size_t)n : 0;
		if (n <= 0)
			net_session_abort(s, (enum pc_close_reason)s->why);
	} else {
		took = net_session_feed(s, p, n);
	}
	if (!(s->flags & NS_DEAD))
		net_session_settle(s);
	net_session_unwind(s);
	return took;
}

int net_session_watch(struct pc_session *s)
{
	struct pc_reactor *r = s->sh->r;
	int rc = pc_reactor_add_recv(r, s->fd, PC_EV_IN, net_session_io, session_recv, s);

	if (rc == 0)
		s->flags |= NS_RECV;
	else if (rc == -EOPNOTSUPP)
		rc = pc_reactor_add(r, s->fd, PC_EV_IN, net_session_io, s);
	return rc;
}
