/* SPDX-License-Identifier: MIT */
/* percore net: the library's own series, as tables over the statistics
 * structs the engine and the server already keep (one row per figure:
 * a new figure is one more row here). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/metrics_impl.h"
#include "net/net.h"
#include "percore/engine.h"
#include "percore/file.h"
#include "percore/server.h"

#define NS 1e-9

/* ---- the process ------------------------------------------------------------ */

struct proc_fig {
	uint64_t rss;
	uint64_t shards;
};

static int read_process(void *ctx, unsigned i, void *out)
{
	struct pc_metrics *m = ctx;
	struct proc_fig *p = out;

	(void)i;
	p->rss = pc_process_rss();
	p->shards = m->shards;
	return 0;
}

static const struct pc_metric_field process_rows[] = {
	{ "process_resident_memory_bytes", "Resident memory of the process (VmRSS).",
	  PC_METRIC_GAUGE, offsetof(struct proc_fig, rss), 1, NULL, NULL },
	{ "shards", "Shards the registry counts for.", PC_METRIC_GAUGE,
	  offsetof(struct proc_fig, shards), 1, NULL, NULL },
};

int met_add_process(struct pc_metrics *m, char *err, size_t len)
{
	return pc_metrics_add_table(m, process_rows, PC_ARRAY_LEN(process_rows),
				    sizeof(struct proc_fig), false, read_process, m, err, len);
}

/* ---- the engine ------------------------------------------------------------- */

#define ENG(name, kind, field, scale, help) \
	{ name, help, kind, offsetof(struct pc_shard_stats, field), scale, NULL, NULL }
#define C PC_METRIC_COUNTER
#define G PC_METRIC_GAUGE

static const struct pc_metric_field engine_rows[] = {
	ENG("reactor_turns_total", C, turns, 1, "Event loop turns."),
	ENG("reactor_busy_seconds_total", C, busy_ns, NS,
	    "Time the shard was not idle; utilization is its rate."),
	ENG("reactor_idle_seconds_total", C, idle_ns, NS,
	    "Time the shard spent polling empty or sleeping."),
	ENG("reactor_sleeps_total", C, sleeps, 1, "Waits in the kernel."),
	ENG("mesh_wakeups_sent_total", C, wakeups_sent, 1,
	    "Eventfd writes that woke a sleeping shard."),
	ENG("mesh_messages_received_total", C, msgs_in, 1,
	    "Messages run on the shard, replies included."),
	ENG("mesh_messages_sent_total", C, msgs_out, 1, "Messages the shard sent, replies included."),
	ENG("mesh_mails_sent_total", C, mail_out, 1,
	    "Messages sent one at a time through a mailbox line."),
	ENG("mesh_publishes_total", C, publishes, 1, "Ring tails published."),
	ENG("mesh_ring_full_total", C, ring_full, 1, "Sends refused because a ring was full."),
	ENG("mesh_outbox_queued_total", C, outbox_queued, 1, "Messages that waited in an outbox."),
	ENG("mesh_outbox_depth", G, outbox_depth, 1, "Messages in the shard's outboxes now."),
	ENG("mesh_outbox_high_water", G, outbox_high_water, 1,
	    "The most messages the shard's outboxes held at once."),
	ENG("mesh_outbox_refused_total", C, outbox_refused, 1,
	    "Queueing sends refused because the outbox budget was spent."),
	ENG("calls_timed_out_total", C, calls_timed_out, 1, "Calls answered with a timeout."),
	ENG("calls_late_replies_total", C, late_replies, 1, "Replies after their call timed out."),
	ENG("calls_canceled_total", C, calls_canceled, 1, "Calls answered as canceled."),
	ENG("reactor_fd_events_total", C, fd_events, 1, "File descriptor callbacks run."),
	ENG("reactor_timers_fired_total", C, timers_fired, 1, "Timing-wheel timers expired."),
	ENG("reactor_tasks_run_total", C, tasks_run, 1, "Deferred tasks run."),
	ENG("stalls_total", C, stalls, 1, "Times the shard was stuck past the stall threshold."),
	ENG("log_dropped_total", C, log_dropped, 1, "Log lines dropped: the shard's ring was full."),
};

static int read_engine(void *ctx, unsigned i, void *out)
{
	return pc_engine_stats_read(ctx, i, out);
}

static int read_sent_to(void *ctx, unsigned i, void *out)
{
	return pc_engine_sent_to(ctx, i, out);
}

/* Messages per destination: one row per shard, labelled to="k", over an
 * array of n counts. */
