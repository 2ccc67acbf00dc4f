/* SPDX-License-Identifier: MIT */
/* percore: message dispatcher (registration; lookup is inline). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/dispatch.h"

/* The built-in default: an error reply carrying the same id. */
static int error_reply(void *ctx, const struct pc_frame *f, void *arg)
{
	struct pc_dispatch *d = ctx;

	if (!d->_reply)
		return -ENOENT;
	return d->_reply(arg, f->msg_id, PC_FRAME_ERROR, PC_DISPATCH_UNKNOWN_BODY,
			 sizeof(PC_DISPATCH_UNKNOWN_BODY) - 1);
}

int pc_dispatch_init(struct pc_dispatch *d, uint32_t dense_ids)
{
	if (dense_ids > PC_DISPATCH_MAX_DENSE)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	if (dense_ids) {
		d->_dense = calloc(dense_ids, sizeof(*d->_dense));
		if (!d->_dense)
			return -ENOMEM;
	}
	d->_dense_n = dense_ids;
	pc_map_init(&d->_sparse, 0);
	pc_dispatch_set_default(d, NULL, NULL);
	return 0;
}

void pc_dispatch_destroy(struct pc_dispatch *d)
{
	struct pc_map_slot *s;

	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&d->_sparse, &it));)
		free((void *)(uintptr_t)s->value);
	pc_map_destroy(&d->_sparse);
	free(d->_dense);
	d->_dense = NULL;
	d->_dense_n = 0;
}

int pc_dispatch_register(struct pc_dispatch *d, uint32_t id, pc_handler_fn *fn, void *ctx)
{
	if (!fn)
		return -EINVAL;
	if (pc_dispatch_lookup(d, id))
		return -EEXIST;
	if (id < d->_dense_n) {
		d->_dense[id] = (struct pc_handler){ fn, ctx };
		return 0;
	}
	/* Sparse handlers live apart from the map's slots, so a map rebuild
	 * does not move a handler a caller is running. */
	struct pc_handler *h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct pc_handler){ fn, ctx };
	int err = pc_map_insert(&d->_sparse, id, (uint64_t)(uintptr_t)h);
	if (err)
		free(h);
	return err;
}

int pc_dispatch_unregister(struct pc_dispatch *d, uint32_t id)
{
	if (id < d->_dense_n) {
		if (!d->_dense[id].fn)
			return -ENOENT;
		d->_dense[id] = (struct pc_handler){ NULL, NULL };
		return 0;
	}
	struct pc_map_slot *s = pc_map_find(&d->_sparse, id);
	if (!s)
		return -ENOENT;
	free((void *)(uintptr_t)s->value);
	pc_map_erase_slot(&d->_sparse, s);
	return 0;
}

void pc_dispatch_set_default(struct pc_dispatch *d, pc_handler_fn *fn, void *ctx)
{
	if (fn)
		d->_default = (struct pc_handler){ fn, ctx };
	else
		d->_default = (struct pc_handler){ error_reply, d };
}

void pc_dispatch_set_reply(struct pc_dispatch *d, pc_dispatch_reply_fn *reply)
{
	d->_reply = reply;
}
