/* SPDX-License-Identifier: MIT */
/* percore net: the per-address session counts (see addrtab.h). */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "net/addrtab.h"
#include "percore/clock.h"
#include "percore/defs.h"
#include "sys/errmsg.h"

#define STRIPE_BITS 6
#define STRIPES (1u << STRIPE_BITS)
#define MIN_CAP 16u

struct entry {
	uint8_t addr[NET_ADDR_LEN];
	uint32_t count;         /* 0: empty slot */
};

/* Each stripe on its own padded lines: shards locking different stripes
 * never share a line. */
struct stripe {
	PC_CACHE_ALIGNED pthread_mutex_t lock;
	struct entry *slots;    /* cap slots, linear probing */
	uint32_t cap, used;
};

struct net_addrtab {
	uint64_t seed[2];       /* keyed hash: clients cannot aim at one slot */
	struct stripe stripes[STRIPES];
};

struct net_addrtab *net_addrtab_create(void)
{
	struct net_addrtab *t;

	if (posix_memalign((void **)&t, PC_CACHE_PAD, sizeof(*t)))
		return NULL;
	memset(t, 0, sizeof(*t));
	if (getrandom(t->seed, sizeof(t->seed), GRND_NONBLOCK) != sizeof(t->seed)) {
		/* No entropy yet (early boot): the clock still varies per run. */
		t->seed[0] = pc_now_ns() * 0x9e3779b97f4a7c15ull;
		t->seed[1] = (uint64_t)(uintptr_t)t ^ 0xc2b2ae3d27d4eb4full;
	}
	for (unsigned i = 0; i < STRIPES; i++)
		pthread_mutex_init(&t->stripes[i].lock, NULL);
	return t;
}

void net_addrtab_destroy(struct net_addrtab *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < STRIPES; i++) {
		pthread_mutex_destroy(&t->stripes[i].lock);
		free(t->stripes[i].slots);
	}
	free(t);
}

int net_addr_key(const struct sockaddr *sa, uint8_t key[NET_ADDR_LEN])
{
	if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, NET_ADDR_LEN);
		return 0;
	}
	if (sa->sa_family == AF_INET) {
		memset(key, 0, 10);
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	unsigned __int128 p = (unsigned __int128)a * b;

	return (uint64_t)p ^ (uint64_t)(p >> 64);
}

static uint64_t addr_hash(const struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN])
{
	uint64_t lo, hi;

	memcpy(&lo, addr, 8);
	memcpy(&hi, addr + 8, 8);
	return mix(lo ^ t->seed[0], hi ^ t->seed[1] ^ 0x9e3779b97f4a7c15ull);
}

/* The slot holding addr, or the empty slot where it would go. */
static uint32_t probe(const struct stripe *s, const uint8_t addr[NET_ADDR_LEN], uint64_t h)
{
	uint32_t mask = s->cap - 1, i = (uint32_t)h & mask;

	while (s->slots[i].count && memcmp(s->slots[i].addr, addr, NET_ADDR_LEN))
		i = (i + 1) & mask;
	return i;
}

static int stripe_grow(struct net_addrtab *t, struct stripe *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : MIN_CAP;
	struct entry *old = s->slots;
	uint32_t old_cap = s->cap;

	s->slots = calloc(cap, sizeof(*s->slots));
	if (!s->slots) {
		s->slots = old;
		return -ENOMEM;
	}
	s->cap = cap;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].count)
			s->slots[probe(s, old[i].addr, addr_hash(t, old[i].addr))] = old[i];
	free(old);
	return 0;
}

static struct stripe *stripe_of(struct net_addrtab *t, uint64_t h)
{
	return &t->stripes[h >> (64 - STRIPE_BITS)];
}

