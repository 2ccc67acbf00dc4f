/* SPDX-License-Identifier: MIT */
/* Key locks (keylock.h): an open-addressing table of the locked keys'
 * hashes, linear probing, deletion by shifting back the entries after
 * (no tombstones: the table is small and changes with every lock). */
#include "keylock.h"

#include <errno.h>
#include <stdlib.h>

#define FIRST_CAP 64u

struct lock_slot {
	uint64_t h;       /* 0: empty (a key hashing to 0 uses 1) */
	uint64_t tx;      /* the writer; 0 for readers */
	uint32_t refs;    /* takes not yet released */
};

struct kv_keylock {
	struct lock_slot *slots;
	size_t cap, used, writers;
};

static uint64_t norm(uint64_t h)
{
	return h ? h : 1;
}

struct kv_keylock *kv_keylock_new(void)
{
	struct kv_keylock *kl = calloc(1, sizeof(*kl));

	if (!kl)
		return NULL;
	kl->slots = calloc(FIRST_CAP, sizeof(*kl->slots));
	if (!kl->slots) {
		free(kl);
		return NULL;
	}
	kl->cap = FIRST_CAP;
	return kl;
}

void kv_keylock_free(struct kv_keylock *kl)
{
	if (kl)
		free(kl->slots);
	free(kl);
}

bool kv_keylock_empty(const struct kv_keylock *kl)
{
	return kl->used == 0;
}

bool kv_keylock_any_writer(const struct kv_keylock *kl)
{
	return kl->writers != 0;
}

static size_t home_of(const struct kv_keylock *kl, uint64_t h)
{
	return (size_t)(h ^ (h >> 29)) & (kl->cap - 1);
}

/* The slot holding h, or the empty one where it would go. */
static struct lock_slot *find(const struct kv_keylock *kl, uint64_t h)
{
	size_t i = home_of(kl, h);

	while (kl->slots[i].h && kl->slots[i].h != h)
		i = (i + 1) & (kl->cap - 1);
	return &kl->slots[i];
}

enum kv_keylock_state kv_keylock_state(const struct kv_keylock *kl, uint64_t h)
{
	const struct lock_slot *s;

	if (!kl->used)
		return KV_KEY_FREE;
	s = find(kl, norm(h));
	return !s->h ? KV_KEY_FREE : s->tx ? KV_KEY_EXCLUSIVE : KV_KEY_SHARED;
}

bool kv_keylock_can(const struct kv_keylock *kl, const uint64_t *h, size_t n, bool shared,
		    uint64_t tx)
{
	for (size_t i = 0; i < n && kl->used; i++) {
		const struct lock_slot *s = find(kl, norm(h[i]));

		if (s->h && (shared ? s->tx != 0 : s->tx != tx))
			return false;
	}
	return true;
}

/* Doubles the table. */
static int grow(struct kv_keylock *kl)
{
	struct lock_slot *old = kl->slots;
	size_t cap = kl->cap;

	kl->slots = calloc(cap * 2, sizeof(*kl->slots));
	if (!kl->slots) {
		kl->slots = old;
		return -ENOMEM;
	}
	kl->cap = cap * 2;
	for (size_t i = 0; i < cap; i++)
		if (old[i].h)
			*find(kl, old[i].h) = old[i];
	free(old);
	return 0;
}

int kv_keylock_take(struct kv_keylock *kl, const uint64_t *h, size_t n, bool shared, uint64_t tx)
{
	/* room for every key first, so that nothing is half taken */
	while ((kl->used + n) * 4 > kl->cap * 3)
		if (grow(kl))
			return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct lock_slot *s = find(kl, norm(h[i]));

		if (!s->h) {
			*s = (struct lock_slot){ .h = norm(h[i]), .tx = shared ? 0 : tx };
			kl->used++;
			kl->writers += !shared;
		}
		s->refs++;
	}
	return 0;
}

/* Empties slot i, shifting back the entries after it that probed past
 * it, so that every entry stays reachable from its home slot. */
static void erase_at(struct kv_keylock *kl, size_t i)
{
	size_t mask = kl->cap - 1, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!kl->slots[j].h)
			break;
		size_t home = home_of(kl, kl->slots[j].h);

		/* j's entry may move to i when its home is not in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			kl->slots[i] = kl->slots[j];
			i = j;
		}
	}
	kl->slots[i] = (struct lock_slot){ 0 };
}

void kv_keylock_release(struct kv_keylock *kl, const uint64_t *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct lock_slot *s = find(kl, norm(h[i]));

		if (!s->h || --s->refs)
			continue;
		kl->writers -= s->tx != 0;
		kl->used--;
		erase_at(kl, (size_t)(s - kl->slots));
	}
}
