/* SPDX-License-Identifier: MIT */
/* Checking what a validator says about corrupt state: it must fail with
 * -EINVAL and name what broke. Write the call with PC_WHY where the err
 * buffer and its length go:
 *
 *   PC_EXPECT_BROKEN(pc_spsc_validate(r, PC_WHY), "tail 20 is 20 past head 0");
 */
#ifndef PERCORE_TESTS_VALIDATE_CHECK_H
#define PERCORE_TESTS_VALIDATE_CHECK_H

#include <errno.h>
#include <string.h>

#define PC_WHY pc_why_, sizeof(pc_why_)

#define PC_EXPECT_BROKEN(call, fragment)                                              \
	do {                                                                          \
		char pc_why_[256] = "";                                               \
		int pc_rc_ = (call);                                                  \
		if (pc_rc_ != -EINVAL)                                                \
			fail_msg("%s returned %d, expected -EINVAL", #call, pc_rc_);  \
		if (!strstr(pc_why_, (fragment)))                                     \
			fail_msg("%s said \"%s\", expected it to name \"%s\"", #call, \
				 pc_why_, (fragment));                                \
	} while (0)

#endif
