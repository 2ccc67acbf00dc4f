/* SPDX-License-Identifier: MIT */
/* One shard's publish/subscribe tables: subscriptions counted once per
 * connection and name, the changes a shard records and another applies,
 * PUBLISH's receivers and destination shards from the replicated counts,
 * deliveries encoded as Redis's messages, and entries forgotten once
 * nobody anywhere subscribes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "keyhash.h"
#include "pubsub.h"

/* What the hooks saw. */
struct seen {
	unsigned delivered, forwarded[4];
	struct kv_conn *last_to;
	char last[256];
};

static void deliver(void *arg, struct kv_conn *to, const char *buf, size_t len)
{
	struct seen *s = arg;

	s->delivered++;
	s->last_to = to;
	assert_true(len < sizeof(s->last));
	memcpy(s->last, buf, len);
	s->last[len] = '\0';
}

static void forward(void *arg, unsigned to, const char *chan, size_t clen, const char *msg,
		    size_t mlen)
{
	struct seen *s = arg;

	(void)chan, (void)clen, (void)msg, (void)mlen;
	s->forwarded[to]++;
}

static struct kv_pubsub *table(unsigned n, unsigned self, struct seen *s)
{
	struct kv_pubsub_hooks h = { .deliver = deliver, .forward = forward, .arg = s };
	struct kv_pubsub *ps = kv_pubsub_new(n, self, &h);

	assert_non_null(ps);
	return ps;
}

/* Moves shard from's pending changes into shard to's counts. */
static void ship(struct kv_pubsub *from, unsigned idx, struct kv_pubsub *to)
{
	struct kv_reply buf;
	uint32_t n = kv_pubsub_take_changes(from, &buf);
	const char **argv = calloc(n + 1, sizeof(*argv));
	size_t *argl = calloc(n + 1, sizeof(*argl));

	assert_non_null(argv);
	assert_non_null(argl);
	kv_pubsub_split_changes(&buf, n, argv, argl);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(kv_pubsub_apply(to, idx, argv[i], argl[i]), 0);
	free(argv);
	free(argl);
	kv_reply_free(&buf);
}

static void subscribe_counts(void **state)
{
	struct seen s = { 0 };
	struct kv_pubsub *ps = table(1, 0, &s);
	struct kv_conn a, b;
	struct kv_reply buf;

	(void)state;
	kv_conn_init(&a, 1, 0);
	kv_conn_init(&b, 2, 0);
	assert_int_equal(kv_pubsub_subscribe(ps, &a, false, "ch", 2), 1);
	assert_int_equal(kv_pubsub_subscribe(ps, &a, false, "ch", 2), 0); /* once */
	assert_int_equal(kv_pubsub_subscribe(ps, &a, true, "c*", 2), 1);
	assert_int_equal(kv_pubsub_subscribe(ps, &b, false, "ch", 2), 1);
	assert_int_equal(kv_pubsub_conn_subs(&a), 2);
	assert_int_equal(kv_pubsub_numsub(ps, "ch", 2), 2);
	assert_int_equal(kv_pubsub_numpat(ps), 1);
	/* one shard records no changes for others */
	assert_int_equal(kv_pubsub_take_changes(ps, &buf), 0);
	kv_reply_free(&buf);

	/* a channel subscription and a pattern one: two copies for a */
	assert_int_equal(kv_pubsub_publish(ps, "ch", 2, "hi", 2), 3);
	assert_int_equal(s.delivered, 3);
	/* the channel's subscribers first, then the patterns' */
	assert_string_equal(s.last, "*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nhi\r\n");
	assert_int_equal(kv_pubsub_publish(ps, "cx", 2, "m", 1), 1);
	assert_ptr_equal(s.last_to, &a);
	assert_string_equal(s.last, "*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\ncx\r\n$1\r\nm\r\n");
	assert_int_equal(kv_pubsub_publish(ps, "zz", 2, "m", 1), 0);

	assert_int_equal(kv_pubsub_unsubscribe(ps, &a, false, "nope", 4), 0);
	assert_int_equal(kv_pubsub_unsubscribe(ps, &a, false, "ch", 2), 1);
	assert_int_equal(kv_pubsub_numsub(ps, "ch", 2), 1);
	kv_pubsub_drop(ps, &a);
	kv_pubsub_drop(ps, &b);
	assert_int_equal(kv_pubsub_numsub(ps, "ch", 2), 0);
	assert_int_equal(kv_pubsub_numpat(ps), 0);
	kv_conn_fini(&a);
	kv_conn_fini(&b);
	kv_pubsub_free(ps);
}

