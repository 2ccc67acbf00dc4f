/* SPDX-License-Identifier: MIT */
/* CONFIG GET, CONFIG SET and CONFIG HELP over struct kv_config, with Redis
 * 7's parameter names, value forms and errors. A parameter with a fixed
 * value (databases: what this server does not have) is
 * reported as Redis reports its equivalent, and may be "set" only to the
 * value it has. */
#include "cmd_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "glob.h"
#include "num.h"

enum ptype {
	P_MEM,      /* uint64_t, bytes with an optional unit */
	P_U32,      /* uint32_t */
	P_I32,      /* int32_t, negative values allowed */
	P_U16,      /* uint16_t */
	P_POLICY,   /* enum kv_policy */
	P_STR,      /* char[] in the config (max: its size) */
	P_DIR,      /* P_STR naming a directory that exists */
	P_BOOL,     /* bool, yes or no */
	P_FIXED,    /* a constant text */
	P_COBL,     /* client-output-buffer-limit: the normal class's hard limit */
	P_FSYNC,    /* enum kv_fsync */
	P_SAVE,     /* save: the rules, "<seconds> <changes> ..." */
};

struct param {
	const char *name;
	enum ptype type;
	bool mutable_;
	size_t off;             /* the field in struct kv_config */
	uint64_t min, max;      /* numbers: the accepted range */
	const char *fixed;      /* P_FIXED: the value */
};

#define FIELD(f) offsetof(struct kv_config, f)
#define I32MAX   2147483647ull