int net_addrtab_acquire(struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN], uint32_t limit)
{
	uint64_t h = addr_hash(t, addr);
	struct stripe *s = stripe_of(t, h);
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	/* Keep the load at most one half: short probes, and always an empty
	 * slot to end them. */
	if ((s->used + 1) * 2 > s->cap)
		rc = stripe_grow(t, s);
	if (!rc) {
		struct entry *e = &s->slots[probe(s, addr, h)];

		if (e->count >= limit) {
			rc = -EBUSY;
		} else {
			if (!e->count) {
				memcpy(e->addr, addr, NET_ADDR_LEN);
				s->used++;
			}
			e->count++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Remove slot i and shift later entries of its probe run back, so every
 * entry stays reachable from its home slot without tombstones. */
static void remove_at(struct net_addrtab *t, struct stripe *s, uint32_t i)
{
	uint32_t mask = s->cap - 1, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!s->slots[j].count)
			break;
		uint32_t home = (uint32_t)addr_hash(t, s->slots[j].addr) & mask;
		/* Entry j may move to the hole i when its home does not lie in
		 * the cyclic range (i, j]. */
		bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			s->slots[i] = s->slots[j];
			i = j;
		}
	}
	s->slots[i].count = 0;
	s->used--;
}

void net_addrtab_release(struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN])
{
	uint64_t h = addr_hash(t, addr);
	struct stripe *s = stripe_of(t, h);

	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		uint32_t i = probe(s, addr, h);

		if (s->slots[i].count && --s->slots[i].count == 0)
			remove_at(t, s, i);
	}
	pthread_mutex_unlock(&s->lock);
}

uint32_t net_addrtab_count(struct net_addrtab *t, const uint8_t addr[NET_ADDR_LEN])
{
	uint64_t h = addr_hash(t, addr);
	struct stripe *s = stripe_of(t, h);
	uint32_t n = 0;

	pthread_mutex_lock(&s->lock);
	if (s->cap)
		n = s->slots[probe(s, addr, h)].count;
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t net_addrtab_size(struct net_addrtab *t)
{
	size_t n = 0;

	for (unsigned i = 0; i < STRIPES; i++) {
		pthread_mutex_lock(&t->stripes[i].lock);
		n += t->stripes[i].used;
		pthread_mutex_unlock(&t->stripes[i].lock);
	}
	return n;
}

size_t net_addrtab_bytes(struct net_addrtab *t)
{
	size_t n = sizeof(*t);

	for (unsigned i = 0; i < STRIPES; i++) {
		pthread_mutex_lock(&t->stripes[i].lock);
		n += (size_t)t->stripes[i].cap * sizeof(struct entry);
		pthread_mutex_unlock(&t->stripes[i].lock);
	}
	return n;
}

static int stripe_validate(struct net_addrtab *t, struct stripe *s, unsigned index, char *err,
			   size_t errlen)
{
	uint32_t used = 0, mask = s->cap - 1;

	for (uint32_t i = 0; i < s->cap; i++) {
		const struct entry *e = &s->slots[i];
		uint64_t h;

		if (!e->count)
			continue;
		used++;
		h = addr_hash(t, e->addr);
		if ((h >> (64 - STRIPE_BITS)) != index)
			return sys_errmsg(err, errlen, -EINVAL,
					 "stripe %u slot %u: address hashes to stripe %u", index, i,
					 (unsigned)(h >> (64 - STRIPE_BITS)));
		/* No empty slot between the home slot and i. */
		for (uint32_t j = (uint32_t)h & mask; j != i; j = (j + 1) & mask)
			if (!s->slots[j].count)
				return sys_errmsg(err, errlen, -EINVAL,
						 "stripe %u slot %u: empty slot %u between it and "
						 "its home slot %u", index, i, j, (uint32_t)h & mask);
	}
	if (used != s->used || (s->cap && used * 2 > s->cap))
		return sys_errmsg(err, errlen, -EINVAL,
				 "stripe %u: %u entries, count says %u, expected at most %u of %u "
				 "slots", index, used, s->used, s->cap / 2, s->cap);
	return 0;
}

int net_addrtab_validate(struct net_addrtab *t, char *err, size_t errlen)
{
	int rc = 0;

	for (unsigned i = 0; i < STRIPES && !rc; i++) {
		pthread_mutex_lock(&t->stripes[i].lock);
		rc = stripe_validate(t, &t->stripes[i], i, err, errlen);
		pthread_mutex_unlock(&t->stripes[i].lock);
	}
	return rc;
}
