/* SPDX-License-Identifier: MIT */
/* percore: hierarchical timing wheel (expiry, cascading, validation).
 * Scheduling and cancelling are inline in include/percore/wheel.h. */
#include <errno.h>
#include <string.h>

#include "percore/wheel.h"
#include "sys/errmsg.h"

#define SLOT_MASK   (PC_WHEEL_SLOTS - 1)
#define WORDS       (PC_WHEEL_SLOTS / 64)
#define BLOCK_MASK  ((1ull << PC_WHEEL_RANGE_BITS) - 1)

void pc_wheel_init(struct pc_wheel *w, uint64_t now)
{
	memset(w, 0, sizeof(*w));
	w->_now = now;
}

static unsigned digit(uint64_t tick, unsigned level)
{
	return (unsigned)(tick >> (level * PC_WHEEL_SLOT_BITS)) & SLOT_MASK;
}

/* First set bit at index >= from in a level's occupancy bits, or -1. */
static int next_busy(const uint64_t bits[WORDS], unsigned from)
{
	unsigned i = from / 64;

	if (i >= WORDS)
		return -1;
	uint64_t x = bits[i] & (~0ull << (from % 64));
	while (!x) {
		if (++i == WORDS)
			return -1;
		x = bits[i];
	}
	return (int)(i * 64 + (unsigned)__builtin_ctzll(x));
}

/* The first tick after now at which a slot starts that holds timers. A
 * level-l slot's timers share every digit above l with now, so the slots
 * still ahead in this rotation are those above now's digit, and any level's
 * slot comes before every slot of the levels above it. */
static uint64_t next_event(const struct pc_wheel *w)
{
	uint64_t now = w->_now;

	for (unsigned l = 0; l < PC_WHEEL_LEVELS; l++) {
		int s = next_busy(w->_bits[l], digit(now, l) + 1);
		if (s < 0)
			continue;
		unsigned shift = l * PC_WHEEL_SLOT_BITS;
		uint64_t above = (now >> shift >> PC_WHEEL_SLOT_BITS) << PC_WHEEL_SLOT_BITS;
		return (above | (uint64_t)s) << shift;
	}
	/* Far timers differ from now above bit 32: nothing can happen to them
	 * before now's block ends. When now is in the last block no expiry
	 * can differ there, so the list is empty. */
	if (w->_lists[PC__WHEEL_FAR] && (now >> PC_WHEEL_RANGE_BITS) != (UINT64_MAX >> PC_WHEEL_RANGE_BITS))
		return ((now >> PC_WHEEL_RANGE_BITS) + 1) << PC_WHEEL_RANGE_BITS;
	return UINT64_MAX;
}

uint64_t pc_wheel_next(const struct pc_wheel *w)
{
	if (w->_lists[PC__WHEEL_DUE])
		return w->_now;
	return next_event(w);
}

/* Take list i off its slot so its timers can be walked while callbacks
 * change the wheel: the detached head lives in the caller's frame and the
 * first timer points back at it, so cancel() still unlinks correctly. */
static struct pc_timer *detach(struct pc_wheel *w, uint32_t i)
{
	struct pc_timer *t = w->_lists[i];

	w->_lists[i] = NULL;
	if (i < PC__WHEEL_NSLOTS)
		w->_bits[i / PC_WHEEL_SLOTS][(i % PC_WHEEL_SLOTS) / 64] &= ~(1ull << (i % 64));
	return t;
}

/* Unlink the first timer of a detached list. */
static struct pc_timer *pop(struct pc_wheel *w, struct pc_timer **head)
{
	struct pc_timer *t = *head;

	*head = t->_next;
	if (t->_next)
		t->_next->_pprev = head;
	t->_pprev = NULL;
	w->_count--;
	return t;
}

/* Re-place the timers of list i relative to the new now. A timer expiring
 * exactly now goes to now's level-0 slot, which the caller fires next. */
static void cascade(struct pc_wheel *w, uint32_t i)
{
	struct pc_timer *head = detach(w, i);

	if (!head)
		return;
	head->_pprev = &head;
	while (head) {
		struct pc_timer *t = pop(w, &head);
		uint32_t to = t->_expire == w->_now ? (uint32_t)(w->_now & SLOT_MASK)
						    : pc__wheel_list(w->_now, t->_expire);
		pc__wheel_link(w, t, to);
	}
}

