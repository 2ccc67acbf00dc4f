/* SPDX-License-Identifier: MIT */
/* percore: message dispatch, from a frame's message id to its handler.
 *
 * Small ids (below the dense limit given at init) index a plain table: one
 * load and a call. Other ids live in a flat hash map (pc_map), so a
 * protocol may use sparse 32-bit ids (hashes of names, version-tagged ids)
 * at the cost of one probe. An id nobody registered goes to the default
 * handler: by default it answers with an error reply (same message id,
 * flag PC_FRAME_ERROR, body "unknown message id") through the reply
 * function the owner set; every such frame is counted.
 *
 * Single-threaded: one dispatcher per shard (tables are cheap; copies per
 * shard keep handler lookups local).
 */
#ifndef PERCORE_DISPATCH_H
#define PERCORE_DISPATCH_H

#include <stdint.h>

#include "percore/defs.h"
#include "percore/frame.h"
#include "percore/map.h"

PC_BEGIN_DECLS

/* Largest dense limit: 65,536 ids (1 MiB of table). */
#define PC_DISPATCH_MAX_DENSE (1u << 16)

/* The error reply's body for an unknown id. */
#define PC_DISPATCH_UNKNOWN_BODY "unknown message id"

/* A handler. ctx is what was registered with it; arg is what the caller of
 * pc_dispatch_frame() passed (typically the session). Its return value is
 * returned by pc_dispatch_frame(). */
typedef int pc_handler_fn(void *ctx, const struct pc_frame *f, void *arg);

/* How the built-in default handler sends its error reply: arg is the
 * pc_dispatch_frame() argument. Returns 0 or a negative errno. */
typedef int pc_dispatch_reply_fn(void *arg, uint32_t msg_id, uint8_t flags, const void *body, size_t len);

/* A handler and its context, as a dispatch table holds them. */
struct pc_handler {
	pc_handler_fn *fn;       /* NULL: no handler */
	void *ctx;
};

/* Fields starting with _ are private. */
struct pc_dispatch {
	struct pc_handler *_dense;   /* _dense_n entries */
	uint32_t _dense_n;
	struct pc_map _sparse;       /* id -> struct pc_handler * */
	struct pc_handler _default;
	pc_dispatch_reply_fn *_reply;
	uint64_t _unknown;           /* frames that went to the default */
};

/* Set up an empty dispatcher; ids below dense_ids use the table. Returns
 * 0; -EINVAL when dense_ids exceeds PC_DISPATCH_MAX_DENSE; -ENOMEM. */
PC_API int pc_dispatch_init(struct pc_dispatch *d, uint32_t dense_ids);
PC_API void pc_dispatch_destroy(struct pc_dispatch *d);

/* Route id to fn(ctx, ...). Returns 0; -EEXIST when id has a handler (it
 * is kept); -EINVAL when fn is NULL; -ENOMEM. Owner thread only. */
PC_API int pc_dispatch_register(struct pc_dispatch *d, uint32_t id, pc_handler_fn *fn, void *ctx);

/* Forget id's handler. Returns 0, or -ENOENT when it had none. */
PC_API int pc_dispatch_unregister(struct pc_dispatch *d, uint32_t id);

/* Handler for ids nobody registered; fn NULL restores the built-in error
 * reply. */
PC_API void pc_dispatch_set_default(struct pc_dispatch *d, pc_handler_fn *fn, void *ctx);

/* How the built-in default sends its error reply. Without one it returns
 * -ENOENT and sends nothing. */
PC_API void pc_dispatch_set_reply(struct pc_dispatch *d, pc_dispatch_reply_fn *reply);

/* How many frames went to the default handler. */
static inline uint64_t pc_dispatch_unknown(const struct pc_dispatch *d)
{
	return d->_unknown;
}

/* The handler registered for id, or NULL. */
static inline const struct pc_handler *pc_dispatch_lookup(const struct pc_dispatch *d, uint32_t id)
{
	if (PC_LIKELY(id < d->_dense_n)) {
		const struct pc_handler *h = &d->_dense[id];
		return h->fn ? h : NULL;
	}
	const struct pc_map_slot *s = pc_map_find(&d->_sparse, id);
	return s ? (const struct pc_handler *)(uintptr_t)s->value : NULL;
}

/* Run the handler for f's message id (the default one when there is none)
 * and return what it returns. The built-in default returns the reply
 * function's result, or -ENOENT without one. Owner thread only. */
static inline int pc_dispatch_frame(struct pc_dispatch *d, const struct pc_frame *f, void *arg)
{
	const struct pc_handler *h = pc_dispatch_lookup(d, f->msg_id);

	if (PC_UNLIKELY(!h)) {
		d->_unknown++;
		h = &d->_default;
	}
	return h->fn(h->ctx, f, arg);
}

PC_END_DECLS

#endif
