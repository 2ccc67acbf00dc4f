/* SPDX-License-Identifier: MIT */
/* Random 4 KiB O_DIRECT reads and writes through a shard's files
 * (percore/file.h), beside fio with its io_uring engine on the same file
 * with the same parameters:
 *
 *   File/RandRead/4096/qd:{1,32}     Peer/fio/RandRead/4096/qd:{1,32}
 *   File/RandWrite/4096/qd:{1,32}    Peer/fio/RandWrite/4096/qd:{1,32}
 *
 * The file is 64 MiB of written data (never preallocated-only extents,
 * which reads would answer without touching the disk), in PC_BENCH_DIR or
 * /var/tmp, made once per process and removed at exit. One iteration is
 * one operation; ours keeps qd of them in flight from one shard that
 * sleeps when idle, as fio does, timing itself on the shard; fio runs
 * --io_size of the iterations' bytes and its JSON (--output-format=json)
 * gives the rate and the percentiles. Both
 * report p50_us and p99_us from the issue of an operation to its
 * completion: fio's total latency (lat_ns, with --lat_percentiles=1), not
 * its clat_ns, which starts after io_uring_enter returns and so leaves
 * out the submission (about 60 us of a 140 us read on a virtio disk,
 * where the submission is the device's doorbell). Our shard is pinned
 * as a server's would be (placement "auto") and fio runs on the same CPU
 * (--cpus_allowed): a disk with fewer queues than CPUs interrupts some
 * CPUs only, and a thread elsewhere is woken across CPUs for every
 * completion (about 50 us a read on a 2-CPU VM), so two unpinned sides
 * measure where the scheduler put them more than their software
 * (docs/BENCHMARKS.md, Files). Rows skip where the file system refuses
 * O_DIRECT (tmpfs) or fio is not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../rt/rt_bench.h"
#include "percore/clock.h"
#include "percore/file.h"
#include "percore/hist.h"

#define BLOCK 4096u
#define FILE_SIZE (64ull << 20)
#define QD_MAX 32
/* Pinned whatever --affinity says (these rows are not threaded ones). */
#define PLACEMENT "auto"

static char path[512];

static void remove_file(void)
{
	unlink(path);
}

