/* SPDX-License-Identifier: MIT */
/* SipHash-1-3 (one compression round per word, three to finish), written
 * from the SipHash paper's description. See keyhash.h. */
#include "keyhash.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

/* Written once before the first hash (pthread_once orders it before every
 * reader that went through kv_keyhash_init), read-only afterwards. */
static uint64_t k0, k1;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc;

static uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

void kv_keyhash_set_key(const uint8_t key[16])
{
	k0 = load_le64(key);
	k1 = load_le64(key + 8);
}

static void store_le64(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

void kv_keyhash_get_key(uint8_t key[16])
{
	store_le64(key, k0);
	store_le64(key + 8, k1);
}

static void draw_key(void)
{
	uint8_t key[16];
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		init_rc = -EIO;
		return;
	}
	kv_keyhash_set_key(key);
}

int kv_keyhash_init(void)
{
	pthread_once(&once, draw_key);
	return init_rc;
}

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

struct sip {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = ROTL(s->v1, 13) ^ s->v0;
	s->v0 = ROTL(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = ROTL(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = ROTL(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = ROTL(s->v1, 17) ^ s->v2;
	s->v2 = ROTL(s->v2, 32);
}

static inline void sip_absorb(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	s->v0 ^= m;
}

uint64_t kv_keyhash(const void *data, size_t n)
{
	const unsigned char *p = data;
	struct sip s = {
		k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
		k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull,
	};
	size_t whole = n & ~(size_t)7;

	for (size_t i = 0; i < whole; i += 8)
		sip_absorb(&s, load_le64(p + i));
	/* the last word: the leftover bytes, the length in the top byte */
	uint64_t last = (uint64_t)n << 56;
	for (size_t i = whole; i < n; i++)
		last |= (uint64_t)p[i] << (8 * (i - whole));
	sip_absorb(&s, last);
	s.v2 ^= 0xff;
	sip_round(&s);
	sip_round(&s);
	sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

static __thread struct kv_hash_memo *memo;

struct kv_hash_memo *kv_keyhash_memo(struct kv_hash_memo *m)
{
	struct kv_hash_memo *before = memo;

	if (m)
		m->at = 0;
	memo = m;
	return before;
}

/* The memo's bytes lie in one buffer (a read, a batch): an address
 * outside their span, such as a member's own node, is told at once. The
 * members are asked for in input order, each perhaps twice (found, then
 * inserted): the search starts at the last one found. */
uint64_t kv_member_hash(const void *s, size_t n)
{
	struct kv_hash_memo *m = memo;
	const char *p = s;

	if (!m || !m->n || p < m->p[0] || p > m->p[m->n - 1])
		return kv_keyhash(s, n);
	for (size_t i = m->at; i < m->n && m->p[i] <= p; i++)
		if (m->p[i] == p && m->len[i] == n) {
			m->at = i;
			return m->hash[i];
		}
	return kv_keyhash(s, n);
}
