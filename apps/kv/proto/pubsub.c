/* SPDX-License-Identifier: MIT */
/* One shard's publish/subscribe tables: see pubsub.h. */
#include "pubsub.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "glob.h"
#include "keyhash.h"
#include "percore/map.h"

/* A channel or pattern anyone subscribes to: its name, how many
 * subscribers every shard has (count[shard], total their sum) and which
 * of this shard's connections they are. Kept while either is non-zero. */
struct ps_entry {
	uint64_t hash;
	uint64_t total;
	struct kv_conn **subs;
	uint32_t nsub, capsub;
	size_t idx;                /* in its table's list */
	size_t len;
	char *name;
	uint32_t count[];
};

/* Channels or patterns: by name, and listed (PUBLISH walks the patterns,
 * PUBSUB CHANNELS the channels). */
struct ps_table {
	struct pc_map map;
	struct ps_entry **list;
	size_t n, cap;
};

struct kv_pubsub {
	unsigned n, self;
	struct kv_pubsub_hooks h;
	struct ps_table tab[2];    /* [0] channels, [1] patterns */
	struct kv_reply changes;
	uint32_t nchanges;
	uint64_t *dest;            /* PUBLISH's receivers per shard */
};

/* A connection's subscriptions, in the order made: the entries of this
 * shard's tables they hold. */
struct ps_vec {
	struct ps_entry **v;
	uint32_t n, cap;
};

struct kv_subs {
	struct ps_vec kind[2];
};

void kv_pubsub_confirm(struct kv_reply *out, bool pattern, bool sub, const char *name, size_t len,
		       size_t subs)
{
	static const char *const word[2][2] = { { "unsubscribe", "punsubscribe" },
						{ "subscribe", "psubscribe" } };

	kv_reply_array(out, 3);
	kv_reply_bulk(out, word[sub][pattern], strlen(word[sub][pattern]));
	if (name)
		kv_reply_bulk(out, name, len);
	else
		kv_reply_null(out);
	kv_reply_int(out, (int64_t)subs);
}

struct kv_pubsub *kv_pubsub_new(unsigned n, unsigned self, const struct kv_pubsub_hooks *h)
{
	struct kv_pubsub *ps = calloc(1, sizeof(*ps));

	if (!ps || !(ps->dest = calloc(n, sizeof(*ps->dest)))) {
		free(ps);
		return NULL;
	}
	ps->n = n;
	ps->self = self;
	ps->h = *h;
	for (int k = 0; k < 2; k++)
		pc_map_init(&ps->tab[k].map, PC_MAP_HASHED);
	kv_reply_init(&ps->changes);
	return ps;
}

static void entry_free(struct ps_entry *e)
{
	free(e->subs);
	free(e->name);
	free(e);
}

void kv_pubsub_free(struct kv_pubsub *ps)
{
	if (!ps)
		return;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < ps->tab[k].n; i++)
			entry_free(ps->tab[k].list[i]);
		free(ps->tab[k].list);
		pc_map_destroy(&ps->tab[k].map);
	}
	kv_reply_free(&ps->changes);
	free(ps->dest);
	free(ps);
}

struct ps_key {
	const char *p;
	size_t len;
};

static bool entry_eq(uint64_t value, const void *key)
{
	const struct ps_entry *e = (const struct ps_entry *)(uintptr_t)value;
	const struct ps_key *k = key;

	return e->len == k->len && !memcmp(e->name, k->p, k->len);
}

static struct ps_entry *find(const struct ps_table *t, const char *name, size_t len)
{
	struct ps_key k = { name, len };
	struct pc_map_slot *s = pc_map_find_hashed(&t->map, kv_keyhash(name, len), entry_eq, &k);

	return s ? (struct ps_entry *)(uintptr_t)s->value : NULL;
}

