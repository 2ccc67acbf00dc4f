/* SPDX-License-Identifier: MIT */
/* percore net: reading held back by the application
 * (pc_session_pause_read). A held session registers no read interest (only
 * errors and hang-ups, or writability while output waits), so its socket
 * buffers fill and TCP pushes back on the client; its input buffer is not
 * decoded either. Resuming hands the buffered frames over from a task, so
 * a handler that resumes another session never runs that session's
 * handlers inside its own. */
#include <errno.h>
#include <stdint.h>

#include "net/net.h"

void pc_session_pause_read(struct pc_session *s)
{
	s->flags &= (uint16_t)~NS_RESUME; /* a resume not yet run is off */
	if (s->flags & (NS_HELD | NS_DEAD))
		return;
	s->flags |= NS_HELD;
	NET_STAT_ADD(s->sh, read_holds, 1);
	net_session_set_interest(s);
}

int pc_session_unread_frame(struct pc_session *s)
{
	if (s->sh->in_frame != s)
		return -EINVAL;
	s->flags |= NS_UNREAD;
	pc_session_pause_read(s);
	return 0;
}

bool pc_session_read_paused(const struct pc_session *s)
{
	return (s->flags & (NS_HELD | NS_RESUME)) == NS_HELD;
}

/* The task: by id, since the session may have closed meanwhile. Reading
 * starts again only here, after the buffered frames: a read first could
 * meet the client's EOF, which drops what is buffered. */
static void resumed(void *arg)
{
	struct net_shard *sh = net_self;
	struct pc_session *s = sh ? net_slot_find(sh, (uint64_t)(uintptr_t)arg) : NULL;

	if (!s || !(s->flags & NS_RESUME) || (s->flags & NS_DEAD))
		return;
	s->flags &= (uint16_t)~(NS_HELD | NS_RESUME);
	s->busy++;
	net_session_input(s);
	if (!(s->flags & NS_DEAD))
		net_session_settle(s);
	net_session_unwind(s);
}

void pc_session_resume_read(struct pc_session *s)
{
	if (!(s->flags & NS_HELD) || (s->flags & (NS_DEAD | NS_RESUME)) || net_moving(s))
		return;
	/* Buffered frames: handed over from a task (their client may be
	 * waiting for answers and send nothing more to announce them). */
	if (s->rx && pc_ringbuf_used(s->rx) &&
	    !pc_reactor_defer(s->sh->r, resumed, (void *)(uintptr_t)pc_session_id(s))) {
		s->flags |= NS_RESUME;
		return;
	}
	s->flags &= (uint16_t)~NS_HELD;
	net_session_set_interest(s);
}