/* Sorted by name, as CONFIG GET * lists them. */
static const struct param params[] = {
	{ "aof-load-truncated", P_BOOL, true, FIELD(aof_load_truncated), 0, 0, NULL },
	{ "appendfilename", P_STR, false, FIELD(appendfilename), 0, 0, NULL },
	{ "appendfsync", P_FSYNC, true, FIELD(appendfsync), 0, 0, NULL },
	{ "appendonly", P_BOOL, true, FIELD(appendonly), 0, 0, NULL },
	{ "auto-aof-rewrite-min-size", P_MEM, true, FIELD(auto_aof_rewrite_min_size), 0, INT64_MAX, NULL },
	{ "auto-aof-rewrite-percentage", P_U32, true, FIELD(auto_aof_rewrite_percentage), 0, I32MAX, NULL },
	{ "bind", P_STR, false, FIELD(bind), 0, 0, NULL },
	{ "client-output-buffer-limit", P_COBL, true, FIELD(client_output_limit), 0, UINT64_MAX, NULL },
	{ "databases", P_FIXED, false, 0, 0, 0, "1" },
	{ "dbfilename", P_STR, true, FIELD(dbfilename), 0, sizeof(((struct kv_config *)0)->dbfilename), NULL },
	{ "dir", P_DIR, true, FIELD(dir), 0, sizeof(((struct kv_config *)0)->dir), NULL },
	/* the ziplist names are Redis 7.0's aliases of the listpack ones */
	{ "hash-max-listpack-entries", P_U32, true, FIELD(hash_max_listpack_entries), 0, UINT32_MAX, NULL },
	{ "hash-max-listpack-value", P_MEM, true, FIELD(hash_max_listpack_value), 0, UINT32_MAX, NULL },
	{ "hash-max-ziplist-entries", P_U32, true, FIELD(hash_max_listpack_entries), 0, UINT32_MAX, NULL },
	{ "hash-max-ziplist-value", P_MEM, true, FIELD(hash_max_listpack_value), 0, UINT32_MAX, NULL },
	{ "hz", P_U32, true, FIELD(hz), 0, I32MAX, NULL },
	{ "list-max-listpack-size", P_I32, true, FIELD(list_max_listpack_size), 0, 0, NULL },
	{ "list-max-ziplist-size", P_I32, true, FIELD(list_max_listpack_size), 0, 0, NULL },
	{ "maxclients", P_U32, true, FIELD(maxclients), 1, UINT32_MAX, NULL },
	{ "maxmemory", P_MEM, true, FIELD(maxmemory), 0, UINT64_MAX, NULL },
	{ "maxmemory-policy", P_POLICY, true, FIELD(maxmemory_policy), 0, 0, NULL },
	{ "maxmemory-samples", P_U32, true, FIELD(maxmemory_samples), 1, I32MAX, NULL },
	{ "port", P_U16, false, FIELD(port), 0, 65535, NULL },
	{ "proto-max-bulk-len", P_MEM, true, FIELD(proto_max_bulk_len), 1024 * 1024, INT64_MAX, NULL },
	{ "rdbchecksum", P_BOOL, true, FIELD(rdbchecksum), 0, 0, NULL },
	{ "rdbcompression", P_BOOL, true, FIELD(rdbcompression), 0, 0, NULL },
	{ "save", P_SAVE, true, 0, 0, 0, NULL },
	{ "set-max-intset-entries", P_U32, true, FIELD(set_max_intset_entries), 0, UINT32_MAX, NULL },
	{ "tcp-keepalive", P_U32, true, FIELD(tcp_keepalive), 0, I32MAX, NULL },
	{ "timeout", P_U32, true, FIELD(timeout), 0, I32MAX, NULL },
	{ "zset-max-listpack-entries", P_U32, true, FIELD(zset_max_listpack_entries), 0, UINT32_MAX, NULL },
	{ "zset-max-listpack-value", P_MEM, true, FIELD(zset_max_listpack_value), 0, UINT32_MAX, NULL },
	{ "zset-max-ziplist-entries", P_U32, true, FIELD(zset_max_listpack_entries), 0, UINT32_MAX, NULL },
	{ "zset-max-ziplist-value", P_MEM, true, FIELD(zset_max_listpack_value), 0, UINT32_MAX, NULL },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

const char *const kv_fsync_names[] = { "always", "everysec", "no" };

/* Redis's policy names; ours are the first two, the rest refused. */
static const char *const policies[] = { "noeviction", "allkeys-lru" };
#define POLICY_CHOICES "volatile-lru, volatile-lfu, volatile-random, volatile-ttl, " \
	"allkeys-lru, allkeys-lfu, allkeys-random, noeviction"

static void *field(const struct kv_config *cfg, const struct param *p)
{
	return (char *)cfg + p->off;
}

/* The parameter's value as CONFIG GET prints it, into buf (512 bytes or
 * more). */
static const char *value_of(const struct kv_config *cfg, const struct param *p, char *buf,
			    size_t cap)
{
	switch (p->type) {
	case P_MEM:
		snprintf(buf, cap, "%llu", (unsigned long long)*(uint64_t *)field(cfg, p));
		return buf;
	case P_U32:
		snprintf(buf, cap, "%u", *(uint32_t *)field(cfg, p));
		return buf;
	case P_U16:
		snprintf(buf, cap, "%u", *(uint16_t *)field(cfg, p));
		return buf;
	case P_I32:
		snprintf(buf, cap, "%d", *(int32_t *)field(cfg, p));
		return buf;
	case P_POLICY:
		return policies[*(enum kv_policy *)field(cfg, p)];
	case P_FSYNC:
		return kv_fsync_names[*(enum kv_fsync *)field(cfg, p)];
	case P_STR:
	case P_DIR:
		return (const char *)field(cfg, p);
	case P_BOOL:
		return *(bool *)field(cfg, p) ? "yes" : "no";
	case P_SAVE:
		kv_config_save_format(cfg, buf, cap);
		return buf;
	case P_COBL:
		snprintf(buf, cap, "normal %llu 0 0 slave 268435456 67108864 60 pubsub %llu %llu %u",
			 (unsigned long long)cfg->client_output_limit,
			 (unsigned long long)cfg->pubsub_output_limit,
			 (unsigned long long)cfg->pubsub_soft_limit, cfg->pubsub_soft_seconds);
		return buf;
	case P_FIXED:
		break;
	}
	return p->fixed;
}

static const struct param *find_param(const char *name, size_t len)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (strlen(params[i].name) == len && strncasecmp(params[i].name, name, len) == 0)
			return &params[i];
	return NULL;
}

/* The settings the call runs with (Redis's defaults when it has none). */
static void current(const struct kv_call *c, struct kv_config *cfg)
{
	if (c->cfg)
		*cfg = *c->cfg;
	else
		kv_config_init(cfg);
}

