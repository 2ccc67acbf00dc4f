/* SPDX-License-Identifier: MIT */
/* percore net: the server's statistics: reading them from any thread,
 * printing them, and answering PC_MSG_STATS frames. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
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
	FIELD(sessions), FIELD(accepted), FIELD(closed),
	FIELD(rejected_shard_limit), FIELD(rejected_addr_limit), FIELD(accept_errors),
	FIELD(malformed), FIELD(oversize), FIELD(error_replies), FIELD(unknown_ids),
	FIELD(frames_in), FIELD(frames_out), FIELD(bytes_in), FIELD(bytes_out),
	FIELD(heartbeats_in), FIELD(heartbeats_out),
	FIELD(read_pauses), FIELD(paused), FIELD(send_refused), FIELD(send_to_gone), FIELD(replies_discarded), FIELD(read_holds),
	FIELD(queued_bytes), FIELD(buffered_bytes), FIELD(session_bytes),
	FIELD(buffer_bytes), FIELD(pool_bytes), FIELD(buffers_mapped), FIELD(drain_aborted),
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

cJSON *pc_server_stats_json(const struct pc_server_stats *st)
{
	cJSON *o = cJSON_CreateObject();
	char name[64];

	if (!o)
		return NULL;
	for (size_t i = 0; i < PC_ARRAY_LEN(fields); i++)
		cJSON_AddNumberToObject(o, fields[i].name,
					(double)*(const uint64_t *)((const char *)st + fields[i].off));
	for (unsigned r = 0; r < PC_CLOSE_REASONS; r++) {
		snprintf(name, sizeof(name), "closed_%s", pc_close_reason_name((enum pc_close_reason)r));
		cJSON_AddNumberToObject(o, name, (double)st->closed_reason[r]);
	}
	return o;
}

int pc_server_stats_print(const struct pc_server_stats *st, bool json, FILE *out)
{
	if (json) {
		cJSON *o = pc_server_stats_json(st);
		char *text = o ? cJSON_Print(o) : NULL;
		int rc = text && fprintf(out, "%s\n", text) > 0 ? 0 : -EIO;

		cJSON_free(text);
		cJSON_Delete(o);
		return rc;
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

/* The reply to PC_MSG_STATS: the whole server's figures, the process's
 * resident memory, the size of one session's state and the shard that
 * answered (the one serving this connection: clients can see how
 * SO_REUSEPORT spread them), as JSON. */
int net_stats_reply(struct pc_session *s)
{
	struct pc_server *srv = s->sh->srv;
	struct pc_server_stats st;
	cJSON *o;
	char *text;
	int rc = -ENOMEM;

	pc_server_stats(srv, -1, &st);
	o = pc_server_stats_json(&st);
	if (!o)
		return -ENOMEM;
	cJSON_AddNumberToObject(o, "shards", s->sh->nshards);
	cJSON_AddNumberToObject(o, "shard", s->sh->index);
	cJSON_AddNumberToObject(o, "rss_bytes", (double)pc_process_rss());
	cJSON_AddNumberToObject(o, "session_struct_bytes", (double)s->sh->slab->_stride);
	text = cJSON_PrintUnformatted(o);
	if (text)
		rc = pc_session_send(s, PC_MSG_STATS, text, strlen(text));
	cJSON_free(text);
	cJSON_Delete(o);
	return rc;
}
