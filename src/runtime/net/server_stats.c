/* SPDX-License-Identifier: MIT */
/* percore net: the server's statistics: reading them from any thread,
 * printing them, and answering PC_MSG_STATS frames. The JSON is written
 * here, so the runtime needs no JSON library (the cJSON tree of it,
 * pc_server_stats_json, is in libpercore-bench: stats_json.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net.h"

#define FIELD(f) { #f, offsetof(struct pc_server_stats, f) }

/* Every figure but closed_reason[], in the order they are printed. */
static const struct {
	const char *name;
	size_t off;
} fields[] = {
	FIELD(sessions), FIELD(accepted), FIELD(closed), FIELD(moved_out), FIELD(moved_in),
	FIELD(rejected_shard_limit), FIELD(rejected_addr_limit), FIELD(accept_errors),
	FIELD(malformed), FIELD(oversize), FIELD(error_replies), FIELD(unknown_ids),
	FIELD(frames_in), FIELD(frames_out), FIELD(bytes_in), FIELD(bytes_out),
	FIELD(heartbeats_in), FIELD(heartbeats_out),
	FIELD(read_pauses), FIELD(paused), FIELD(send_refused), FIELD(send_to_gone), FIELD(replies_discarded), FIELD(read_holds),
	FIELD(input_pauses), FIELD(input_paused), FIELD(input_shed),
	FIELD(queued_bytes), FIELD(buffered_bytes), FIELD(session_bytes),
	FIELD(buffer_bytes), FIELD(pool_bytes), FIELD(buffers_mapped), FIELD(buffer_maps),
	FIELD(drain_aborted),
};

_Static_assert(sizeof(struct pc_server_stats) % sizeof(uint64_t) == 0,
	       "the statistics are 64-bit figures only");

int pc_server_stats(const struct pc_server *srv, int i, struct pc_server_stats *out)
{
	uint64_t *dst = (uint64_t *)out;
	const size_t n = sizeof(*out) / sizeof(uint64_t);
	/* Shards may ask too (PC_MSG_STATS), while the starting thread is
	 * still storing the count: read both it and the shard pointers as
	 * the atomics they are. */
	unsigned shards = __atomic_load_n(&srv->n, __ATOMIC_ACQUIRE);

	if (i < -1 || (i >= 0 && (unsigned)i >= shards))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (unsigned k = 0; k < shards; k++) {
		const struct net_shard *sh = __atomic_load_n(&srv->shards[k], __ATOMIC_ACQUIRE);

		if (!sh || (i >= 0 && (unsigned)i != k))
			continue;
		/* Each figure has one writer (its shard); relaxed loads see
		 * a recent value of each, which is all a monitor needs. */
		const uint64_t *src = (const uint64_t *)&sh->stats;
		for (size_t j = 0; j < n; j++)
			dst[j] += __atomic_load_n(&src[j], __ATOMIC_RELAXED);
	}
	return 0;
}

/* A JSON object written into a caller's buffer. Member names are this
 * file's field names and close reason names, C identifiers with nothing to
 * escape; values are unsigned integers, written exactly. len counts what
 * the whole text needs: past size, it did not fit. */
struct stats_json {
	char *buf;
	size_t size, len;
	unsigned members;
	bool pretty; /* one member per line, as people read it */
};

__attribute__((format(printf, 2, 3))) static void sj_printf(struct stats_json *j,
							    const char *fmt, ...)
{
	size_t room = j->len < j->size ? j->size - j->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? j->buf + j->len : NULL, room, fmt, ap);
	va_end(ap);
	j->len += n > 0 ? (size_t)n : 0;
}

static void sj_member(struct stats_json *j, const char *prefix, const char *name, uint64_t v)
{
	const char *sep = j->pretty ? "\n\t" : "";

	sj_printf(j, "%s%s\"%s%s\":%s%llu", j->members++ ? "," : "", sep, prefix, name,
		  j->pretty ? " " : "", (unsigned long long)v);
}

/* Every figure of st as members of the object j holds open. */
static void sj_figures(struct stats_json *j, const struct pc_server_stats *st)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(fields); i++)
		sj_member(j, "", fields[i].name,
			  *(const uint64_t *)((const char *)st + fields[i].off));
	for (unsigned r = 0; r < PC_CLOSE_REASONS; r++)
		sj_member(j, "closed_", pc_close_reason_name((enum pc_close_reason)r),
			  st->closed_reason[r]);
}

/* Close the object; its length, or -ENOSPC when it did not fit. */
static int sj_end(struct stats_json *j)
{
	sj_printf(j, "%s}", j->pretty ? "\n" : "");
	return j->len < j->size ? (int)j->len : -ENOSPC;
}

/* Room for every figure with its name, and the reply's own members. */
#define STATS_JSON_MAX 4096

int pc_server_stats_print(const struct pc_server_stats *st, bool json, FILE *out)
{
	if (json) {
		char text[STATS_JSON_MAX];
		struct stats_json j = { .buf = text, .size = sizeof(text), .pretty = true };

		sj_printf(&j, "{");
		sj_figures(&j, st);
		return sj_end(&j) >= 0 && fprintf(out, "%s\n", text) > 0 ? 0 : -EIO;
	}
	for (size_t i = 0; i < PC_ARRAY_LEN(fields); i++)
		if (fprintf(out, "%-22s %llu\n", fields[i].name,
			    (unsigned long long)*(const uint64_t *)((const char *)st + fields[i].off)) < 0)
			return -EIO;
	for (unsigned r = 0; r < PC_CLOSE_REASONS; r++)
		if (fprintf(out, "closed_%-15s %llu\n", pc_close_reason_name((enum pc_close_reason)r),
			    (unsigned long long)st->closed_reason[r]) < 0)
			return -EIO;
	return 0;
}

uint64_t pc_process_rss(void)
{
	char buf[128];
	unsigned long long size, resident;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t pc_process_maps(void)
{
	char buf[4096];
	uint64_t lines = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return n < 0 ? 0 : lines;
}

/* The reply to PC_MSG_STATS: the whole server's figures, the process's
 * resident memory and memory mappings, the size of one session's state and the shard that
 * answered (the one serving this connection: clients can see how
 * SO_REUSEPORT spread them), as JSON. */
int net_stats_reply(struct pc_session *s)
{
	struct pc_server_stats st;
	char text[STATS_JSON_MAX];
	struct stats_json j = { .buf = text, .size = sizeof(text) };
	int len;

	pc_server_stats(s->sh->srv, -1, &st);
	sj_printf(&j, "{");
	sj_figures(&j, &st);
	sj_member(&j, "", "shards", s->sh->nshards);
	sj_member(&j, "", "shard", s->sh->index);
	sj_member(&j, "", "rss_bytes", pc_process_rss());
	sj_member(&j, "", "maps", pc_process_maps());
	sj_member(&j, "", "session_struct_bytes", s->sh->slab->_stride);
	len = sj_end(&j);
	return len < 0 ? len : pc_session_send(s, PC_MSG_STATS, text, (size_t)len);
}
