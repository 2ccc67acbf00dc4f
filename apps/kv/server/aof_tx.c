/* SPDX-License-Identifier: MIT */
/* A spanning EXEC's records on one shard, kept apart until its commit
 * (aof_shard.h).
 *
 * Why apart: an EXEC over several shards reaches each of them in several
 * jobs (its lock, which may carry its commands there, each piece of its
 * queue, the parts of a command spanning shards inside it), and other
 * clients' writes to other keys run on that shard in between. Appended
 * as they ran, the EXEC's records would be interleaved with theirs and
 * could not be skipped whole. Kept apart, they go to the file as one
 * group at the commit, which the EXEC sends each shard it writes on
 * before its unlocks: recovery applies the group only when every shard's
 * file holds its part (aof_shard.c), and a rewrite copies it whole (it is
 * one record). No rewrite begins between a lock and its commit: its
 * instant holds every shard whole, which waits for the EXEC's key locks.
 * Reordering the EXEC's records after writes that ran meanwhile changes
 * nothing a replay builds: those touched none of the EXEC's keys (they
 * are locked), and a whole-shard lock lets nothing else run. */
#include <errno.h>
#include <stdlib.h>

#include "aof_internal.h"
#include "aof_shard.h"

struct kv_aof_keep {
	struct kv_aof_keep *next;
	uint64_t tx;
	unsigned parts;
	struct kv_reply rec;         /* the EXEC's records here so far */
};

static struct kv_aof_keep **find(struct kv_aof *a, uint64_t tx)
{
	struct kv_aof_keep **p = &a->keep;

	while (*p && (*p)->tx != tx)
		p = &(*p)->next;
	return p;
}

static void swap_rec(struct kv_reply *x, struct kv_reply *y)
{
	struct kv_reply t = *x;

	*x = *y;
	*y = t;
}

void kv_aof_tx_keep(struct kv_shard *sh, uint64_t tx, unsigned parts)
{
	struct kv_aof *a = sh->aof;
	struct kv_aof_keep *k;

	if (!a || a->off) /* switched off: nothing more is logged */
		return;
	k = calloc(1, sizeof(*k));
	if (!k) {
		/* appended as they run, its records could not be skipped
		 * whole: the file fails (writes refused with MISCONF until it
		 * is written again whole) */
		kv_aof_fail(a, -ENOMEM);
		return;
	}
	k->tx = tx;
	k->parts = parts;
	kv_reply_init(&k->rec);
	k->next = a->keep;
	a->keep = k;
}

static void enter(struct kv_aof *a, struct kv_aof_keep *k)
{
	swap_rec(&a->rec, &k->rec);
	a->depth++;
	a->in = k;
}

static void leave(struct kv_aof *a)
{
	swap_rec(&a->rec, &a->in->rec);
	a->depth--;
	a->in = NULL;
}

/* The records the job writes go to the EXEC's own (rec swapped), inside
 * a group (depth) so that nothing is appended. A job run inside another
 * one's (a client served by it) stays in the outer one's records. */
bool kv_aof_tx_enter(struct kv_shard *sh, uint64_t tx)
{
	struct kv_aof *a = sh->aof;
	struct kv_aof_keep *k;

	if (!a || a->off || !a->keep || !tx || a->in)
		return false;
	k = *find(a, tx);
	if (!k)
		return false;
	enter(a, k);
	return true;
}

void kv_aof_tx_leave(struct kv_shard *sh)
{
	struct kv_aof *a = sh->aof;

	if (a && a->in)
		leave(a);
}

/* k's records as one group (the file's record being empty). */
static void append_group(struct kv_shard *sh, const struct kv_aof_keep *k)
{
	struct kv_aof *a = sh->aof;
	bool marked = k->parts > 1;

	if (marked)
		kv_aof_part_begin(sh, k->tx, k->parts);
	else
		a->log.group(&a->log, true);
	kv_reply_raw(&a->rec, k->rec.buf, k->rec.len);
	a->rec.failed |= k->rec.failed; /* a record lost to memory fails the file */
	if (marked)
		kv_aof_part_end(sh);
	else
		a->log.group(&a->log, false);
}

void kv_aof_tx_commit(struct kv_shard *sh, uint64_t tx, bool drop)
{
	struct kv_aof *a = sh->aof;
	struct kv_aof_keep **p, *k, *was;

	if (!a)
		return;
	p = find(a, tx);
	k = *p;
	if (!k)
		return;
	was = a->in; /* the commit's own job entered it (or one it runs in) */
	if (was)
		leave(a);
	*p = k->next;
	/* switched off since it began: its file is closing, it takes
	 * nothing more (as a write made after the switch) */
	if (!drop && !a->off)
		append_group(sh, k);
	kv_reply_free(&k->rec);
	free(k);
	if (was && was != k)
		enter(a, was);
}

void kv_aof_tx_drop_all(struct kv_aof *a)
{
	while (a->keep) {
		struct kv_aof_keep *k = a->keep;

		a->keep = k->next;
		if (k == a->in)
			swap_rec(&a->rec, &k->rec);
		kv_reply_free(&k->rec);
		free(k);
	}
	a->in = NULL;
}
