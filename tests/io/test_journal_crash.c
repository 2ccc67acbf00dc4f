/* SPDX-License-Identifier: MIT */
/* The journal under bad conditions that need a process of their own:
 *   killed_while_appending  a child appends (sync on every commit) and
 *       reports each durability callback through a pipe; it is killed
 *       with SIGKILL at a random point, 20 times over the same journal,
 *       each round reopening it. Every confirmed record must come back,
 *       in order and intact, and nothing after a bad record.
 *   full_disk  a 1 MiB tmpfs in a private mount namespace fills up: the
 *       records that did not fit get -ENOSPC, the journal refuses more,
 *       and the confirmed ones are all recovered. Needs root (skips).
 * Runs on io_uring and on the thread pool (PC_FILE_BACKEND). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "io_util.h"
#include "journal_util.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "testmain.h"

static char dir[480];

/* ---- the child's side --------------------------------------------------- */

struct child {
	char jdir[600];
	struct pc_journal_opts o;
	struct pc_journal *j;
	int out;            /* the pipe: confirmed LSNs */
	unsigned per_turn;  /* records appended per turn, at most */
	int first_err;      /* full_disk: the first error a callback saw */
	uint64_t ok;        /* full_disk: records confirmed */
	bool stop;
};

static void child_confirmed(uint64_t lsn, int err, void *arg)
{
	struct child *c = arg;

	if (err) {
		if (!c->first_err)
			c->first_err = err;
		return;
	}
	c->ok++;
	if (c->out >= 0 && write(c->out, &lsn, sizeof(lsn)) != sizeof(lsn))
		_exit(3);
}

static void child_turn(void *arg)
{
	struct child *c = arg;
	unsigned char p[REC_MAX];
	unsigned n = 1 + (unsigned)rand() % c->per_turn;

	for (unsigned i = 0; i < n && !c->first_err; i++) {
		uint64_t lsn = pc_journal_next_lsn(c->j);
		int rc;

		rec_fill(lsn, p);
		rc = pc_journal_append(c->j, p, rec_len(lsn), child_confirmed, c, NULL);
		if (rc) {
			c->stop = true;
			if (!c->first_err)
				c->first_err = rc;
			break;
		}
	}
	if (c->stop || c->first_err)
		step_done();
	else
		pc_reactor_defer(pc_shard_reactor(), child_turn, c);
}

static void child_open(void *arg)
{
	struct child *c = arg;
	int rc = pc_journal_open(&c->j, c->jdir, &c->o);

	if (rc) {
		fprintf(stderr, "open: %s\n", strerror(-rc));
		_exit(4);
	}
	child_turn(c);
}

/* ---- killed while appending ---------------------------------------------- */

static bool read_lsn(int fd, uint64_t *lsn, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	return read(fd, lsn, sizeof(*lsn)) == sizeof(*lsn);
}

static void killed_while_appending(void **state)
{
	uint64_t acked = 0;
	char jdir[500];

	(void)state;
	snprintf(jdir, sizeof(jdir), "%s/j", dir);
	srand(30);
	for (int round = 0; round < 20; round++) {
		unsigned wait_for_acks = 1 + (unsigned)rand() % 200;
		unsigned delay_us = (unsigned)rand() % 5000;
		uint64_t lsn, seen = 0;
		int fds[2], end = 0, status;
		pid_t pid;

		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			static struct child c;

			close(fds[0]);
			snprintf(c.jdir, sizeof(c.jdir), "%s", jdir);
			pc_journal_opts_init(&c.o);
			c.o.segment_size = 64 * 1024; /* rotations too */
			c.o.truncate_bad_tail = true;
			c.out = fds[1];
			c.per_turn = 16;
			srand((unsigned)round);
			start_one_shard();
			assert_int_equal(pc_engine_submit(engine, 0, child_open, &c), 0);
			sleep(60); /* killed long before */
			_exit(5);
		}
		close(fds[1]);
		/* the confirmations of this round continue the last one's */
		while (seen < wait_for_acks && read_lsn(fds[0], &lsn, 60000)) {
			assert_true(lsn > acked);
			acked = lsn;
			seen++;
		}
		assert_int_equal(seen, wait_for_acks);
		usleep(delay_us);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		while (read_lsn(fds[0], &lsn, 0)) { /* written before it died */
			assert_true(lsn == acked + 1);
			acked = lsn;
		}
		close(fds[0]);
		lsn = recover_count(jdir, &end, NULL);
		if (lsn < acked || end == 1)
			fprintf(stderr, "round %d: %llu confirmed, %llu recovered, end %d\n", round,
				(unsigned long long)acked, (unsigned long long)lsn, end);
		assert_true(lsn >= acked);
		assert_true(end == 0 || end == -EBADMSG);
	}
}

/* ---- a full disk ------------------------------------------------------- */

/* In the child: a 1 MiB tmpfs of its own under dir/small. */
static int private_tmpfs(const char *at)
{
	if (unshare(CLONE_NEWNS))
		return -errno;
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	if (mkdir(at, 0755) && errno != EEXIST)
		return -errno;
	if (mount("pc-journal-test", at, "tmpfs", 0, "size=1m"))
		return -errno;
	return 0;
}

static int full_disk_child(const char *small)
{
	static struct child c;
	int end = 0;
	uint64_t n;

	snprintf(c.jdir, sizeof(c.jdir), "%s/j", small);
	pc_journal_opts_init(&c.o);
	c.o.segment_size = 256 * 1024;
	c.out = -1;
	c.per_turn = 400;
	start_one_shard();
	on_shard(child_open, &c);
	/* the append that failed stopped the chain; the records of the
	 * failed batch have had their callbacks by then */
	if (c.first_err != -ENOSPC) {
		fprintf(stderr, "first error %d, not -ENOSPC\n", c.first_err);
		return 1;
	}
	n = recover_count(c.jdir, &end, NULL);
	if (n < c.ok || end == 1) {
		fprintf(stderr, "%llu confirmed, %llu recovered, end %d\n",
			(unsigned long long)c.ok, (unsigned long long)n, end);
		return 1;
	}
	printf("%llu records confirmed before the disk filled\n", (unsigned long long)c.ok);
	return c.ok > 0 ? 0 : 1;
}

static void full_disk(void **state)
{
	char small[520];
	int status;
	pid_t pid;

	(void)state;
	snprintf(small, sizeof(small), "%s/small", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = private_tmpfs(small);

		if (rc) {
			printf("SKIP: no private tmpfs here (%s): needs root\n", strerror(-rc));
			fflush(stdout);
			_exit(77);
		}
		_exit(full_disk_child(small));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		PC_SKIP("a private mount namespace is not permitted here");
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int setup(void **state)
{
	(void)state;
	scratch_dir(dir, sizeof(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_dir(dir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(killed_while_appending, setup, teardown),
		cmocka_unit_test_setup_teardown(full_disk, setup, teardown),
	};

	return pc_test_main(tests, argc, argv);
}
