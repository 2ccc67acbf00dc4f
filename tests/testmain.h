/* SPDX-License-Identifier: MIT */
/* The main() of a cmocka test program whose tests may be skipped.
 *
 * cmocka's skip() marks a test skipped, yet the program still exits 0 and
 * ctest reports it passed. A test skips with PC_SKIP("reason") instead,
 * which counts the skip, and main() returns pc_test_main(tests, argc,
 * argv): 1 when a test failed, else 77 when one was skipped (ctest's
 * SKIP_RETURN_CODE, set on every test by tests/CMakeLists.txt, so it shows
 * "Skipped"), else 0.
 *
 * A test that may be skipped while the rest of its program runs is listed
 * in pc_add_test's ALONE, and ctest runs it as a test of its own
 * (<program>.<test>), so its skip hides nothing else. The program takes
 *   --only NAME     run the test NAME alone
 *   --except NAME   run every test but NAME (may be repeated)
 * Include after <cmocka.h>. */
#ifndef PERCORE_TESTS_TESTMAIN_H
#define PERCORE_TESTS_TESTMAIN_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tests skipped in this program so far. */
static int pc_test_skips __attribute__((unused));

/* Skip the running test, saying why on stdout. A literal format first. */
#define PC_SKIP(...)                                                            \
	do {                                                                    \
		printf("SKIP: " __VA_ARGS__);                                   \
		printf("\n");                                                   \
		fflush(stdout);                                                 \
		pc_test_skips++;                                                \
		skip();                                                         \
	} while (0)

static inline int pc_test_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "%s%s\nusage: test [--only NAME | --except NAME...]\n", msg, arg);
	return 2;
}

/* Whether --only/--except let the test named name run. */
static inline bool pc_test_selected(const char *name, int argc, char **argv)
{
	bool only = false;

	for (int i = 1; i + 1 < argc; i += 2) {
		bool same = !strcmp(argv[i + 1], name);
		if (!strcmp(argv[i], "--only")) {
			if (same)
				return true;
			only = true;
		} else if (same) {
			return false; /* --except */
		}
	}
	return !only;
}

static inline int pc_test_run(const char *group, const struct CMUnitTest *all, size_t n,
			      int argc, char **argv)
{
	struct CMUnitTest *pick = calloc(n ? n : 1, sizeof(*pick));
	size_t k = 0;
	int failed;

	for (int i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "--only") && strcmp(argv[i], "--except"))
			return pc_test_usage("unknown argument: ", argv[i]);
		if (i + 1 == argc)
			return pc_test_usage("missing test name after ", argv[i]);
	}
	if (!pick)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (pc_test_selected(all[i].name, argc, argv))
			pick[k++] = all[i];
	if (!k) {
		free(pick);
		return pc_test_usage("no test selected by the arguments", "");
	}
	failed = _cmocka_run_group_tests(group, pick, k, NULL, NULL);
	free(pick);
	return failed ? 1 : pc_test_skips ? 77 : 0;
}

/* Run the tests of a CMUnitTest array (see the top of this file). */
#define pc_test_main(tests, argc, argv)                                         \
	pc_test_run(#tests, tests, sizeof(tests) / sizeof((tests)[0]), argc, argv)

#endif