/* The data file, written once per process. */
static int data_file(void)
{
	static int made;
	const char *dir = getenv("PC_BENCH_DIR");
	char *buf;
	int fd, rc = 0;

	if (made)
		return made > 0 ? 0 : -ENOTSUP;
	snprintf(path, sizeof(path), "%s/percore-file-bench.%d", dir ? dir : "/var/tmp",
		 (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	buf = aligned_alloc(BLOCK, 1u << 20);
	if (fd < 0 || !buf) {
		fprintf(stderr, "File: cannot open %s with O_DIRECT: %s\n", path, strerror(errno));
		made = -1;
		free(buf);
		return -ENOTSUP;
	}
	memset(buf, 0x5a, 1u << 20);
	for (uint64_t off = 0; off < FILE_SIZE && !rc; off += 1u << 20)
		if (pwrite(fd, buf, 1u << 20, (off_t)off) != 1 << 20)
			rc = -EIO;
	fsync(fd);
	close(fd);
	free(buf);
	atexit(remove_file);
	made = rc ? -1 : 1;
	return rc ? -ENOTSUP : 0;
}

/* ---- ours ------------------------------------------------------------------ */

struct job {
	struct rtb *b;
	struct pc_file *f;
	unsigned char *buf;      /* qd blocks */
	uint64_t t[QD_MAX];      /* issue time per slot */
	uint64_t left, pending, rng, start;
	struct pc_hist *lat;
	unsigned qd;
	bool write;
};

static uint64_t next_off(struct job *j)
{
	j->rng ^= j->rng << 13;
	j->rng ^= j->rng >> 7;
	j->rng ^= j->rng << 17;
	return (j->rng % (FILE_SIZE / BLOCK)) * BLOCK;
}

static void done(struct pc_file *f, ssize_t res, void *arg);

static void issue(struct job *j, unsigned slot)
{
	void *p = j->buf + (size_t)slot * BLOCK;
	uint64_t off = next_off(j);
	int rc;

	j->t[slot] = pc_now_ns();
	j->left--;
	j->pending++;
	/* the slot number rides in the argument: one job, qd slots */
	rc = j->write ? pc_file_write(j->f, p, BLOCK, off, done, (void *)(uintptr_t)slot)
		      : pc_file_read(j->f, p, BLOCK, off, done, (void *)(uintptr_t)slot);
	if (rc)
		abort(); /* a benchmark bug: the queue takes qd <= its depth */
}

static struct job *current; /* the shard's running job (one at a time) */

static void done(struct pc_file *f, ssize_t res, void *arg)
{
	struct job *j = current;
	unsigned slot = (unsigned)(uintptr_t)arg;

	(void)f;
	if (res != BLOCK)
		abort();
	pc_hist_record(j->lat, pc_elapsed(pc_now_ns(), j->t[slot]));
	j->pending--;
	if (j->left)
		return issue(j, slot);
	if (!j->pending) {
		uint64_t ns = pc_elapsed(pc_now_ns(), j->start);

		pc_file_close(j->f);
		rtb_finish_as(j->b, ns);
	}
}

static void start_job(void *arg)
{
	struct rtb *b = arg;
	struct job *j = b->user;

	j->b = b;
	j->left = b->iterations;
	j->pending = 0;
	if (!j->buf)
		j->buf = pc_file_buf_alloc((size_t)QD_MAX * BLOCK);
	if (!j->buf || pc_file_open(&j->f, path, O_RDWR, 0, PC_FILE_DIRECT))
		abort();
	current = j;
	j->start = pc_now_ns();
	for (unsigned s = 0; s < j->qd && j->left; s++)
		issue(j, s);
}

static int ours_setup(struct pc_bench_state *st)
{
	struct job *j;
	int rc = data_file();

	if (rc)
		return rc;
	j = calloc(1, sizeof(*j));
	j->lat = pc_hist_create();
	j->qd = (unsigned)st->bench->arg;
	j->write = st->bench->arg2 != 0;
	j->rng = 0x9e3779b97f4a7c15ull;
	/* fio sleeps in io_uring_enter between completions; a shard that polls
	 * first would meet a peer that does not (the pairing rule of the
	 * report), and on a busy machine its spinning costs it its CPU: with
	 * both CPUs kept busy, adaptive made 0.24-0.31x fio's reads at depth
	 * 1 with a p99 of 35 ms, sleep 0.73-1.07x with fio's p99. */
	rc = rtb_setup_placed(st, 1, PC_IDLE_SLEEP, 0, PLACEMENT, j);
	if (rc) {
		pc_hist_destroy(j->lat);
		free(j);
	}
	return rc;
}

static void ours_run(struct pc_bench_state *st)
{
	struct rtb *b = st->ctx;
	struct job *j = b->user;

	pc_hist_reset(j->lat);
	rtb_run(st, 0, start_job);
	pc_bench_counter(st, "p50_us", (double)pc_hist_percentile(j->lat, 50) / 1e3);
	pc_bench_counter(st, "p99_us", (double)pc_hist_percentile(j->lat, 99) / 1e3);
	st->bytes = st->iterations * BLOCK;
}

static void ours_teardown(struct pc_bench_state *st)
{
	struct rtb *b = st->ctx;
	struct job *j = b->user;

	rtb_teardown(st); /* the shard's buffer goes with the engine's memory */
	pc_hist_destroy(j->lat);
	free(j);
}

/* ---- fio ------------------------------------------------------------------- */

/* The CPU our one-shard engine pins its shard to (-1: unpinned), asked
 * of an engine once per process: the fio rows may run before ours. */
static int shard_cpu(struct pc_bench_state *st)
{
	static int cpu = -2;

	if (cpu == -2 && rtb_setup_placed(st, 1, PC_IDLE_SLEEP, 0, PLACEMENT, NULL) == 0) {
		cpu = pc_engine_shard_cpu(((struct rtb *)st->ctx)->e, 0);
		rtb_teardown(st);
		st->ctx = NULL;
	}
	return cpu < 0 ? -1 : cpu;
}

static int fio_setup(struct pc_bench_state *st)
{
	(void)st;
	if (system("command -v fio >/dev/null 2>&1")) {
		fprintf(stderr, "Peer/fio: fio is not installed (scripts/deps.sh)\n");
		return -ENOTSUP;
	}
	return data_file();
}

static double json_num(const cJSON *o, const char *a, const char *b, const char *c)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	if (c)
		v = cJSON_GetObjectItemCaseSensitive(v, c);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* fio's output: whatever it prints first, then the JSON document. */
static char *run_fio(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	size_t n;

	if (!p || !out) {
		if (p)
			pclose(p);
		free(out);
		return NULL;
	}
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *m = realloc(out, cap *= 2);

			if (!m)
				break;
			out = m;
		}
	}
	out[len] = 0;
	if (pclose(p)) {
		free(out);
		return NULL;
	}
	return out;
}

