/* SPDX-License-Identifier: MIT */
/* percore net: listening, accepting and connecting TCP sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net.h"
#include "percore/listener.h"

static int parse_v6(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
	char buf[INET6_ADDRSTRLEN];
	size_t n = strlen(host);

	if (host[0] == '[') {
		if (n < 3 || host[n - 1] != ']' || n - 2 >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, host + 1, n - 2);
		buf[n - 2] = '\0';
		host = buf;
	}
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
		return -EINVAL;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	*len = sizeof(*a);
	return 0;
}

int pc_sockaddr_parse(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	if (!host || !*host || !strcmp(host, "*"))
		host = "::";
	else if (!strcmp(host, "localhost"))
		host = "127.0.0.1";
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &a->sin_addr) == 1) {
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		*len = sizeof(*a);
		return 0;
	}
	return parse_v6(host, port, ss, len);
}

uint16_t pc_sockaddr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

int pc_sockaddr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	int n;

	if (len)
		buf[0] = '\0';
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
		n = snprintf(buf, len, "%s:%u", host, pc_sockaddr_port(sa));
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
		n = snprintf(buf, len, "[%s]:%u", host, pc_sockaddr_port(sa));
	} else {
		return -EAFNOSUPPORT;
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static int set_int(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) ? -errno : 0;
}

static int listen_options(int fd, int family, unsigned flags)
{
	int rc = set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);

	if (!rc && (flags & PC_LISTEN_REUSEPORT))
		rc = set_int(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	if (!rc && family == AF_INET6)
		rc = set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, (flags & PC_LISTEN_V6ONLY) ? 1 : 0);
	return rc;
}

/* Would a socket without SO_REUSEPORT get the address? A listening socket
 * there (whatever its options) makes the bind fail; SO_REUSEADDR lets
 * connections in TIME_WAIT pass, as they do for the real listener. A
 * wildcard port has no holder to find. Returns 0 or -errno. */
static int probe_free(const struct sockaddr *addr, socklen_t len, unsigned flags)
{
	int fd, rc;

	if (!pc_sockaddr_port(addr))
		return 0;
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = listen_options(fd, addr->sa_family, flags & ~(unsigned)PC_LISTEN_REUSEPORT);
	if (!rc && bind(fd, addr, len))
		rc = -errno;
	close(fd);
	return rc;
}

int pc_listen(const struct sockaddr *addr, socklen_t len, int backlog, unsigned flags)
{
	int fd, rc;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) || backlog < 0 ||
	    (flags & ~(unsigned)(PC_LISTEN_REUSEPORT | PC_LISTEN_V6ONLY | PC_LISTEN_FIRST)))
		return -EINVAL;
	if ((flags & PC_LISTEN_FIRST) && (rc = probe_free(addr, len, flags)))
		return rc;
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = listen_options(fd, addr->sa_family, flags);
	if (!rc && bind(fd, addr, len))
		rc = -errno;
	if (!rc && listen(fd, backlog ? backlog : PC_LISTEN_BACKLOG_DEFAULT))
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int pc_socket_local(int fd, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	return getsockname(fd, (struct sockaddr *)ss, len) ? -errno : 0;
}

int pc_accept(int lfd, struct sockaddr_storage *peer, socklen_t *len)
{
	socklen_t dummy = sizeof(*peer);
	int fd;

	if (peer && len)
		*len = sizeof(*peer);
	fd = accept4(lfd, (struct sockaddr *)peer, peer ? (len ? len : &dummy) : NULL,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* Failure here only costs latency (Nagle), never correctness. */
	set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	return fd;
}

/* The peer of an accepted socket. A client that reset the connection
 * before it was accepted has its address still (accept4() reports it):
 * SO_PEERNAME gives it where getpeername() refuses, but only into a buffer
 * no larger than the address. */
static int peer_name(int fd, struct sockaddr_storage *peer, socklen_t *len)
{
	*len = sizeof(*peer);
	if (getpeername(fd, (struct sockaddr *)peer, len) == 0)
		return 0;
	*len = sizeof(struct sockaddr_in6);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERNAME, peer, len) == 0)
		return 0;
	*len = sizeof(struct sockaddr_in);
	return getsockopt(fd, SOL_SOCKET, SO_PEERNAME, peer, len) ? -errno : 0;
}

int net_accepted(int fd, struct sockaddr_storage *peer, socklen_t *len)
{
	int rc = peer_name(fd, peer, len);

	if (!rc)
		set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	return rc;
}

int pc_connect_start(const struct sockaddr *addr, socklen_t len)
{
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	if (connect(fd, addr, len) && errno != EINPROGRESS) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int pc_connect_result(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

int pc_socket_reset_on_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	return setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) ? -errno : 0;
}