static struct ps_entry *find_or_add(struct kv_pubsub *ps, struct ps_table *t, const char *name,
				    size_t len)
{
	struct ps_entry *e = find(t, name, len);

	if (e)
		return e;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct ps_entry **l = realloc(t->list, cap * sizeof(*l));

		if (!l)
			return NULL;
		t->list = l;
		t->cap = cap;
	}
	e = calloc(1, sizeof(*e) + ps->n * sizeof(e->count[0]));
	if (!e || !(e->name = malloc(len ? len : 1))) {
		free(e);
		return NULL;
	}
	memcpy(e->name, name, len);
	e->len = len;
	e->hash = kv_keyhash(name, len);
	if (pc_map_insert_hashed(&t->map, e->hash, (uint64_t)(uintptr_t)e)) {
		entry_free(e);
		return NULL;
	}
	e->idx = t->n;
	t->list[t->n++] = e;
	return e;
}

/* Forgets an entry nobody subscribes to any more. */
static void settle(struct ps_table *t, struct ps_entry *e)
{
	struct ps_key k = { e->name, e->len };

	if (e->total || e->nsub)
		return;
	pc_map_erase_slot(&t->map, pc_map_find_hashed(&t->map, e->hash, entry_eq, &k));
	t->list[e->idx] = t->list[--t->n];
	t->list[e->idx]->idx = e->idx;
	entry_free(e);
}

/* Shard `from` has delta more subscribers of e. */
static void count(struct ps_entry *e, unsigned from, int delta)
{
	e->count[from] += (uint32_t)delta;
	e->total += (uint64_t)(int64_t)delta;
}

/* Records a change of this shard's for the others. */
static void note_change(struct kv_pubsub *ps, bool pattern, int delta, const char *name,
			size_t len)
{
	char tag[2] = { delta > 0 ? '+' : '-', pattern ? 'p' : 'c' };
	uint32_t l = (uint32_t)(len + 2);

	if (ps->n == 1)
		return;
	kv_reply_raw(&ps->changes, &l, sizeof(l));
	kv_reply_raw(&ps->changes, tag, 2);
	kv_reply_raw(&ps->changes, name, len);
	ps->nchanges++;
}

size_t kv_pubsub_conn_subs(const struct kv_conn *conn)
{
	return conn->subs ? conn->subs->kind[0].n + conn->subs->kind[1].n : 0;
}

size_t kv_pubsub_conn_count(const struct kv_conn *conn, bool pattern)
{
	return conn->subs ? conn->subs->kind[pattern].n : 0;
}

void kv_pubsub_conn_fini(struct kv_conn *conn)
{
	if (!conn->subs)
		return;
	free(conn->subs->kind[0].v);
	free(conn->subs->kind[1].v);
	free(conn->subs);
	conn->subs = NULL;
}

static bool has_sub(const struct ps_entry *e, const struct kv_conn *conn)
{
	for (uint32_t i = 0; i < e->nsub; i++)
		if (e->subs[i] == conn)
			return true;
	return false;
}

