/* SPDX-License-Identifier: MIT */
/* SCAN over every shard: the server-wide cursor keeps the shard's number
 * below the shard's own cursor, so a walk visits shard 0, 1, ... in turn
 * and a cursor names both where it is and which shard it is at. */
#include "server_internal.h"

bool kv_scan_route(const char *p, size_t len, unsigned n, unsigned *shard, uint64_t *cursor)
{
	uint64_t x = 0;

	if (len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(p[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*shard = (unsigned)(x % n);
	*cursor = x / n;
	return true;
}

/* A shard's cursor holds only its table's group bits, far below 2^64 / n,
 * so the product cannot wrap. */
uint64_t kv_scan_cursor(uint64_t next, unsigned s, unsigned n)
{
	if (next == 0)
		return s + 1 < n ? s + 1 : 0;
	return next * n + s;
}

/* A SCAN part that found nothing and ended its shard's walk goes on to
 * the next shard at once, as Redis's SCAN of an empty keyspace answers
 * cursor 0 in one call. Returns true when the job was sent on. */
bool kv_scan_hop(struct kv_shard *sh, struct kv_job *j)
{
	if ((unsigned)j->scan_shard + 1 >= sh->n || j->out.len || j->part.n || j->part.count)
		return false;
	j->target = (unsigned)++j->scan_shard;
	j->a.argv[1] = "0";
	j->a.argl[1] = 1;
	j->finished = false;
	if (!kv_job_submit(sh, j))
		return true;
	j->finished = true; /* refused: this shard's empty answer stands */
	return false;
}

/* A SCAN part's reply: its keys under the server-wide cursor. */
void kv_scan_reply(struct kv_shard *sh, struct kv_job *j)
{
	unsigned s = (unsigned)j->scan_shard;

	if (!j->out.len) /* else the shard's error stands */
		kv_part_reply_walk(&j->part, kv_scan_cursor((uint64_t)j->part.n, s, sh->n), &j->out);
}