static void across_shards(void **state)
{
	struct seen s0 = { 0 }, s1 = { 0 }, s2 = { 0 };
	struct kv_pubsub *t[3] = { table(3, 0, &s0), table(3, 1, &s1), table(3, 2, &s2) };
	struct kv_conn a, b;
	struct kv_reply out;

	(void)state;
	kv_conn_init(&a, 1, 0);
	kv_conn_init(&b, 2, 0);
	/* a lives on shard 1, b on shard 2 */
	assert_int_equal(kv_pubsub_subscribe(t[1], &a, false, "news", 4), 1);
	assert_int_equal(kv_pubsub_subscribe(t[2], &b, true, "n*", 2), 1);
	ship(t[1], 1, t[0]);
	ship(t[1], 1, t[2]);
	ship(t[2], 2, t[0]);
	ship(t[2], 2, t[1]);
	/* shard 0, with no subscriber, counts both and forwards once each */
	assert_int_equal(kv_pubsub_publish(t[0], "news", 4, "x", 1), 2);
	assert_int_equal(s0.delivered, 0);
	assert_int_equal(s0.forwarded[1], 1);
	assert_int_equal(s0.forwarded[2], 1);
	assert_int_equal(s0.forwarded[0], 0);
	/* each destination delivers to its own */
	assert_int_equal(kv_pubsub_deliver(t[1], "news", 4, "x", 1), 1);
	assert_int_equal(kv_pubsub_deliver(t[2], "news", 4, "x", 1), 1);
	assert_ptr_equal(s1.last_to, &a);
	assert_ptr_equal(s2.last_to, &b);
	/* only shards with subscribers are sent to */
	assert_int_equal(kv_pubsub_publish(t[0], "nx", 2, "y", 1), 1);
	assert_int_equal(s0.forwarded[1], 1);
	assert_int_equal(s0.forwarded[2], 2);
	kv_reply_init(&out);
	kv_pubsub_channels(t[0], NULL, 0, &out);
	assert_memory_equal(out.buf, "*1\r\n$4\r\nnews\r\n", out.len);
	kv_reply_free(&out);

	/* unsubscribing everywhere forgets the names on every shard */
	kv_reply_init(&out);
	kv_pubsub_unsubscribe_all(t[1], &a, false, &out);
	assert_memory_equal(out.buf, "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:0\r\n", out.len);
	kv_reply_clear(&out);
	kv_pubsub_unsubscribe_all(t[1], &a, false, &out);
	assert_memory_equal(out.buf, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n", out.len);
	kv_reply_free(&out);
	kv_pubsub_drop(t[2], &b);
	ship(t[1], 1, t[0]);
	ship(t[2], 2, t[0]);
	assert_int_equal(kv_pubsub_numsub(t[0], "news", 4), 0);
	assert_int_equal(kv_pubsub_numpat(t[0]), 0);
	assert_int_equal(kv_pubsub_publish(t[0], "news", 4, "x", 1), 0);
	kv_conn_fini(&a);
	kv_conn_fini(&b);
	for (int i = 0; i < 3; i++)
		kv_pubsub_free(t[i]);
}

/* A change that is not one (too short, or from no such shard) changes
 * nothing; a removal of a name never added is ignored. */
static void bad_changes(void **state)
{
	struct seen s = { 0 };
	struct kv_pubsub *ps = table(2, 0, &s);

	(void)state;
	assert_int_equal(kv_pubsub_apply(ps, 1, "+", 1), 0);
	assert_int_equal(kv_pubsub_apply(ps, 7, "+cx", 3), 0);
	assert_int_equal(kv_pubsub_apply(ps, 1, "-cx", 3), 0);
	assert_int_equal(kv_pubsub_numsub(ps, "x", 1), 0);
	assert_int_equal(kv_pubsub_apply(ps, 1, "+cx", 3), 0);
	assert_int_equal(kv_pubsub_numsub(ps, "x", 1), 1);
	kv_pubsub_free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(subscribe_counts),
		cmocka_unit_test(across_shards),
		cmocka_unit_test(bad_changes),
	};

	if (kv_keyhash_init())
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