/* Room for one more pointer in an array of *cap. */
static int grow(void **v, uint32_t n, uint32_t *cap, size_t size)
{
	uint32_t c = *cap ? *cap * 2 : 4;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

int kv_pubsub_subscribe(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern,
			const char *name, size_t len)
{
	struct ps_table *t = &ps->tab[pattern];
	struct ps_entry *e;
	struct ps_vec *v;

	if (!conn->subs && !(conn->subs = calloc(1, sizeof(*conn->subs))))
		return -ENOMEM;
	v = &conn->subs->kind[pattern];
	e = find_or_add(ps, t, name, len);
	if (!e)
		return -ENOMEM;
	if (has_sub(e, conn))
		return 0;
	if (grow((void **)&e->subs, e->nsub, &e->capsub, sizeof(*e->subs)) ||
	    grow((void **)&v->v, v->n, &v->cap, sizeof(*v->v))) {
		settle(t, e);
		return -ENOMEM;
	}
	e->subs[e->nsub++] = conn;
	v->v[v->n++] = e;
	count(e, ps->self, 1);
	note_change(ps, pattern, 1, name, len);
	return 1;
}

/* Removes conn's subscription e (its i-th of its kind). */
static void unsub_at(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern, uint32_t i)
{
	struct ps_vec *v = &conn->subs->kind[pattern];
	struct ps_entry *e = v->v[i];

	memmove(v->v + i, v->v + i + 1, (v->n - i - 1) * sizeof(*v->v));
	v->n--;
	for (uint32_t k = 0; k < e->nsub; k++)
		if (e->subs[k] == conn) {
			e->subs[k] = e->subs[--e->nsub];
			break;
		}
	count(e, ps->self, -1);
	note_change(ps, pattern, -1, e->name, e->len);
	settle(&ps->tab[pattern], e);
}

int kv_pubsub_unsubscribe(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern,
			  const char *name, size_t len)
{
	struct ps_entry *e = find(&ps->tab[pattern], name, len);
	struct ps_vec *v;

	if (!e || !conn->subs)
		return 0;
	v = &conn->subs->kind[pattern];
	for (uint32_t i = 0; i < v->n; i++)
		if (v->v[i] == e) {
			unsub_at(ps, conn, pattern, i);
			return 1;
		}
	return 0;
}

void kv_pubsub_unsubscribe_all(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern,
			       struct kv_reply *out)
{
	struct ps_vec *v = conn->subs ? &conn->subs->kind[pattern] : NULL;

	if ((!v || !v->n) && out) /* Redis's answer when there was nothing */
		kv_pubsub_confirm(out, pattern, false, NULL, 0, kv_pubsub_conn_subs(conn));
	while (v && v->n) {
		struct ps_entry *e = v->v[0];
		char room[256];
		struct kv_reply name;

		/* the name is copied: the entry may go with the subscription */
		kv_reply_init_in(&name, room, sizeof(room));
		kv_reply_raw(&name, e->name, e->len);
		unsub_at(ps, conn, pattern, 0);
		if (out)
			kv_pubsub_confirm(out, pattern, false, name.buf, name.len,
					  kv_pubsub_conn_subs(conn));
		kv_reply_free(&name);
	}
}

void kv_pubsub_drop(struct kv_pubsub *ps, struct kv_conn *conn)
{
	kv_pubsub_unsubscribe_all(ps, conn, false, NULL);
	kv_pubsub_unsubscribe_all(ps, conn, true, NULL);
	kv_pubsub_conn_fini(conn);
}

/* The encoded message for a channel's subscribers, or a pattern's. */
static void encode(struct kv_reply *r, const struct ps_entry *pat, const char *chan, size_t clen,
		   const char *msg, size_t mlen)
{
	kv_reply_clear(r);
	kv_reply_array(r, pat ? 4 : 3);
	if (pat) {
		kv_reply_bulk(r, "pmessage", 8);
		kv_reply_bulk(r, pat->name, pat->len);
	} else {
		kv_reply_bulk(r, "message", 7);
	}
	kv_reply_bulk(r, chan, clen);
	kv_reply_bulk(r, msg, mlen);
}

uint64_t kv_pubsub_deliver(struct kv_pubsub *ps, const char *chan, size_t clen, const char *msg,
			   size_t mlen)
{
	char room[512];
	struct kv_reply r;
	struct ps_entry *e = find(&ps->tab[0], chan, clen);
	uint64_t got = 0;

	kv_reply_init_in(&r, room, sizeof(room));
	if (e && e->nsub) {
		encode(&r, NULL, chan, clen, msg, mlen);
		for (uint32_t i = 0; i < e->nsub && !r.failed; i++)
			ps->h.deliver(ps->h.arg, e->subs[i], r.buf, r.len);
		got += e->nsub;
	}
	for (size_t k = 0; k < ps->tab[1].n; k++) {
		struct ps_entry *p = ps->tab[1].list[k];

		if (!p->nsub || !kv_glob_match(p->name, p->len, chan, clen))
			continue;
		encode(&r, p, chan, clen, msg, mlen);
		for (uint32_t i = 0; i < p->nsub && !r.failed; i++)
			ps->h.deliver(ps->h.arg, p->subs[i], r.buf, r.len);
		got += p->nsub;
	}
	kv_reply_free(&r);
	return got;
}

uint64_t kv_pubsub_publish(struct kv_pubsub *ps, const char *chan, size_t clen, const char *msg,
			   size_t mlen)
{
	struct ps_entry *e = find(&ps->tab[0], chan, clen);
	uint64_t total = 0;

	memset(ps->dest, 0, ps->n * sizeof(*ps->dest));
	if (e)
		for (unsigned s = 0; s < ps->n; s++)
			ps->dest[s] += e->count[s];
	for (size_t k = 0; k < ps->tab[1].n; k++) {
		struct ps_entry *p = ps->tab[1].list[k];

		if (p->total && kv_glob_match(p->name, p->len, chan, clen))
			for (unsigned s = 0; s < ps->n; s++)
				ps->dest[s] += p->count[s];
	}
	for (unsigned s = 0; s < ps->n; s++) {
		total += ps->dest[s];
		if (s != ps->self && ps->dest[s])
			ps->h.forward(ps->h.arg, s, chan, clen, msg, mlen);
	}
	if (ps->dest[ps->self])
		kv_pubsub_deliver(ps, chan, clen, msg, mlen);
	return total;
}

uint32_t kv_pubsub_take_changes(struct kv_pubsub *ps, struct kv_reply *buf)
{
	uint32_t n = ps->nchanges;

	*buf = ps->changes;
	kv_reply_init(&ps->changes);
	ps->nchanges = 0;
	return n;
}

void kv_pubsub_split_changes(const struct kv_reply *buf, uint32_t n, const char **argv,
			     size_t *argl)
{
	const char *p = buf->buf;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t l;

		memcpy(&l, p, sizeof(l));
		argv[i] = p + sizeof(l);
		argl[i] = l;
		p += sizeof(l) + l;
	}
}