static int add_sent_to(struct pc_metrics *m, struct pc_engine *e)
{
	unsigned n = pc_engine_shards(e);
	struct pc_metric_field *rows = calloc(n, sizeof(*rows));
	char (*names)[12] = calloc(n, sizeof(*names));
	int rc = -ENOMEM;

	if (rows && names) {
		for (unsigned k = 0; k < n; k++) {
			snprintf(names[k], sizeof(names[k]), "%u", k);
			rows[k] = (struct pc_metric_field){
				"mesh_messages_sent_to_total", "Messages sent, by destination shard.",
				C, k * sizeof(uint64_t), 1, "to", names[k]
			};
		}
		rc = pc_metrics_add_table(m, rows, n, n * sizeof(uint64_t), true, read_sent_to, e,
					  NULL, 0);
	}
	free(rows);
	free(names);
	return rc;
}

/* The pools' figures as each shard last measured them; reading shard 0
 * asks every shard to measure again, for the next scrape (a shard's
 * figures are only ever read from here, never its pools). */
static int read_mem(void *ctx, unsigned i, void *out)
{
	if (i == 0)
		pc_engine_mem_refresh(ctx);
	return pc_engine_mem_read(ctx, i, out);
}

#define MEM(name, field, help) \
	{ name, help, G, offsetof(struct pc_shard_mem, field), 1, NULL, NULL }

static const struct pc_metric_field mem_rows[] = {
	MEM("shard_slab_bytes", slab_bytes,
	    "Chunk bytes the shard's size-class slabs hold (as of the last scrape)."),
	MEM("shard_slab_used_bytes", slab_used_bytes,
	    "Of those, bytes of objects handed out (as of the last scrape)."),
	MEM("shard_arena_bytes", arena_bytes,
	    "Bytes mapped for the shard's arena (as of the last scrape)."),
};

/* ---- files (percore/file.h) ---------------------------------------------- */

#define FIL(name, kind, field, help) \
	{ name, help, kind, offsetof(struct pc_file_stats, field), 1, NULL, NULL }
#define WITHIN(b, le)                                                                \
	{ "file_ops_within_total",                                         \
	  "File operations finished within `seconds` of their issue (cumulative).", \
	  C, offsetof(struct pc_file_stats, within) + (b) * sizeof(uint64_t), 1, "seconds", le }

static const struct pc_metric_field file_rows[] = {
	FIL("file_reads_total", C, reads, "File reads finished."),
	FIL("file_writes_total", C, writes, "File writes finished."),
	FIL("file_syncs_total", C, syncs, "fsync and fdatasync calls finished."),
	FIL("file_allocates_total", C, allocates, "Preallocations finished."),
	FIL("file_read_bytes_total", C, read_bytes, "Bytes read from files."),
	FIL("file_written_bytes_total", C, write_bytes, "Bytes written to files."),
	FIL("file_errors_total", C, errors, "File operations that failed."),
	FIL("file_queued", G, queued, "File operations waiting in the shard's I/O queue."),
	FIL("file_inflight", G, inflight, "File operations in the kernel or the pool now."),
	FIL("file_depth_high_water", G, depth_high,
	    "The most file operations queued and in flight at once."),
	WITHIN(0, "0.00001"), WITHIN(1, "0.00005"), WITHIN(2, "0.0001"), WITHIN(3, "0.00025"),
	WITHIN(4, "0.0005"), WITHIN(5, "0.001"), WITHIN(6, "0.0025"), WITHIN(7, "0.005"),
	WITHIN(8, "0.01"), WITHIN(9, "0.1"), WITHIN(10, "1"),
};

_Static_assert(PC_ARRAY_LEN(file_rows) == 10 + PC_FILE_LATENCY_BOUNDS,
	       "one latency row per bound");

static int read_files(void *ctx, unsigned i, void *out)
{
	return pc_engine_file_stats_read(ctx, i, out);
}

int pc_metrics_add_engine(struct pc_metrics *m, struct pc_engine *e)
{
	int rc;

	if (!e || pc_engine_shards(e) > m->shards)
		return -EINVAL;
	rc = pc_metrics_add_table(m, engine_rows, PC_ARRAY_LEN(engine_rows),
				  sizeof(struct pc_shard_stats), true, read_engine, e, NULL, 0);
	if (!rc)
		rc = pc_metrics_add_table(m, mem_rows, PC_ARRAY_LEN(mem_rows),
					  sizeof(struct pc_shard_mem), true, read_mem, e, NULL, 0);
	if (!rc)
		rc = pc_metrics_add_table(m, file_rows, PC_ARRAY_LEN(file_rows),
					  sizeof(struct pc_file_stats), true, read_files, e, NULL, 0);
	return rc ? rc : add_sent_to(m, e);
}

/* ---- the server ------------------------------------------------------------- */

#define SRV(name, kind, field, help) \
	{ name, help, kind, offsetof(struct pc_server_stats, field), 1, NULL, NULL }
