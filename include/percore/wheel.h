/* SPDX-License-Identifier: MIT */
/* percore: a hierarchical timing wheel.
 *
 * Each shard owns one wheel: its idle timeouts, heartbeats and retries. Time
 * is counted in ticks, a unit the owner chooses (the runtime uses one tick
 * per millisecond or so); the wheel never reads a clock itself, it only
 * learns the time from pc_wheel_advance().
 *
 * Four levels of 256 slots cover 2^32 ticks ahead of now; level l holds the
 * timers whose expiry differs from now first in bits 8l..8l+7 ("XOR
 * placement"), in the slot named by those bits. When time reaches the start
 * of a level-l slot its timers move down ("cascade") and eventually reach
 * level 0, whose slots are single ticks. Timers further away than 2^32 ticks
 * wait on a far list that is sorted again whenever now crosses a 2^32
 * boundary, so any 64-bit expiry works.
 *
 * Timers are intrusive: the caller embeds a struct pc_timer in its own
 * object, so scheduling never allocates and cancelling is an unlink. The
 * callback finds its object with offsetof (container-of).
 *
 * Single-threaded: a wheel and its timers belong to one shard; only that
 * shard's thread may call these functions.
 */
#ifndef PERCORE_WHEEL_H
#define PERCORE_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

#define PC_WHEEL_LEVELS    4
#define PC_WHEEL_SLOT_BITS 8
#define PC_WHEEL_SLOTS     (1u << PC_WHEEL_SLOT_BITS)
/* Ticks the levels cover ahead of now's block: 2^32. */
#define PC_WHEEL_RANGE_BITS (PC_WHEEL_LEVELS * PC_WHEEL_SLOT_BITS)

/* List indexes: the level slots, then the due list (expiry already reached
 * when scheduled) and the far list (beyond the top level). */
#define PC__WHEEL_NSLOTS (PC_WHEEL_LEVELS * PC_WHEEL_SLOTS)
#define PC__WHEEL_DUE    PC__WHEEL_NSLOTS
#define PC__WHEEL_FAR    (PC__WHEEL_NSLOTS + 1)
#define PC__WHEEL_LISTS  (PC__WHEEL_NSLOTS + 2)

struct pc_wheel;
struct pc_timer;

/* A timer's callback. It runs on the wheel's thread inside
 * pc_wheel_advance(), after the timer has been unlinked (so
 * pc_timer_active(t) is false). It may schedule, reschedule or cancel any
 * timer of this wheel, t included, and may free t's object. */
typedef void pc_timer_fn(struct pc_wheel *w, struct pc_timer *t);

/* Embed one in your object. Fields starting with _ belong to the wheel. */
struct pc_timer {
	struct pc_timer *_next;   /* next timer in the same list */
	struct pc_timer **_pprev; /* the pointer that points at this timer;
	                           * NULL while not scheduled */
	uint64_t _expire;         /* absolute tick */
	pc_timer_fn *fn;
	uint32_t _list;           /* which list: level slot, due or far */
};

/* The caller allocates it (about 8 KiB), on the shard's own NUMA node. */
struct pc_wheel {
	uint64_t _now;
	size_t _count;                        /* scheduled timers */
	/* bit s of _bits[l] set <=> level l slot s is non-empty; finding the
	 * next busy slot is then a few word scans instead of a walk over 256
	 * list heads. */
	uint64_t _bits[PC_WHEEL_LEVELS][PC_WHEEL_SLOTS / 64];
	struct pc_timer *_lists[PC__WHEEL_LISTS];
};

/* Start an empty wheel whose current time is now. Cannot fail. */
PC_API void pc_wheel_init(struct pc_wheel *w, uint64_t now);

/* Prepare a timer before its first use (not scheduled, callback fn). */
static inline void pc_timer_init(struct pc_timer *t, pc_timer_fn *fn)
{
	t->_next = NULL;
	t->_pprev = NULL;
	t->_expire = 0;
	t->fn = fn;
	t->_list = 0;
}

/* True while t is scheduled and has not fired. */
static inline bool pc_timer_active(const struct pc_timer *t)
{
	return t->_pprev != NULL;
}

/* The tick t was last scheduled for. */
static inline uint64_t pc_timer_expiry(const struct pc_timer *t)
{
	return t->_expire;
}

/* The wheel's current tick: the last value given to advance (inside a
 * callback, the tick being processed). */
static inline uint64_t pc_wheel_now(const struct pc_wheel *w)
{
	return w->_now;
}

