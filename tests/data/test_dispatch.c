/* SPDX-License-Identifier: MIT */
/* Dispatcher: dense and sparse ids reach their handlers, unknown ids get
 * the error reply (or the user's default) and are counted, registration
 * refusals keep what was there; random registrations against a model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "percore/dispatch.h"
#include "testutil.h"

/* A handler's ctx says which handler it is; it returns that number. */
static int handler(void *ctx, const struct pc_frame *f, void *arg)
{
	(void)f;
	*(uint32_t *)arg = (uint32_t)(uintptr_t)ctx;
	return (int)(uintptr_t)ctx;
}

static struct {
	void *arg;
	uint32_t id;
	uint8_t flags;
	char body[64];
	size_t len;
	int calls;
} reply_seen;

static int reply(void *arg, uint32_t id, uint8_t flags, const void *body, size_t len)
{
	reply_seen.arg = arg;
	reply_seen.id = id;
	reply_seen.flags = flags;
	assert_true(len < sizeof(reply_seen.body));
	memcpy(reply_seen.body, body, len);
	reply_seen.body[len] = 0;
	reply_seen.len = len;
	reply_seen.calls++;
	return 0;
}

static int dispatch_id(struct pc_dispatch *d, uint32_t id, uint32_t *who)
{
	struct pc_frame f = { .msg_id = id };
	*who = 0;
	return pc_dispatch_frame(d, &f, who);
}

static void dense_and_sparse_ids(void **state)
{
	struct pc_dispatch d;
	uint32_t who;
	static const uint32_t ids[] = { 0, 1, 255, 256, 257, 1000000, 0xfffffffeu, 0xffffffffu };
	(void)state;
	assert_int_equal(pc_dispatch_init(&d, 256), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(ids); i++)
		assert_int_equal(pc_dispatch_register(&d, ids[i], handler, (void *)(uintptr_t)(i + 1)), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(ids); i++) {
		assert_int_equal(dispatch_id(&d, ids[i], &who), (int)i + 1);
		assert_int_equal(who, i + 1);
		assert_non_null(pc_dispatch_lookup(&d, ids[i]));
	}
	assert_null(pc_dispatch_lookup(&d, 2));
	assert_null(pc_dispatch_lookup(&d, 258));
	assert_int_equal(pc_dispatch_unknown(&d), 0);
	/* Refusals keep the handler that was there. */
	assert_int_equal(pc_dispatch_register(&d, 1, handler, (void *)99), -EEXIST);
	assert_int_equal(pc_dispatch_register(&d, 1000000, handler, (void *)99), -EEXIST);
	assert_int_equal(pc_dispatch_register(&d, 5, NULL, NULL), -EINVAL);
	assert_int_equal(dispatch_id(&d, 1000000, &who), 6);
	assert_int_equal(dispatch_id(&d, 1, &who), 2);
	/* Unregister both kinds, then they are unknown. */
	assert_int_equal(pc_dispatch_unregister(&d, 1), 0);
	assert_int_equal(pc_dispatch_unregister(&d, 1000000), 0);
	assert_int_equal(pc_dispatch_unregister(&d, 1), -ENOENT);
	assert_int_equal(pc_dispatch_unregister(&d, 1000000), -ENOENT);
	assert_int_equal(pc_dispatch_unregister(&d, 7), -ENOENT);
	assert_null(pc_dispatch_lookup(&d, 1));
	assert_null(pc_dispatch_lookup(&d, 1000000));
	assert_int_equal(pc_dispatch_register(&d, 1000000, handler, (void *)42), 0);
	assert_int_equal(dispatch_id(&d, 1000000, &who), 42);
	pc_dispatch_destroy(&d);
	assert_int_equal(pc_dispatch_init(&d, PC_DISPATCH_MAX_DENSE + 1), -EINVAL);
}

static void unknown_ids_get_an_error_reply(void **state)
{
	struct pc_dispatch d;
	uint32_t who;
	(void)state;
	/* Without a dense table everything is sparse. */
	assert_int_equal(pc_dispatch_init(&d, 0), 0);
	assert_int_equal(pc_dispatch_register(&d, 3, handler, (void *)3), 0);
	/* No reply function: nothing sent, -ENOENT, counted. */
	assert_int_equal(dispatch_id(&d, 9, &who), -ENOENT);
	assert_int_equal(pc_dispatch_unknown(&d), 1);
	pc_dispatch_set_reply(&d, reply);
	memset(&reply_seen, 0, sizeof(reply_seen));
	assert_int_equal(dispatch_id(&d, 0xabcdef, &who), 0);
	assert_int_equal(reply_seen.calls, 1);
	assert_ptr_equal(reply_seen.arg, &who);
	assert_int_equal(reply_seen.id, 0xabcdef);
	assert_int_equal(reply_seen.flags, PC_FRAME_ERROR);
	assert_string_equal(reply_seen.body, PC_DISPATCH_UNKNOWN_BODY);
	assert_int_equal(pc_dispatch_unknown(&d), 2);
	/* A known id is not counted and sends no reply. */
	assert_int_equal(dispatch_id(&d, 3, &who), 3);
	assert_int_equal(reply_seen.calls, 1);
	/* The user's default, then back to the built-in one. */
	pc_dispatch_set_default(&d, handler, (void *)77);
	assert_int_equal(dispatch_id(&d, 10, &who), 77);
	assert_int_equal(who, 77);
	assert_int_equal(pc_dispatch_unknown(&d), 3);
	pc_dispatch_set_default(&d, NULL, NULL);
	assert_int_equal(dispatch_id(&d, 10, &who), 0);
	assert_int_equal(reply_seen.calls, 2);
	pc_dispatch_destroy(&d);
}

/* Random register/unregister/dispatch against an array of who owns what. */
static void random_registrations_match_the_model(void **state)
{
	enum { IDS = 2048 };
	static uint32_t ids[IDS], owner[IDS];
	struct pc_dispatch d;
	struct rng r = test_rng("test_dispatch");
	uint64_t ops = test_ops(1000000) / 4, unknown = 0;
	(void)state;
	for (size_t i = 0; i < IDS; i++)
		ids[i] = i < IDS / 2 ? (uint32_t)i : 0x10000u + (uint32_t)(i - IDS / 2) * 40503u;
	assert_int_equal(pc_dispatch_init(&d, IDS / 4), 0);
	for (uint64_t op = 0; op < ops; op++) {
		size_t i = (size_t)rng_below(&r, IDS);
		uint32_t who, tag = (uint32_t)op + 1;
		switch (rng_below(&r, 3)) {
		case 0:
			assert_int_equal(pc_dispatch_register(&d, ids[i], handler, (void *)(uintptr_t)tag),
					 owner[i] ? -EEXIST : 0);
			if (!owner[i])
				owner[i] = tag;
			break;
		case 1:
			assert_int_equal(pc_dispatch_unregister(&d, ids[i]), owner[i] ? 0 : -ENOENT);
			owner[i] = 0;
			break;
		default: {
			int ret = dispatch_id(&d, ids[i], &who);
			if (owner[i]) {
				assert_int_equal(who, owner[i]);
				assert_int_equal(ret, (int)owner[i]);
			} else {
				assert_int_equal(ret, -ENOENT);
				unknown++;
			}
		}
		}
	}
	assert_int_equal(pc_dispatch_unknown(&d), unknown);
	assert_int_equal(pc_map_validate(&d._sparse, NULL, 0), 0);
	pc_dispatch_destroy(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dense_and_sparse_ids),
		cmocka_unit_test(unknown_ids_get_an_error_reply),
		cmocka_unit_test(random_registrations_match_the_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
