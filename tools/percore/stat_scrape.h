/* SPDX-License-Identifier: MIT */
/* percore stat: one scrape of a percore /metrics endpoint, reduced to the
 * per-shard figures the live view shows. */
#ifndef PERCORE_TOOL_STAT_SCRAPE_H
#define PERCORE_TOOL_STAT_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define STAT_MAX_SHARDS 1024
#define STAT_MAX_LE 64

struct stat_shard {
	bool seen;
	double busy_s, idle_s;        /* reactor time, seconds */
	double frames_in, frames_out; /* session frames */
	double mesh_in;               /* mesh messages run */
	double sessions;              /* open now */
	unsigned nle;                 /* request latency buckets (finite) */
	double le[STAT_MAX_LE];       /* upper bounds, seconds */
	double cum[STAT_MAX_LE + 1];  /* cumulative counts, the last +Inf */
};

struct stat_sample {
	uint64_t t_ns;                /* when it was taken */
	unsigned nshards;             /* highest shard seen + 1 */
	double rss_bytes;
	struct stat_shard sh[STAT_MAX_SHARDS];
};

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (127.0.0.1) into an address.
 * Returns 0 or -EINVAL. */
int stat_parse_target(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* GET /metrics from addr within timeout_ms and parse it into *out.
 * Returns 0, or -errno with a one-line reason in err (cannot connect,
 * not HTTP 200, not a percore exposition). */
int stat_scrape(const struct sockaddr_storage *addr, socklen_t len, int timeout_ms,
		struct stat_sample *out, char *err, size_t errlen);

/* Parse exposition text (for tests of the parser and for stat_scrape). */
int stat_parse_text(const char *text, struct stat_sample *out);

#endif