/* Run every timer of list i. Each is unlinked before its callback, so the
 * callback sees it idle and may reschedule it; timers the callback cancels
 * leave the detached list through their back pointers. */
static size_t fire(struct pc_wheel *w, uint32_t i)
{
	struct pc_timer *head = detach(w, i);
	size_t n = 0;

	if (!head)
		return 0;
	head->_pprev = &head;
	while (head) {
		struct pc_timer *t = pop(w, &head);
		t->fn(w, t);
		n++;
	}
	return n;
}

/* Process tick t, the start of at least one busy slot: move down every
 * timer whose slot starts here, then fire level 0's slot for t. */
static size_t run_tick(struct pc_wheel *w, uint64_t t)
{
	bool new_block = (t & BLOCK_MASK) == 0;

	w->_now = t;
	if (new_block)
		cascade(w, PC__WHEEL_FAR);
	/* By XOR placement a level-l slot equal to now's digit can only hold
	 * timers when its start is now, so a non-empty one is due a cascade. */
	for (unsigned l = PC_WHEEL_LEVELS - 1; l >= 1; l--)
		cascade(w, l * PC_WHEEL_SLOTS + digit(t, l));
	return fire(w, (uint32_t)(t & SLOT_MASK));
}

size_t pc_wheel_advance(struct pc_wheel *w, uint64_t now)
{
	/* Timers scheduled at or before the time they were scheduled run
	 * first, at the old now; ones they schedule into the past wait for the
	 * next call. */
	size_t n = fire(w, PC__WHEEL_DUE);

	while (w->_now < now) {
		uint64_t t = next_event(w);
		if (t > now) {
			/* No slot starts before now, so every timer keeps its
			 * place: its digits above its level still match. */
			w->_now = now;
			break;
		}
		n += run_tick(w, t);
	}
	return n;
}

/* The list one timer sits on is consistent with its expiry and now. */
static bool placed_right(const struct pc_wheel *w, const struct pc_timer *t, uint32_t i)
{
	if (t->_list != i)
		return false;
	if (i == PC__WHEEL_DUE)
		return t->_expire <= w->_now;
	return t->_expire > w->_now && pc__wheel_list(w->_now, t->_expire) == i;
}

static int validate_list(const struct pc_wheel *w, uint32_t i, size_t *count, char *err,
			 size_t errlen)
{
	struct pc_timer *const *link = &w->_lists[i];
	size_t k = 0;

	for (const struct pc_timer *t = *link; t; t = t->_next, k++) {
		if (t->_pprev != link)
			return sys_errmsg(err, errlen, -EINVAL,
					 "list %u, timer %zu (%p): back link %p, expected %p", i, k,
					 (const void *)t, (const void *)t->_pprev,
					 (const void *)link);
		if (!placed_right(w, t, i))
			return sys_errmsg(err, errlen, -EINVAL,
					 "list %u, timer %zu: on list %u expiring at %llu, now %llu; "
					 "expected list %u", i, k, t->_list,
					 (unsigned long long)t->_expire, (unsigned long long)w->_now,
					 t->_expire <= w->_now ? (unsigned)PC__WHEEL_DUE
					 : (unsigned)pc__wheel_list(w->_now, t->_expire));
		link = &t->_next;
		(*count)++;
	}
	if (i < PC__WHEEL_NSLOTS) {
		bool bit = w->_bits[i / PC_WHEEL_SLOTS][(i % PC_WHEEL_SLOTS) / 64] >> (i % 64) & 1;
		if (bit != (w->_lists[i] != NULL))
			return sys_errmsg(err, errlen, -EINVAL,
					 "slot %u: occupancy bit %d, but the list is %s", i, bit,
					 w->_lists[i] ? "not empty" : "empty");
	}
	return 0;
}

int pc_wheel_validate(const struct pc_wheel *w, char *err, size_t errlen)
{
	size_t count = 0;
	int rc;

	for (uint32_t i = 0; i < PC__WHEEL_LISTS; i++)
		if ((rc = validate_list(w, i, &count, err, errlen)))
			return rc;
	if (count != w->_count)
		return sys_errmsg(err, errlen, -EINVAL, "%zu timers on the lists, count says %zu",
				 count, (size_t)w->_count);
	return 0;
}