/* CONFIG GET pattern [pattern ...]: each parameter once, in table order;
 * patterns match without regard to case, as Redis's do. */
void kv_config_get(struct kv_call *c)
{
	struct kv_config cfg;
	bool hit[NPARAMS] = { false };
	size_t n = 0;
	char buf[512];

	current(c, &cfg);
	for (uint32_t a = 2; a < c->argc; a++) {
		char pat[128];
		size_t plen = c->argl[a] < sizeof(pat) ? c->argl[a] : sizeof(pat);
		for (size_t i = 0; i < plen; i++)
			pat[i] = (char)(c->argv[a][i] >= 'A' && c->argv[a][i] <= 'Z' ?
					c->argv[a][i] + 32 : c->argv[a][i]);
		for (size_t i = 0; i < NPARAMS; i++) {
			if (hit[i] || c->argl[a] > sizeof(pat) ||
			    !kv_glob_match(pat, plen, params[i].name, strlen(params[i].name)))
				continue;
			hit[i] = true;
			n++;
		}
	}
	kv_reply_array(c->out, 2 * n);
	for (size_t i = 0; i < NPARAMS; i++) {
		if (!hit[i])
			continue;
		const char *v = value_of(&cfg, &params[i], buf, sizeof(buf));
		kv_reply_bulk(c->out, params[i].name, strlen(params[i].name));
		kv_reply_bulk(c->out, v, strlen(v));
	}
}

/* Reads a number in p's range; on failure writes Redis's reason. */
static bool parse_number(const struct param *p, const char *s, size_t n, uint64_t *v,
			 char *why, size_t whylen)
{
	int64_t ll;
	bool ok = p->type == P_MEM ? kv_memtoull(s, n, v) : kv_str2ll(s, n, &ll) && ll >= 0;
	if (p->type != P_MEM && ok)
		*v = (uint64_t)ll;
	if (!ok && p->type == P_MEM) {
		snprintf(why, whylen, KV_WHY_MEMORY);
		return false;
	}
	if (!ok && !kv_str2ll(s, n, &ll)) {
		snprintf(why, whylen, KV_WHY_INTEGER);
		return false;
	}
	if (!ok || *v < p->min || *v > p->max) {
		snprintf(why, whylen, KV_WHY_RANGE_FMT,
			 (unsigned long long)p->min, (unsigned long long)p->max);
		return false;
	}
	return true;
}

/* client-output-buffer-limit: "<class> <hard> <soft> <seconds>" groups;
 * the normal class's hard limit is kept, a soft limit on it refused
 * (this server closes normal clients at the hard limit only), and the
 * pubsub class's three (subscribers). */
static bool parse_cobl(struct kv_config *cfg, const char *s, size_t n, char *why, size_t whylen)
{
	char buf[256], *save = NULL;
	if (n >= sizeof(buf))
		goto bad;
	memcpy(buf, s, n);
	buf[n] = '\0';
	for (char *cls = strtok_r(buf, " ", &save); cls; cls = strtok_r(NULL, " ", &save)) {
		char *f[3];
		uint64_t v[3];
		for (int i = 0; i < 3; i++)
			if (!(f[i] = strtok_r(NULL, " ", &save)) || !kv_memtoull(f[i], strlen(f[i]), &v[i]))
				goto bad;
		if (strcasecmp(cls, "normal") == 0) {
			if (v[1] || v[2]) {
				snprintf(why, whylen, KV_WHY_SOFT_LIMIT);
				return false;
			}
			cfg->client_output_limit = v[0];
		} else if (strcasecmp(cls, "pubsub") == 0) {
			if (v[2] > UINT32_MAX)
				goto bad;
			cfg->pubsub_output_limit = v[0];
			cfg->pubsub_soft_limit = v[1];
			cfg->pubsub_soft_seconds = (uint32_t)v[2];
		} else if (strcasecmp(cls, "slave") && strcasecmp(cls, "replica")) {
			goto bad;
		}
	}
	return true;
bad:
	snprintf(why, whylen, KV_WHY_BUFFER_LIMIT);
	return false;
}

/* maxmemory-policy: one of ours; Redis's other names get our own reason,
 * anything else Redis's list. */
