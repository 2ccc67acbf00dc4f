/* SPDX-License-Identifier: MIT */
/* chat_server: rooms across shards, spoken in FlatBuffers.
 *
 * Bodies are the tables of schemas/chat.fbs under the message ids of
 * percore/fb_chat.h. A client joins a room (Join {room, user}: answered
 * with a History of the room's latest messages; joining another moves it),
 * says things (Say {room, text}: every member gets a Message {room, user,
 * text, seq}) and leaves (Leave {room}: answered with the same Leave).
 * Refusals are Errors (pc_session_error). Every body is verified by
 * pc_fb_<table>_read() before it is read; one that fails closes the
 * session, counted as malformed.
 *
 * Each room has a home shard, chosen by hashing its name: every Say goes
 * there, gets the room's next sequence number and becomes a Message frame,
 * built once straight into a shared buffer (header in front, no copy),
 * which goes to every shard through the mesh; each writes it to its own
 * members and keeps it for the History of later joiners. So all members
 * see a room's messages in one order, wherever their connection landed.
 *
 *   chat_server [PORT [SHARDS]]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percore.h>

#define NAME_LEN 32   /* room and user names: 1 to 31 bytes, no NUL */
#define TEXT_MAX 1024 /* bytes of a Say's text */
#define HISTORY 8     /* latest Messages a joiner gets */
#define HISTORY_SPACE (HISTORY * pc_fb_message_space(NAME_LEN, NAME_LEN, TEXT_MAX) + 256)

struct room {
	char name[NAME_LEN];
	uint64_t seq;                          /* Messages numbered (home shard) */
	struct member *members;                /* this shard's sessions in it */
	struct pc_shared_buf *recent[HISTORY]; /* Messages delivered here, a ring */
	uint64_t delivered;
	struct room *next;
};
struct member {
	struct pc_session *s;
	struct room *room;
	struct member *next;
	char user[NAME_LEN];
};
/* What travels: a Say to the home shard, then a Message frame to every shard. */
struct said { char room[NAME_LEN], user[NAME_LEN]; uint32_t len; char text[]; };
struct fanout { uint32_t off, len; char room[NAME_LEN]; }; /* the frame: data + off */

static __thread struct room *rooms; /* a shard is one thread */

/* ---- rooms: each shard keeps its own members and, as home, numbers ------ */

/* A received name into out: 1 to NAME_LEN - 1 bytes, no NUL. */
static bool name_get(char out[NAME_LEN], const char *p, uint32_t len)
{
	if (!len || len >= NAME_LEN || memchr(p, 0, len))
		return false;
	memcpy(out, p, len);
	out[len] = '\0';
	return true;
}

static struct room *room_get(const char *name)
{
	struct room *r;
	for (r = rooms; r; r = r->next)
		if (!strcmp(r->name, name))
			return r;
	if ((r = calloc(1, sizeof(*r)))) {
		strcpy(r->name, name);
		r->next = rooms;
		rooms = r;
	}
	return r;
}

static unsigned home_of(const char *name) /* FNV-1a of the name */
{
	uint64_t h = 1469598103934665603ull;
	while (*name)
		h = (h ^ (uint8_t)*name++) * 1099511628211ull;
	return (unsigned)(h % pc_shard_count());
}

/* The session's membership of the room named p (len bytes), or NULL. */
static struct member *member_of(struct pc_session *s, const char *p, uint32_t len)
{
	struct member *m = pc_session_data(s);
	char room[NAME_LEN];
	return m && name_get(room, p, len) && !strcmp(m->room->name, room) ? m : NULL;
}

static void leave(struct pc_session *s)
{
	struct member *m = pc_session_data(s), **p;
	if (!m)
		return;
	for (p = &m->room->members; *p != m; p = &(*p)->next)
		;
	*p = m->next;
	free(m);
	pc_session_set_data(s, NULL);
}

/* A Message kept from a fan-out, written again into a History. */
static pc_fb_ref message_copy(struct pc_fb_builder *b, const struct pc_shared_buf *kept)
{
	const struct fanout *o = pc_shared_buf_data(kept);
	const struct pc_fb_message *m;
	uint32_t rl, ul, tl;

	if (pc_fb_message_read((const uint8_t *)o + o->off + PC_FRAME_HEADER_LEN,
			       o->len - PC_FRAME_HEADER_LEN, &m))
		return 0;
	const char *room = pc_fb_message_room(m, &rl), *user = pc_fb_message_user(m, &ul);
	const char *text = pc_fb_message_text(m, &tl);
	return pc_fb_message_create(b, room, rl, user, ul, text, tl, pc_fb_message_seq(m));
}

/* The room's latest Messages delivered here, oldest first, built in the
 * shard's arena. */