#define REFUSED(why, field)                                                     \
	{ "sessions_refused_total", "Connections refused at once, by reason.", C, \
	  offsetof(struct pc_server_stats, field), 1, "reason", why }

static const struct pc_metric_field server_rows[] = {
	SRV("sessions_open", G, sessions, "Sessions open now."),
	SRV("sessions_accepted_total", C, accepted, "Connections accepted."),
	SRV("sessions_moved_out_total", C, moved_out, "Sessions moved to another shard."),
	SRV("sessions_moved_in_total", C, moved_in, "Sessions moved here from another shard."),
	REFUSED("shard_limit", rejected_shard_limit),
	REFUSED("addr_limit", rejected_addr_limit),
	REFUSED("accept_error", accept_errors),
	SRV("frames_received_total", C, frames_in, "Frames received (heartbeats not counted)."),
	SRV("frames_sent_total", C, frames_out, "Frames sent (heartbeats not counted)."),
	SRV("received_bytes_total", C, bytes_in, "Bytes received from clients."),
	SRV("sent_bytes_total", C, bytes_out, "Bytes written to clients."),
	SRV("heartbeats_received_total", C, heartbeats_in, "Heartbeat frames received."),
	SRV("heartbeats_sent_total", C, heartbeats_out, "Heartbeat frames sent."),
	SRV("frames_malformed_total", C, malformed, "Frames refused as malformed."),
	SRV("frames_oversize_total", C, oversize, "Frames refused as over the body maximum."),
	SRV("frames_unknown_id_total", C, unknown_ids, "Frames no handler was registered for."),
	SRV("error_replies_total", C, error_replies, "Error frames written before closing."),
	SRV("read_pauses_total", C, read_pauses, "Sessions stopped reading at the high water."),
	SRV("sessions_paused", G, paused, "Sessions not reading now (backpressure)."),
	SRV("send_refused_total", C, send_refused, "Sends over a session's output bound."),
	SRV("send_to_gone_total", C, send_to_gone, "Sends to a session already closed."),
	SRV("replies_discarded_total", C, replies_discarded,
	    "Sequenced replies for a closed session."),
	SRV("drain_aborted_total", C, drain_aborted, "Sessions cut at the drain deadline."),
	SRV("session_queued_bytes", G, queued_bytes, "Output not yet written."),
	SRV("session_buffered_bytes", G, buffered_bytes, "Input received, not yet consumed."),
	SRV("session_state_bytes", G, session_bytes, "Sessions' own state (slab objects)."),
	SRV("session_buffer_bytes", G, buffer_bytes, "Ring capacity attached to sessions."),
	SRV("buffer_pool_bytes", G, pool_bytes, "Ring capacity idle in the shard's pools."),
};

static int read_server(void *ctx, unsigned i, void *out)
{
	return pc_server_stats(ctx, (int)i, out);
}

/* The close reasons, one row each, after the fixed rows. */
static unsigned server_table(struct pc_metric_field *rows)
{
	unsigned n = PC_ARRAY_LEN(server_rows);

	memcpy(rows, server_rows, sizeof(server_rows));
	for (unsigned r = 0; r < PC_CLOSE_REASONS; r++)
		rows[n++] = (struct pc_metric_field){
			"sessions_closed_total", "Sessions closed, by reason.", C,
			offsetof(struct pc_server_stats, closed_reason) + r * sizeof(uint64_t), 1,
			"reason", pc_close_reason_name((enum pc_close_reason)r)
		};
	return n;
}

/* Request handling time: 100 ns to 1 s, in nanoseconds. */
static const uint64_t latency_bounds[] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000, 100000000,
	250000000, 500000000, 1000000000,
};

int pc_metrics_add_server(struct pc_metrics *m, struct pc_server *srv)
{
	struct pc_metric_field rows[PC_ARRAY_LEN(server_rows) + PC_CLOSE_REASONS];
	struct pc_metric *lat;
	unsigned n = server_table(rows);
	int rc;

	if (!srv || pc_server_shards(srv) > m->shards || net_server_latency(srv))
		return -EINVAL;
	rc = pc_metrics_add_engine(m, pc_server_engine(srv));
	if (!rc)
		rc = pc_metrics_add_table(m, rows, n, sizeof(struct pc_server_stats), true,
					  read_server, srv, NULL, 0);
	if (rc)
		return rc;
	lat = pc_metrics_histogram(m, "request_duration_seconds",
				   "Time a frame handler ran (framed servers).", latency_bounds,
				   PC_ARRAY_LEN(latency_bounds), NS, NULL, 0);
	if (!lat)
		return -ENOSPC;
	net_server_set_latency(srv, lat);
	return 0;
}