static bool set_policy(struct kv_config *cfg, const struct param *p, const char *s, size_t n,
		       char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (strlen(policies[i]) == n && strncasecmp(policies[i], s, n) == 0) {
			*(enum kv_policy *)field(cfg, p) = (enum kv_policy)i;
			return true;
		}
	const char *q = POLICY_CHOICES;
	bool redis_has = false;
	for (size_t len; *q; q += len + (q[len] ? 2 : 0)) {
		len = strcspn(q, ",");
		redis_has |= len == n && strncasecmp(q, s, n) == 0;
	}
	if (redis_has)
		snprintf(why, whylen, "this server has only the noeviction and allkeys-lru policies");
	else
		snprintf(why, whylen, KV_WHY_ONE_OF_FMT, POLICY_CHOICES);
	return false;
}

/* A signed 32-bit setting (list-max-listpack-size), Redis's whole int
 * range. */
static bool set_i32(struct kv_config *cfg, const struct param *p, const char *s, size_t n,
		    char *why, size_t whylen)
{
	int64_t v;
	if (!kv_str2ll(s, n, &v)) {
		snprintf(why, whylen, KV_WHY_INTEGER);
		return false;
	}
	if (v < INT32_MIN || v > INT32_MAX) {
		snprintf(why, whylen, KV_WHY_RANGE_SIGNED_FMT, (long long)INT32_MIN,
			 (long long)INT32_MAX);
		return false;
	}
	*(int32_t *)field(cfg, p) = (int32_t)v;
	return true;
}

/* yes or no, as Redis spells them (any case). */
static bool set_bool(struct kv_config *cfg, const struct param *p, const char *s, size_t n,
		     char *why, size_t whylen)
{
	bool yes = n == 3 && strncasecmp(s, "yes", 3) == 0;
	if (!yes && !(n == 2 && strncasecmp(s, "no", 2) == 0)) {
		snprintf(why, whylen, "argument must be 'yes' or 'no'");
		return false;
	}
	*(bool *)field(cfg, p) = yes;
	return true;
}

/* appendfsync: always, everysec or no (any case). */
static bool set_fsync(struct kv_config *cfg, const struct param *p, const char *s, size_t n,
		      char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(kv_fsync_names) / sizeof(kv_fsync_names[0]); i++)
		if (strlen(kv_fsync_names[i]) == n && strncasecmp(kv_fsync_names[i], s, n) == 0) {
			*(enum kv_fsync *)field(cfg, p) = (enum kv_fsync)i;
			return true;
		}
	snprintf(why, whylen, KV_WHY_ONE_OF_FMT, "everysec, always, no"); /* Redis's order */
	return false;
}

/* A text that fits; a directory must exist (Redis changes into it). */
static bool set_str(struct kv_config *cfg, const struct param *p, const char *s, size_t n,
		    char *why, size_t whylen)
{
	char text[512];
	struct stat st;
	if (n >= p->max || memchr(s, 0, n)) {
		snprintf(why, whylen, "argument too long");
		return false;
	}
	memcpy(text, s, n);
	text[n] = 0;
	if (p->type == P_DIR && (stat(text, &st) != 0 || !S_ISDIR(st.st_mode))) {
		snprintf(why, whylen, "No such file or directory");
		return false;
	}
	if (p->type == P_STR && memchr(s, '/', n)) {
		snprintf(why, whylen, "dbfilename can't be a path, just a filename");
		return false;
	}
	memcpy(field(cfg, p), text, n + 1);
	return true;
}