static int send_history(struct pc_session *s, const struct room *r)
{
	struct pc_arena_mark mark = pc_arena_mark(pc_shard_arena());
	void *space = pc_arena_alloc(pc_shard_arena(), HISTORY_SPACE, 8);
	pc_fb_ref msgs[HISTORY];
	struct pc_fb_builder b;
	const void *body = NULL;
	size_t n = 0, len;
	uint64_t i = r->delivered > HISTORY ? r->delivered - HISTORY : 0;

	if (space && !pc_fb_builder_init(&b, space, HISTORY_SPACE)) {
		while (i < r->delivered)
			msgs[n++] = message_copy(&b, r->recent[i++ % HISTORY]);
		if (!pc_fb_history_build(&b, r->name, strlen(r->name), msgs, n))
			body = pc_fb_builder_data(&b, &len);
	}
	int rc = body ? pc_session_send(s, PC_MSG_CHAT_HISTORY, body, len) : -ENOMEM;
	pc_arena_rewind(pc_shard_arena(), mark);
	return rc;
}

/* ---- a Message's way: sender's shard -> home shard -> every shard ------- */

/* On every shard: write the frame to the room's members here; keep it. */
static void deliver(void *arg)
{
	const struct fanout *o = pc_shared_buf_data(arg);
	struct room *r = room_get(o->room);

	for (struct member *m = r ? r->members : NULL; m; m = m->next)
		if (pc_session_write(m->s, (const uint8_t *)o + o->off, o->len))
			pc_session_close(m->s); /* stopped reading; on_close runs later */
	if (r) {
		pc_shared_buf_put(r->recent[r->delivered % HISTORY]);
		r->recent[r->delivered++ % HISTORY] = arg;
	} else {
		pc_shared_buf_put(arg);
	}
}

/* Send to every shard. A full mesh ring does not refuse: the message
 * waits in this shard's outbox, in order. Past the outbox budget the
 * shards that refused miss this Message (counted nowhere but lost to
 * them), as a member whose connection cannot keep up would. */
static void fan_out(void *arg)
{
	for (unsigned i = 0; i < pc_shard_count(); i++) {
		pc_shared_buf_get(arg);
		if (pc_shard_send(i, deliver, arg))
			pc_shared_buf_put(arg);
	}
	pc_shared_buf_put(arg);
}

/* On the home shard: number the Say, build its Message frame in place. */
static void at_home(void *arg)
{
	const struct said *d = pc_shared_buf_data(arg);
	struct room *r = room_get(d->room);
	size_t cap = (PC_FRAME_HEADER_LEN + pc_fb_message_space(NAME_LEN, NAME_LEN, d->len) + 7) & ~7ul;
	struct pc_shared_buf *out = r ? pc_shared_buf_new(sizeof(struct fanout) + cap) : NULL;
	struct fanout *o = out ? (struct fanout *)(void *)out->data : NULL;
	struct pc_fb_builder b;
	uint8_t *frame = NULL;
	size_t len;

	if (o && !pc_fb_builder_init(&b, o + 1, cap) &&
	    !pc_fb_message_build(&b, d->room, strlen(d->room), d->user, strlen(d->user), d->text,
				 d->len, r->seq + 1))
		frame = pc_fb_builder_frame(&b, PC_MSG_CHAT_MESSAGE, 0, &len);
	if (frame) {
		*o = (struct fanout){ (uint32_t)(frame - out->data), (uint32_t)len, { 0 } };
		strcpy(o->room, d->room);
		r->seq++;
		fan_out(out);
	} else {
		pc_shared_buf_put(out); /* out of memory: this Say is lost */
	}
	pc_shared_buf_put(arg);
}

/* ---- handlers: every body verified before it is read ------------------ */

static int on_join(void *ctx, const struct pc_frame *f, void *s)
{
	const struct pc_fb_join *j;
	char room[NAME_LEN], user[NAME_LEN];
	uint32_t rl, ul;
	(void)ctx;
	if (pc_fb_join_read(f->body, f->len, &j))
		return pc_session_error(s, EPROTO, "malformed Join", true);
	const char *rp = pc_fb_join_room(j, &rl), *up = pc_fb_join_user(j, &ul);
	if (!name_get(room, rp, rl) || !name_get(user, up, ul))
		return pc_session_error(s, EINVAL, "names are 1 to 31 bytes, no NUL", false);
	leave(s);
	struct room *r = room_get(room);
	struct member *m = r ? malloc(sizeof(*m)) : NULL;
	if (!m)
		return pc_session_error(s, ENOMEM, "out of memory", false);
	*m = (struct member){ s, r, r->members, { 0 } };
	strcpy(m->user, user);
	r->members = m;
	pc_session_set_data(s, m);
	return send_history(s, r);
}

