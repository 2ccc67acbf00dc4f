/* SPDX-License-Identifier: MIT */
/* percore: TCP sockets for servers and load generators.
 *
 * A listener is a plain non-blocking socket: pc_server opens one per shard
 * on the same address with SO_REUSEPORT, so the kernel spreads incoming
 * connections over the shards with no shared accept queue (each socket has
 * its own). These helpers hold no state; any thread may call them.
 *
 * Addresses are numeric (no name lookups: a server's bind address and a
 * benchmark's target must not depend on a resolver): IPv4 dotted quads,
 * IPv6 with or without brackets ("::1", "[::1]"), "localhost" (127.0.0.1),
 * and "" or "*" for every address (IPv6 "::" accepting IPv4 too where the
 * kernel allows dual-stack, else 0.0.0.0).
 */
#ifndef PERCORE_LISTENER_H
#define PERCORE_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* Flags of pc_listen(). */
enum {
	/* SO_REUSEPORT: several sockets (one per shard) share the address. */
	PC_LISTEN_REUSEPORT = 1u << 0,
	/* IPv6 socket accepting IPv6 only (IPV6_V6ONLY). */
	PC_LISTEN_V6ONLY = 1u << 1,
	/* With PC_LISTEN_REUSEPORT: fail with -EADDRINUSE when a socket
	 * already listens on the address, even one that would let this one
	 * join it, so a new server never splits connections with an old one
	 * by accident. Checked by binding a probe socket without SO_REUSEPORT
	 * first; two servers starting in the same instant can both pass it
	 * (the window is the time between the probe's close and the bind). */
	PC_LISTEN_FIRST = 1u << 2,
};

/* Default listen backlog when 0 is given: the kernel caps it at
 * net.core.somaxconn anyway. */
#define PC_LISTEN_BACKLOG_DEFAULT 4096

/* Build a socket address from a numeric host (see above) and a port.
 * Returns 0 and fills *ss and *len, or -EINVAL for a host that is not a
 * numeric address. */
PC_API int pc_sockaddr_parse(const char *host, uint16_t port, struct sockaddr_storage *ss,
			     socklen_t *len);

/* The port of an AF_INET or AF_INET6 address (0 for other families). */
PC_API uint16_t pc_sockaddr_port(const struct sockaddr *sa);

/* Write "1.2.3.4:80" or "[::1]:80" into buf (always terminated when len >
 * 0). Returns 0, or -ENOSPC when truncated, -EAFNOSUPPORT for another
 * family. */
PC_API int pc_sockaddr_format(const struct sockaddr *sa, char *buf, size_t len);

/* A listening socket bound to addr: non-blocking, close-on-exec,
 * SO_REUSEADDR, plus the PC_LISTEN_* flags. backlog 0 means
 * PC_LISTEN_BACKLOG_DEFAULT. Returns the fd, or -errno (-EADDRINUSE, ...). */
PC_API int pc_listen(const struct sockaddr *addr, socklen_t len, int backlog, unsigned flags);

/* The address a socket is bound to (to learn the port the kernel chose for
 * port 0). Returns 0 or -errno. */
PC_API int pc_socket_local(int fd, struct sockaddr_storage *ss, socklen_t *len);

/* Accept one connection: non-blocking, close-on-exec, TCP_NODELAY (a
 * request/reply protocol must not wait for Nagle). peer and len may be
 * NULL. Returns the fd, or -errno: -EAGAIN when none is waiting, -EMFILE /
 * -ENFILE when out of descriptors, -ECONNABORTED when the client gave up
 * first (retry). */
PC_API int pc_accept(int lfd, struct sockaddr_storage *peer, socklen_t *len);

/* Start a non-blocking connect to addr, TCP_NODELAY set. Returns the fd
 * (connected or in progress: wait for writability, then read the result
 * with pc_connect_result()), or -errno. */
PC_API int pc_connect_start(const struct sockaddr *addr, socklen_t len);

/* The outcome of a connect once its socket is writable: 0 or -errno
 * (-ECONNREFUSED, ...). */
PC_API int pc_connect_result(int fd);

/* Make close(fd) reset the connection at once (SO_LINGER 0): no FIN, no
 * TIME_WAIT. For refusing a client and for tests of abrupt resets.
 * Returns 0 or -errno. */
PC_API int pc_socket_reset_on_close(int fd);

PC_END_DECLS

#endif