/* Sets one parameter in cfg from s[0..n); false with Redis's reason. */
static bool set_param(struct kv_config *cfg, const struct param *p, const char *s, size_t n,
		      char *why, size_t whylen)
{
	uint64_t v;
	switch (p->type) {
	case P_POLICY:
		return set_policy(cfg, p, s, n, why, whylen);
	case P_COBL:
		return parse_cobl(cfg, s, n, why, whylen);
	case P_SAVE:
		if (kv_config_save_parse(cfg, s, n))
			return true;
		snprintf(why, whylen, "Invalid save parameters");
		return false;
	case P_I32:
		return set_i32(cfg, p, s, n, why, whylen);
	case P_MEM:
	case P_U32:
	case P_U16:
		if (!parse_number(p, s, n, &v, why, whylen))
			return false;
		if (p->type == P_MEM)
			*(uint64_t *)field(cfg, p) = v;
		else if (p->type == P_U32)
			*(uint32_t *)field(cfg, p) = (uint32_t)v;
		else
			*(uint16_t *)field(cfg, p) = (uint16_t)v;
		return true;
	case P_BOOL:
		return set_bool(cfg, p, s, n, why, whylen);
	case P_FSYNC:
		return set_fsync(cfg, p, s, n, why, whylen);
	case P_STR:
	case P_DIR:
		if (p->mutable_)
			return set_str(cfg, p, s, n, why, whylen);
		break;
	case P_FIXED:
		break;
	}
	snprintf(why, whylen, KV_WHY_IMMUTABLE);
	return false;
}

/* Whether s[0..n) is the value p has now (a fixed parameter may be "set"
 * to it). */
static bool same_value(const struct kv_config *cfg, const struct param *p, const char *s, size_t n)
{
	char buf[512];
	const char *v = value_of(cfg, p, buf, sizeof(buf));
	return strlen(v) == n && strncasecmp(v, s, n) == 0;
}

/* Refuses unknown, duplicate and immutable parameters before anything is
 * set, as Redis does; false after replying. */
static bool check_names(struct kv_call *c, const struct kv_config *cfg)
{
	bool seen[NPARAMS] = { false };
	for (uint32_t a = 2; a < c->argc; a += 2) {
		const struct param *p = find_param(c->argv[a], c->argl[a]);
		const char *why = NULL;
		if (!p) {
			kv_reply_errorf(c->out, KV_ERR_CONFIG_OPTION_FMT,
					(int)c->argl[a], c->argv[a]);
			return false;
		}
		if (!p->mutable_ && !same_value(cfg, p, c->argv[a + 1], c->argl[a + 1]))
			why = KV_WHY_IMMUTABLE;
		else if (seen[p - params])
			why = KV_WHY_DUPLICATE;
		if (why) {
			kv_reply_errorf(c->out, KV_ERR_CONFIG_ARG_FMT,
					(int)c->argl[a], c->argv[a], why);
			return false;
		}
		seen[p - params] = true;
	}
	return true;
}

/* CONFIG SET parameter value [parameter value ...]: all or nothing. The
 * new settings go to the server through view->config_set. */
void kv_config_set(struct kv_call *c)
{
	struct kv_config cfg;
	char why[160];

	/* a parameter without its value: Redis calls it a syntax error */
	if (c->argc % 2) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	current(c, &cfg);
	if (!check_names(c, &cfg))
		return;
	for (uint32_t a = 2; a < c->argc; a += 2) {
		const struct param *p = find_param(c->argv[a], c->argl[a]);
		if (p->mutable_ && !set_param(&cfg, p, c->argv[a + 1], c->argl[a + 1], why, sizeof(why))) {
			kv_reply_errorf(c->out, KV_ERR_CONFIG_ARG_FMT, (int)strlen(p->name), p->name,
					why);
			return;
		}
	}
	/* Redis keeps hz within 1..500 whatever is asked */
	cfg.hz = cfg.hz < 1 ? 1 : cfg.hz > 500 ? 500 : cfg.hz;
	if (!c->view || !c->view->config_set) {
		kv_err(c, KV_ERR_CONFIG_NO_SERVER);
		return;
	}
	why[0] = '\0';
	int rc = c->view->config_set(c->view->arg, &cfg, why, sizeof(why));
	if (rc && why[0])
		kv_reply_errorf(c->out, "ERR %s", why);
	else if (rc)
		kv_reply_errorf(c->out, KV_ERR_CONFIG_FAILED_FMT, strerror(-rc));
	else
		kv_reply_status(c->out, "OK");
}

void kv_config_help(struct kv_call *c)
{
	static const char *const lines[] = {
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern> [<pattern> ...]", "    Every parameter matching a glob-style pattern, with its value.",
		"SET <parameter> <value> [<parameter> <value> ...]", "    Change parameters, all or none.",
		"HELP", "    This text.",
	};
	kv_reply_help(c, lines, sizeof(lines) / sizeof(lines[0]));
}