static int on_say(void *ctx, const struct pc_frame *f, void *s)
{
	const struct pc_fb_say *say;
	struct member *m;
	uint32_t rl, len;
	(void)ctx;
	if (pc_fb_say_read(f->body, f->len, &say))
		return pc_session_error(s, EPROTO, "malformed Say", true);
	const char *room = pc_fb_say_room(say, &rl), *text = pc_fb_say_text(say, &len);
	if (!(m = member_of(s, room, rl)))
		return pc_session_error(s, ENOTCONN, "not in that room", false);
	if (len > TEXT_MAX)
		return pc_session_error(s, EMSGSIZE, "text over 1024 bytes", false);
	struct pc_shared_buf *b = pc_shared_buf_new(sizeof(struct said) + len);
	struct said *d = b ? (struct said *)(void *)b->data : NULL;
	if (!d)
		return pc_session_error(s, ENOMEM, "out of memory", false);
	memcpy(d->room, m->room->name, NAME_LEN);
	memcpy(d->user, m->user, NAME_LEN);
	d->len = len;
	memcpy(d->text, text, len);
	if (pc_shard_send(home_of(d->room), at_home, b)) { /* past the outbox budget */
		pc_shared_buf_put(b);
		return pc_session_error(s, EAGAIN, "busy, say it again", false);
	}
	return 0;
}

static int on_leave(void *ctx, const struct pc_frame *f, void *s)
{
	const struct pc_fb_leave *l;
	uint32_t len;
	(void)ctx;
	if (pc_fb_leave_read(f->body, f->len, &l))
		return pc_session_error(s, EPROTO, "malformed Leave", true);
	const char *room = pc_fb_leave_room(l, &len);
	if (!member_of(s, room, len))
		return pc_session_error(s, ENOTCONN, "not in that room", false);
	leave(s);
	return pc_session_send(s, PC_MSG_CHAT_LEAVE, f->body, f->len); /* its own Leave: done */
}

static int on_dispatch(struct pc_dispatch *d, unsigned shard, void *user)
{
	(void)shard, (void)user;
	return pc_dispatch_register(d, PC_MSG_CHAT_JOIN, on_join, NULL) ||
	       pc_dispatch_register(d, PC_MSG_CHAT_SAY, on_say, NULL) ||
	       pc_dispatch_register(d, PC_MSG_CHAT_LEAVE, on_leave, NULL);
}

static void on_other(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)f, (void)user;
	pc_session_error(s, ENOSYS, "unknown message id", false);
}

static void on_close(struct pc_session *s, enum pc_close_reason why, void *user)
{
	(void)why, (void)user;
	leave(s);
}

static void shard_stop(unsigned shard, void *user) /* after its last session left */
{
	(void)shard, (void)user;
	for (struct room *r; (r = rooms); free(r)) {
		rooms = r->next;
		for (unsigned i = 0; i < HISTORY; i++)
			pc_shared_buf_put(r->recent[i]);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: chat_server [PORT [SHARDS]]\n"
		   "Serve chat rooms on 127.0.0.1:PORT (default 7001; 0: the kernel picks)\n"
		   "with SHARDS shards (default 0: one per core). Ctrl-C drains and exits.\n");
}

/* A decimal number from 0 to max, nothing else. Returns 0 or -EINVAL. */
static int parse_num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	unsigned long port = 7001, shards = 0; /* 0: one per core */
	char err[200];
	sigset_t stop;
	int sig;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 3 || (argc > 1 && parse_num(argv[1], 65535, &port)) ||
	    (argc > 2 && parse_num(argv[2], PC_ENGINE_MAX_SHARDS, &shards))) {
		usage(stderr);
		return 2;
	}
	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)port;
	cfg.engine.shards = (unsigned)shards;
	cfg.on_dispatch = on_dispatch, cfg.on_frame = on_other, cfg.on_close = on_close;
	cfg.on_shard_stop = shard_stop;
	cfg.max_body = 4096;     /* a Say of TEXT_MAX bytes fits */
	cfg.stats_frames = true; /* answer PC_MSG_STATS with the server's figures */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT), sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL); /* taken by sigwait below; shards inherit */
	if (pc_server_start(&cfg, &srv, err, sizeof(err))) {
		fprintf(stderr, "chat_server: %s\n", err);
		return 1;
	}
	fprintf(stderr, "chat_server: listening on 127.0.0.1:%u with %u shards\n",
		pc_server_port(srv), pc_server_shards(srv));
	sigwait(&stop, &sig);
	pc_server_shutdown(srv, 2000); /* deliver what is in flight, then stop */
	pc_server_wait(srv);
	pc_server_destroy(srv);
	return 0;
}