static void fio_run(struct pc_bench_state *st)
{
	const char *dir = st->bench->arg2 ? "write" : "read";
	char cmd[1024], pin[32] = "", *out;
	int cpu = shard_cpu(st);
	cJSON *doc, *job;
	double iops;

	if (cpu >= 0)
		snprintf(pin, sizeof(pin), " --cpus_allowed=%d", cpu);
	snprintf(cmd, sizeof(cmd),
		 "fio --name=pc --filename=%s --rw=rand%s --bs=%u --iodepth=%d "
		 "--ioengine=io_uring --direct=1 --size=%llu --io_size=%llu%s "
		 "--randrepeat=0 --norandommap --lat_percentiles=1 --output-format=json 2>/dev/null",
		 path, dir, BLOCK, (int)st->bench->arg, (unsigned long long)FILE_SIZE,
		 (unsigned long long)(st->iterations * BLOCK), pin);
	out = run_fio(cmd);
	doc = out && strchr(out, '{') ? cJSON_Parse(strchr(out, '{')) : NULL;
	job = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "jobs"), 0);
	iops = json_num(job, dir, "iops", NULL);
	if (iops <= 0) {
		pc_bench_fail(st, "fio failed or printed no rate");
	} else {
		const cJSON *pct = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(job, dir), "lat_ns"),
			"percentile");

		st->manual_ns = (uint64_t)((double)st->iterations / iops * 1e9);
		st->bytes = st->iterations * BLOCK;
		pc_bench_counter(st, "p50_us", json_num(pct, "50.000000", NULL, NULL) / 1e3);
		pc_bench_counter(st, "p99_us", json_num(pct, "99.000000", NULL, NULL) / 1e3);
	}
	cJSON_Delete(doc);
	free(out);
}

/* ---- the rows -------------------------------------------------------------- */

/* Ours and fio's row of one case; registered below, one line each (the
 * registration names its constructor by line). */
#define ROWS(var, what, qd, wr)                                                       \
	static const struct pc_bench var = {                                          \
		.name = "File/" what "/4096/qd:" #qd, .flags = PC_BENCH_MANUAL_TIME,  \
		.arg = qd, .arg2 = wr, .setup = ours_setup, .run = ours_run,          \
		.teardown = ours_teardown,                                            \
	};                                                                            \
	static const struct pc_bench var##_fio = {                                    \
		.name = "Peer/fio/" what "/4096/qd:" #qd, .flags = PC_BENCH_MANUAL_TIME, \
		.arg = qd, .arg2 = wr, .setup = fio_setup, .run = fio_run,            \
	}

ROWS(rread1, "RandRead", 1, 0);
ROWS(rread32, "RandRead", 32, 0);
ROWS(rwrite1, "RandWrite", 1, 1);
ROWS(rwrite32, "RandWrite", 32, 1);
PC_BENCH_REGISTER(rread1)
PC_BENCH_REGISTER(rread1_fio)
PC_BENCH_REGISTER(rread32)
PC_BENCH_REGISTER(rread32_fio)
PC_BENCH_REGISTER(rwrite1)
PC_BENCH_REGISTER(rwrite1_fio)
PC_BENCH_REGISTER(rwrite32)
PC_BENCH_REGISTER(rwrite32_fio)
