/* chat_server: rooms across shards.
 *
 * A client joins one room (JOIN, body: the room's name), says things (SAY,
 * body: text) and leaves (LEAVE). Each room has a home shard chosen by
 * hashing its name: every SAY goes there, gets the room's next sequence
 * number, and the home shard sends the resulting MESSAGE once to every
 * shard through the mesh (one shared buffer, no copy per shard); each shard
 * writes it to its own members. So all members see a room's messages in
 * the same order, wherever their connection landed.
 *
 *   chat_server [PORT [SHARDS]]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percore.h>
#include <percore/shard.h>
#include <percore/shared_buf.h>

enum { JOIN = 1, SAY = 2, LEAVE = 3, MESSAGE = 4 }; /* message ids */
#define ROOM_MAX 32
#define TEXT_MAX 1024

/* ---- bodies: the only code that knows how they are encoded ---------------- */

/* JOIN: the room's name, 1 to 31 bytes. SAY: the text (max_body caps it). */
static int decode_join(const struct pc_frame *f, char room[ROOM_MAX])
{
	if (f->len == 0 || f->len >= ROOM_MAX || memchr(f->body, 0, f->len))
		return -1;
	memcpy(room, f->body, f->len);
	room[f->len] = '\0';
	return 0;
}

/* MESSAGE: "room #seq from id: text". Returns the length written. */
static size_t encode_message(char *out, size_t cap, const char *room, uint64_t seq,
			     uint64_t from, const uint8_t *text, size_t len)
{
	int n = snprintf(out, cap, "%s #%llu from %llx: %.*s", room, (unsigned long long)seq,
			 (unsigned long long)from, (int)len, (const char *)text);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* ---- rooms: each shard keeps its own members and, as home, sequences ------- */

struct room {
	char name[ROOM_MAX];
	uint64_t seq;                 /* messages sequenced (home shard only) */
	struct member *members;       /* members connected to this shard */
	struct room *next;
};
struct member { struct pc_session *s; struct room *room; struct member *next; };

/* A shard is one thread: its rooms are simply thread-local. */
static __thread struct room *rooms;

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

static int join(struct pc_session *s, const char *name)
{
	struct room *r = room_get(name);
	struct member *m = r ? malloc(sizeof(*m)) : NULL;
	if (!m)
		return -1;
	*m = (struct member){ s, r, r->members };
	r->members = m;
	pc_session_set_data(s, m);
	return 0;
}

/* ---- a message's way: sender's shard -> home shard -> every shard ---------- */

struct said { char room[ROOM_MAX]; uint64_t from; size_t len; uint8_t text[]; };

/* On every shard: write the frame to the room's local members. */
static void deliver(void *arg)
{
	struct pc_shared_buf *b = arg;
	const uint8_t *frame = pc_shared_buf_data(b);
	struct room *r = room_get((const char *)frame + pc_shared_buf_len(b) - ROOM_MAX);

	for (struct member *m = r ? r->members : NULL; m; m = m->next)
		if (pc_session_write(m->s, frame, pc_shared_buf_len(b) - ROOM_MAX))
			pc_session_close(m->s); /* stopped reading; on_close runs later */
	pc_shared_buf_put(b);
}

/* Send to every shard; a full mesh ring: try again on the next turn. */
static void fan_out(void *arg)
{
	struct pc_shared_buf *b = arg;
	for (unsigned i = 1; i < pc_shard_count(); i++)
		pc_shared_buf_get(b);
	if (pc_shard_broadcast(deliver, b)) {
		for (unsigned i = 1; i < pc_shard_count(); i++)
			pc_shared_buf_put(b);
		pc_reactor_defer(pc_shard_reactor(), fan_out, b);
	}
}

/* On the home shard: sequence, encode once, fan out. */
static void at_home(void *arg)
{
	struct pc_shared_buf *in = arg;
	const struct said *m = pc_shared_buf_data(in);
	struct room *r = room_get(m->room);
	char body[ROOM_MAX + TEXT_MAX + 64];
	size_t len = r ? encode_message(body, sizeof(body), m->room, ++r->seq, m->from, m->text, m->len) : 0;
	/* The frame, then the room's name for deliver() to find the members. */
	struct pc_shared_buf *out = len ? pc_shared_buf_new(PC_FRAME_HEADER_LEN + len + ROOM_MAX) : NULL;
	if (out) {
		pc_frame_header_encode(out->data, MESSAGE, 0, len);
		memcpy(out->data + PC_FRAME_HEADER_LEN, body, len);
		memcpy(out->data + PC_FRAME_HEADER_LEN + len, m->room, ROOM_MAX);
		fan_out(out);
	}
	pc_shared_buf_put(in);
}

static void say(struct pc_session *s, const uint8_t *text, size_t len)
{
	const char *room = ((struct member *)pc_session_data(s))->room->name;
	struct pc_shared_buf *b = pc_shared_buf_new(sizeof(struct said) + len);
	struct said *m = b ? (struct said *)(void *)b->data : NULL;
	if (!m)
		return;
	strcpy(m->room, room);
	m->from = pc_session_id(s), m->len = len;
	memcpy(m->text, text, len);
	if (pc_shard_submit(home_of(room), at_home, b)) {
		pc_shared_buf_put(b);
		pc_session_send_flags(s, SAY, PC_FRAME_ERROR, "busy, say it again", 18);
	}
}

static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	char room[ROOM_MAX];
	(void)user;
	if (f->msg_id == JOIN && !decode_join(f, room)) {
		leave(s);
		if (!join(s, room))
			pc_session_send(s, JOIN, room, strlen(room)); /* joined */
	} else if (f->msg_id == SAY && pc_session_data(s)) {
		say(s, f->body, f->len);
	} else if (f->msg_id == LEAVE) {
		leave(s);
		pc_session_send(s, LEAVE, NULL, 0);
	} else {
		pc_session_send_flags(s, f->msg_id, PC_FRAME_ERROR, "bad request", 11);
	}
}

static void on_close(struct pc_session *s, enum pc_close_reason why, void *user)
{
	(void)why, (void)user;
	leave(s);
}

static void shard_stop(unsigned shard, void *user) /* after its last session left */
{
	(void)shard, (void)user;
	for (struct room *r; (r = rooms); free(r))
		rooms = r->next;
}

int main(int argc, char **argv)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	char err[200];
	sigset_t stop;
	int sig;

	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)(argc > 1 ? atoi(argv[1]) : 7001);
	cfg.engine.shards = argc > 2 ? (unsigned)atoi(argv[2]) : 0; /* 0: one per core */
	cfg.on_frame = on_frame, cfg.on_close = on_close;
	cfg.on_shard_stop = shard_stop;
	cfg.max_body = TEXT_MAX;
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
