/* SPDX-License-Identifier: MIT */
/* percore stat: fetching /metrics over HTTP/1.0 and reading the series the
 * live view needs out of the text exposition. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/clock.h"
#include "percore/listener.h"
#include "stat_scrape.h"

int stat_parse_target(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *colon = strrchr(s, ':');
	char host[128], *end;
	unsigned long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port == 0 || port > 65535)
		return -EINVAL;
	return pc_sockaddr_parse(*host ? host : "127.0.0.1", (uint16_t)port, ss, len);
}

/* The value of label `key` in labels (the text between braces). */
static bool label(const char *labels, const char *key, char *out, size_t size)
{
	char pat[32];
	const char *p, *q;

	snprintf(pat, sizeof(pat), "%s=\"", key);
	for (p = strstr(labels, pat); p && p != labels && p[-1] != '{' && p[-1] != ',';
	     p = strstr(p + 1, pat))
		;
	if (!p)
		return false;
	p += strlen(pat);
	q = strchr(p, '"');
	if (!q || (size_t)(q - p) >= size)
		return false;
	memcpy(out, p, (size_t)(q - p));
	out[q - p] = '\0';
	return true;
}

static void latency_bucket(struct stat_shard *s, const char *le, double v)
{
	if (!strcmp(le, "+Inf")) {
		s->cum[s->nle] = v;
		return;
	}
	if (s->nle < STAT_MAX_LE) {
		s->le[s->nle] = strtod(le, NULL);
		s->cum[s->nle++] = v;
	}
}

/* One series line: name{labels} value. */
static void take_line(struct stat_sample *out, const char *text)
{
	char line[768], name[128], labels[512] = "", buf[32];
	size_t len = strcspn(text, "\n");
	const char *brace, *sp;

	if (len >= sizeof(line))
		return; /* no series we read is that long */
	memcpy(line, text, len);
	line[len] = '\0';
	brace = strchr(line, '{');
	struct stat_shard *s;
	double v;

	sp = brace ? strchr(brace, '}') : strchr(line, ' ');
	if (!sp)
		return;
	size_t nlen = (size_t)((brace ? brace : sp) - line);
	if (nlen >= sizeof(name))
		return;
	memcpy(name, line, nlen);
	name[nlen] = '\0';
	if (brace && (size_t)(sp - brace) < sizeof(labels)) {
		memcpy(labels, brace, (size_t)(sp - brace + 1));
		labels[sp - brace + 1] = '\0';
	}
	v = strtod(brace ? sp + 1 : sp, NULL);
	if (!strcmp(name, "percore_process_resident_memory_bytes"))
		out->rss_bytes = v;
	if (!label(labels, "shard", buf, sizeof(buf)))
		return;
	unsigned i = (unsigned)strtoul(buf, NULL, 10);
	if (i >= STAT_MAX_SHARDS)
		return;
	s = &out->sh[i];
	s->seen = true;
	if (i + 1 > out->nshards)
		out->nshards = i + 1;
	if (!strcmp(name, "percore_reactor_busy_seconds_total"))
		s->busy_s = v;
	else if (!strcmp(name, "percore_reactor_idle_seconds_total"))
		s->idle_s = v;
	else if (!strcmp(name, "percore_frames_received_total"))
		s->frames_in = v;
	else if (!strcmp(name, "percore_frames_sent_total"))
		s->frames_out = v;
	else if (!strcmp(name, "percore_mesh_messages_received_total"))
		s->mesh_in = v;
	else if (!strcmp(name, "percore_sessions_open"))
		s->sessions = v;
	else if (!strcmp(name, "percore_request_duration_seconds_bucket") &&
		 label(labels, "le", buf, sizeof(buf)))
		latency_bucket(s, buf, v);
}

int stat_parse_text(const char *text, struct stat_sample *out)
{
	bool any = false;

	memset(out, 0, sizeof(*out));
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (*p == '#' || *p == '\n')
			continue;
		any |= !strncmp(p, "percore_", 8);
		take_line(out, p);
	}
	return any ? 0 : -EPROTO;
}

/* Connect within the deadline. Returns the fd or -errno. */
static int connect_by(const struct sockaddr_storage *addr, socklen_t len, int timeout_ms)
{
	int fd = pc_connect_start((const struct sockaddr *)addr, len);
	struct pollfd p;
	int rc;

	if (fd < 0)
		return fd;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	rc = poll(&p, 1, timeout_ms);
	rc = rc == 0 ? -ETIMEDOUT : rc < 0 ? -errno : pc_connect_result(fd);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Send the request and read the answer to its end (the endpoint closes). */
static int fetch(int fd, int timeout_ms, char **text, size_t *n)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nAccept: text/plain\r\n\r\n";
	uint64_t start = pc_now_ns();
	size_t cap = 1 << 16;

	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		return -EIO;
	*text = malloc(cap);
	*n = 0;
	while (*text) {
		int left = timeout_ms - (int)(pc_elapsed(pc_now_ns(), start) / 1000000);
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -ETIMEDOUT;
		if (*n + 1 == cap) {
			char *more = realloc(*text, cap *= 2);
			if (!more)
				return -ENOMEM;
			*text = more;
		}
		ssize_t got = recv(fd, *text + *n, cap - 1 - *n, 0);
		if (got < 0)
			return -errno;
		if (got == 0) {
			(*text)[*n] = '\0';
			return 0;
		}
		*n += (size_t)got;
	}
	return -ENOMEM;
}

int stat_scrape(const struct sockaddr_storage *addr, socklen_t len, int timeout_ms,
		struct stat_sample *out, char *err, size_t errlen)
{
	char *text = NULL;
	size_t n = 0;
	int status = 0, fd = connect_by(addr, len, timeout_ms), rc;

	if (fd < 0) {
		snprintf(err, errlen, "cannot connect: %s", strerror(-fd));
		return fd;
	}
	rc = fetch(fd, timeout_ms, &text, &n);
	close(fd);
	if (rc) {
		snprintf(err, errlen, "cannot read /metrics: %s", strerror(-rc));
	} else if (sscanf(text, "HTTP/1.%*d %d", &status) != 1 || status != 200) {
		snprintf(err, errlen, "/metrics answered %d, not 200", status);
		rc = -EPROTO;
	} else {
		const char *body = strstr(text, "\r\n\r\n");
		rc = body ? stat_parse_text(body + 4, out) : -EPROTO;
		if (rc)
			snprintf(err, errlen, "the answer holds no percore series");
	}
	out->t_ns = pc_now_ns();
	free(text);
	return rc;
}
