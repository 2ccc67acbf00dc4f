/* SPDX-License-Identifier: MIT */
/* percore rt: a log line as a record and a record as text.
 *
 * The producer (often a shard) only runs the caller's printf and copies
 * keys and values: quoting, escaping and the clock's calendar form are
 * the writer's work, off the shard. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rt/log_impl.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const char *const format_names[] = { "logfmt", "json" };

/* The index of name in names, or -1. */
static int find_name(const char *const *names, unsigned n, const char *name)
{
	for (unsigned i = 0; name && i < n; i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -1;
}

const char *pc_log_level_name(enum pc_log_level level)
{
	return (unsigned)level < PC_ARRAY_LEN(level_names) ? level_names[level] : "?";
}

int pc_log_level_parse(const char *name, enum pc_log_level *out)
{
	int i = find_name(level_names, PC_ARRAY_LEN(level_names), name);

	if (i < 0)
		return -EINVAL;
	*out = (enum pc_log_level)i;
	return 0;
}

const char *pc_log_format_name(enum pc_log_format format)
{
	return (unsigned)format < PC_ARRAY_LEN(format_names) ? format_names[format] : "?";
}

int pc_log_format_parse(const char *name, enum pc_log_format *out)
{
	int i = find_name(format_names, PC_ARRAY_LEN(format_names), name);

	if (i < 0)
		return -EINVAL;
	*out = (enum pc_log_format)i;
	return 0;
}

/* ---- encoding (producer) ------------------------------------------- */

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts); /* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Append one field at p if it fits before end; returns the new end of
 * the record, or p when it does not fit. */
static unsigned char *put_field(unsigned char *p, const unsigned char *end,
				const struct pc_log_field *f)
{
	char num[24];
	const char *key = f->key ? f->key : "";
	const char *val = num;
	size_t klen = strnlen(key, 64), vlen;

	if (f->kind == PC_LOG_FIELD_INT)
		snprintf(num, sizeof(num), "%" PRId64, f->i);
	else if (f->kind == PC_LOG_FIELD_UINT)
		snprintf(num, sizeof(num), "%" PRIu64, f->u);
	else
		val = f->str ? f->str : "";
	vlen = strnlen(val, PC_LOG_MAX_RECORD);
	if ((size_t)(end - p) < 4 + klen + vlen)
		return p;
	p[0] = f->kind == PC_LOG_FIELD_STR ? 's' : 'n';
	p[1] = (unsigned char)klen;
	memcpy(p + 2, &(uint16_t){ (uint16_t)vlen }, 2);
	memcpy(p + 4, key, klen);
	memcpy(p + 4 + klen, val, vlen);
	return p + 4 + klen + vlen;
}

size_t rt_log_encode(unsigned char *buf, enum pc_log_level level, const struct pc_log_field *f,
		     unsigned n, const char *fmt, va_list ap)
{
	struct rt_log_rec h = { .level = (uint8_t)level, .ts_ns = wall_ns() };
	unsigned char *p = buf + sizeof(h), *end = buf + RT_LOG_REC_MAX;
	int len = vsnprintf((char *)p, PC_LOG_MAX_RECORD + 1, fmt, ap);

	/* vsnprintf wrote a NUL after what fits: the record does not keep it
	 * (the first field overwrites it). */
	if (len < 0)
		len = 0;
	h.msglen = (uint16_t)(len > (int)PC_LOG_MAX_RECORD ? (int)PC_LOG_MAX_RECORD : len);
	p += h.msglen;
	for (unsigned i = 0; i < n && i < 255; i++) {
		unsigned char *q = put_field(p, end, &f[i]);

		if (q == p)
			break;
		p = q;
		h.nfields++;
	}
	h.len = (uint32_t)(p - buf);
	memcpy(buf, &h, sizeof(h));
	return h.len;
}

static size_t __attribute__((format(printf, 5, 6)))
encode_fixed(unsigned char *buf, enum pc_log_level level, const struct pc_log_field *f,
	     unsigned n, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	len = rt_log_encode(buf, level, f, n, fmt, ap);
	va_end(ap);
	return len;
}

size_t rt_log_encode_drops(unsigned char *buf, uint64_t n)
{
	struct pc_log_field f[] = { PC_LOG_UINT("dropped", n) };

	return encode_fixed(buf, PC_LOG_WARN, f, 1, "dropped %" PRIu64 " lines", n);
}