/* How many timers are scheduled. */
static inline size_t pc_wheel_count(const struct pc_wheel *w)
{
	return w->_count;
}

/* Which list a timer expiring at `expire` belongs in, now being `now`. */
static inline uint32_t pc__wheel_list(uint64_t now, uint64_t expire)
{
	if (expire <= now)
		return PC__WHEEL_DUE;
	/* The highest bit in which expire and now differ names the level:
	 * every higher bit is shared, so the slot is reached exactly when
	 * now's digits catch up with expire's. */
	unsigned level = (unsigned)(63 - __builtin_clzll(expire ^ now)) / PC_WHEEL_SLOT_BITS;
	if (level >= PC_WHEEL_LEVELS)
		return PC__WHEEL_FAR;
	unsigned slot = (unsigned)(expire >> (level * PC_WHEEL_SLOT_BITS)) & (PC_WHEEL_SLOTS - 1);
	return level * PC_WHEEL_SLOTS + slot;
}

/* Link t at the head of list i (no checks: t is not scheduled). */
static inline void pc__wheel_link(struct pc_wheel *w, struct pc_timer *t, uint32_t i)
{
	struct pc_timer **head = &w->_lists[i];

	t->_next = *head;
	if (*head)
		(*head)->_pprev = &t->_next;
	*head = t;
	t->_pprev = head;
	t->_list = i;
	if (i < PC__WHEEL_NSLOTS)
		w->_bits[i / PC_WHEEL_SLOTS][(i % PC_WHEEL_SLOTS) / 64] |= 1ull << (i % 64);
	w->_count++;
}

/* Cancel t if it is scheduled. Returns true when it was (it will not fire),
 * false when it was not scheduled. O(1). Wheel thread only; also safe from
 * a callback, for any timer. */
static inline bool pc_wheel_cancel(struct pc_wheel *w, struct pc_timer *t)
{
	if (!t->_pprev)
		return false;
	*t->_pprev = t->_next;
	if (t->_next)
		t->_next->_pprev = t->_pprev;
	t->_pprev = NULL;
	w->_count--;
	/* The bit mirrors "the slot's list is non-empty". t may sit on a list
	 * advance() detached from its slot; then the slot is either empty
	 * (bit already clear) or refilled since (bit rightly set), and the
	 * test below is right in both cases. */
	uint32_t i = t->_list;
	if (i < PC__WHEEL_NSLOTS && !w->_lists[i])
		w->_bits[i / PC_WHEEL_SLOTS][(i % PC_WHEEL_SLOTS) / 64] &= ~(1ull << (i % 64));
	return true;
}

/* Schedule t to fire at tick `expire`, replacing any earlier schedule of t.
 * An expiry at or before now fires on the next pc_wheel_advance() (from a
 * callback: on the next call, never in the same one, so a callback that
 * keeps rescheduling itself into the past cannot loop forever). O(1), never
 * fails. Wheel thread only; also safe from a callback. */
static inline void pc_wheel_schedule(struct pc_wheel *w, struct pc_timer *t, uint64_t expire)
{
	pc_wheel_cancel(w, t);
	t->_expire = expire;
	pc__wheel_link(w, t, pc__wheel_list(w->_now, expire));
}

/* Move time forward to now and run the callback of every timer whose expiry
 * is reached: first those due before this call, then the rest in expiry
 * order, pc_wheel_now() telling each callback the tick being processed. A
 * timer a callback schedules for a later tick up to now fires in this same
 * call. now earlier than the wheel's time is taken as the wheel's time (time
 * never goes back). Returns how many callbacks ran. Wheel thread only; not
 * from a callback. */
PC_API size_t pc_wheel_advance(struct pc_wheel *w, uint64_t now);

/* The earliest tick at which advance has work to do: never later than the
 * earliest expiry (it may be earlier: a cascade of timers into lower levels
 * also counts). pc_wheel_now() when timers are due already; UINT64_MAX when
 * nothing is scheduled. A reactor sleeps until this tick. */
PC_API uint64_t pc_wheel_next(const struct pc_wheel *w);

/* Check every invariant: each timer on the list its expiry names relative
 * to now, list links consistent, occupancy bits matching the lists, the
 * count right. Returns 0, or -EINVAL on the first broken invariant and,
 * when err is not NULL, what broke in err (errlen bytes): the list and
 * timer, the value found, the one expected. For tests; O(timers + slots);
 * not from a callback. */
PC_API int pc_wheel_validate(const struct pc_wheel *w, char *err, size_t errlen);

PC_END_DECLS

#endif