int kv_pubsub_apply(struct kv_pubsub *ps, unsigned from, const char *change, size_t len)
{
	struct ps_table *t;
	struct ps_entry *e;

	if (len < 2 || from >= ps->n)
		return 0;
	t = &ps->tab[change[1] == 'p'];
	e = change[0] == '+' ? find_or_add(ps, t, change + 2, len - 2) : find(t, change + 2, len - 2);
	if (!e)
		return change[0] == '+' ? -ENOMEM : 0;
	count(e, from, change[0] == '+' ? 1 : -1);
	settle(t, e);
	return 0;
}

void kv_pubsub_channels(const struct kv_pubsub *ps, const char *pat, size_t plen,
			struct kv_reply *out)
{
	const struct ps_table *t = &ps->tab[0];
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += t->list[i]->total && (!pat || kv_glob_match(pat, plen, t->list[i]->name,
								   t->list[i]->len));
	kv_reply_array(out, n);
	for (size_t i = 0; i < t->n; i++)
		if (t->list[i]->total &&
		    (!pat || kv_glob_match(pat, plen, t->list[i]->name, t->list[i]->len)))
			kv_reply_bulk(out, t->list[i]->name, t->list[i]->len);
}

uint64_t kv_pubsub_numsub(const struct kv_pubsub *ps, const char *chan, size_t clen)
{
	const struct ps_entry *e = find(&ps->tab[0], chan, clen);

	return e ? e->total : 0;
}

uint64_t kv_pubsub_numpat(const struct kv_pubsub *ps)
{
	uint64_t n = 0;

	for (size_t i = 0; i < ps->tab[1].n; i++)
		n += ps->tab[1].list[i]->total > 0;
	return n;
}

bool kv_pubsub_refused(struct kv_conn *conn, const struct kv_cmd *cmd, uint32_t argc,
		       const char *const *argv, const size_t *argl, struct kv_reply *out)
{
	struct kv_call c = { .out = out, .conn = conn, .argc = argc, .argv = argv, .argl = argl };

	if (!cmd || !kv_pubsub_conn_subs(conn))
		return false;
	if (!kv_cmd_check_as(&c, cmd))
		return true; /* Redis's unknown subcommand or arity error first */
	if (c.cmd->flags & KV_CMD_PUBSUB)
		return false;
	kv_reply_errorf(out, KV_ERR_PUBSUB_CONTEXT_FMT, c.cmd->name);
	return true;
}