/* ---- rendering (writer) -------------------------------------------- */

struct out {
	char *p, *end;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (n > (size_t)(o->end - o->p))
		n = (size_t)(o->end - o->p);
	memcpy(o->p, s, n);
	o->p += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A quoted string, escaped the JSON way (which logfmt readers also take):
 * quote, backslash and control bytes. */
/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0
 * (a stray continuation, an overlong form, a surrogate, past U+10FFFF, or
 * cut short). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		     c >= 0xf0 && c <= 0xf4 ? 4 : 0;

	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (!len || len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* A quoted string, escaped the JSON way (which logfmt readers also take):
 * quote, backslash and control bytes; a byte that is not part of valid
 * UTF-8 becomes U+FFFD, so every line is valid JSON. */
static void put_quoted(struct out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;

	put(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = u[i];
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		size_t k;

		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			put(o, esc, 2);
		} else if (c == '\n' || c == '\t') {
			esc[1] = c == '\n' ? 'n' : 't';
			put(o, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			put(o, esc, 6);
		} else if (c < 0x80) {
			put(o, &s[i], 1);
		} else if ((k = utf8_len(u + i, n - i))) {
			put(o, &s[i], k);
			i += k - 1;
		} else {
			puts_(o, "\\ufffd");
		}
	}
	put(o, "\"", 1);
}

/* logfmt leaves a value bare when it holds no space, quote, '=' or
 * control byte and is not empty. */
static bool logfmt_bare(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c == '"' || c == '=' || c == 0x7f || c == '\\')
			return false;
	}
	return true;
}

/* A string is quoted in JSON, and in logfmt unless it can stand bare; a
 * number is always bare. */
static void put_value(struct out *o, const char *v, size_t n, bool str, bool json)
{
	if (str && (json || !logfmt_bare(v, n)))
		put_quoted(o, v, n);
	else
		put(o, v, n);
}

/* Keys keep letters, digits, '_', '.', '-'; anything else becomes '_'. */
static void put_key(struct out *o, const char *k, size_t n)
{
	if (!n)
		put(o, "_", 1);
	for (size_t i = 0; i < n; i++) {
		char c = k[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';

		put(o, ok ? &k[i] : "_", 1);
	}
}

static void put_ts(struct out *o, uint64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;
	char text[64];

	gmtime_r(&sec, &tm);
	snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ns % 1000000000u / 1000));
	puts_(o, text);
}

static void put_head(struct out *o, const struct rt_log_rec *r, int shard, bool json)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", shard);
	puts_(o, json ? "{\"ts\":\"" : "ts=");
	put_ts(o, r->ts_ns);
	puts_(o, json ? "\",\"level\":\"" : " level=");
	puts_(o, pc_log_level_name((enum pc_log_level)r->level));
	puts_(o, json ? "\",\"shard\":" : " shard=");
	puts_(o, num);
	puts_(o, json ? ",\"msg\":" : " msg=");
	put_value(o, (const char *)(r + 1), r->msglen, true, json);
}

static void put_fields(struct out *o, const struct rt_log_rec *r, bool json)
{
	const unsigned char *p = (const unsigned char *)(r + 1) + r->msglen;

	for (unsigned i = 0; i < r->nfields; i++) {
		uint16_t vlen;
		const char *key = (const char *)p + 4, *val = key + p[1];
		bool str = p[0] == 's';

		memcpy(&vlen, p + 2, 2);
		puts_(o, json ? ",\"" : " ");
		put_key(o, key, p[1]);
		puts_(o, json ? "\":" : "=");
		put_value(o, val, vlen, str, json);
		p = (const unsigned char *)val + vlen;
	}
}

size_t rt_log_render(const struct rt_log_rec *r, int shard, enum pc_log_format format, char *out)
{
	bool json = format == PC_LOG_JSON;
	/* Room kept for the closing brace and newline. */
	struct out o = { out, out + RT_LOG_LINE_MAX - 2 };

	put_head(&o, r, shard, json);
	put_fields(&o, r, json);
	if (json)
		*o.p++ = '}';
	*o.p++ = '\n';
	return (size_t)(o.p - out);
}
