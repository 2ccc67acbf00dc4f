/* SPDX-License-Identifier: MIT */
/* percore net: sessions per client address, counted across every shard.
 *
 * The one table the shards of a server share. SO_REUSEPORT spreads one
 * client's connections over all shards (by the hash of the 4-tuple), so a
 * per-address limit is only exact if every shard counts against the same
 * figure. Asking a home shard through the mesh would make every accept wait
 * a round trip and need a pending state; accepts are rare next to reads,
 * so instead the table is split into 64 stripes, each a mutex and a small
 * open-addressing table on its own cache lines: two shards meet on a lock
 * only when two of their clients hash to the same stripe in the same
 * instant, and nothing on the data path touches it.
 *
 * Addresses are 16 bytes: IPv6 as is, IPv4 as v4-mapped IPv6. An entry
 * exists only while its count is above zero (deleted by backward shift, so
 * no tombstones), so the table's size follows the distinct clients
 * connected now, not every client ever seen.
 *
 * Any thread.
 */
#ifndef PERCORE_SRC_NET_ADDRTAB_H
#define PERCORE_SRC_NET_ADDRTAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NET_ADDR_LEN 16

struct net_addrtab;

/* Returns NULL when memory runs out. */
struct net_addrtab *net_addrtab_create(void);
void net_addrtab_destroy(struct net_addrtab *t);

/* The 16-byte key of an AF_INET or AF_INET6 address. Returns 0, or
 * -EAFNOSUPPORT. */
int net_addr_key(const struct sockaddr *sa, uint8_t key[NET_ADDR_LEN]);

/* Count one more session from addr unless it already has limit. Returns
 * 0, -EBUSY at the limit (nothing counted), -ENOMEM. */
int net_addrtab_acquire(struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN], uint32_t limit);

/* Count one session from addr fewer (it must have been acquired). */
void net_addrtab_release(struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN]);

/* Sessions counted for addr now. */
uint32_t net_addrtab_count(struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN]);

/* Distinct addresses counted now (sums the stripes). */
size_t net_addrtab_size(struct net_addrtab *t);

/* Bytes the table holds (for the server's memory figure). */
size_t net_addrtab_bytes(struct net_addrtab *t);

/* Check every stripe: each entry reachable from its home slot without
 * crossing an empty slot, counts above zero, sizes right. Returns 0, or
 * -EINVAL and, when err is not NULL, the stripe and slot that broke and
 * what was expected in err (errlen bytes). */
int net_addrtab_validate(struct net_addrtab *t, char *err, size_t errlen);

#endif
