/* SPDX-License-Identifier: MIT */
/* The process's persistence state (persist.h). */
#include "persist.h"

#include <stdatomic.h>
#include <time.h>

#include "cmd.h"

static _Atomic int64_t last_save_s, last_try_ms, last_bg_secs = -1, saving_since_ms;
static _Atomic bool last_failed, saving;
static _Atomic uint64_t saves, changes_at_save, loading, loaded, expired, skipped;

#define LD(v)     atomic_load_explicit(&(v), memory_order_relaxed)
#define ST(v, x)  atomic_store_explicit(&(v), (x), memory_order_relaxed)
#define ADD(v, x) atomic_fetch_add_explicit(&(v), (x), memory_order_relaxed)

int64_t kv_save_last(void)
{
	int64_t t = LD(last_save_s);
	return t ? t : (int64_t)time(NULL);
}

void kv_save_mark(int64_t s)
{
	ST(last_save_s, s);
}

void kv_persist_get(struct kv_persist_info *pi)
{
	*pi = (struct kv_persist_info){
		.last_save = kv_save_last(), .last_ok = !LD(last_failed),
		.last_try_ms = LD(last_try_ms), .last_bg_secs = LD(last_bg_secs),
		.saves = LD(saves), .changes_at_save = LD(changes_at_save),
		.saving = LD(saving), .saving_since_ms = LD(saving_since_ms),
		.loading = LD(loading) != 0, .loaded = LD(loaded), .expired = LD(expired),
		.skipped = LD(skipped),
	};
}

void kv_persist_save_done(int64_t began_ms, int64_t ended_ms, uint64_t changes, bool ok)
{
	ST(last_try_ms, began_ms);
	ST(last_failed, !ok);
	if (!ok)
		return;
	ST(changes_at_save, changes);
	ADD(saves, 1);
	kv_save_mark(ended_ms / 1000);
}

bool kv_persist_bg_begin(int64_t now_ms)
{
	bool idle = false;

	if (!atomic_compare_exchange_strong(&saving, &idle, true))
		return false;
	ST(saving_since_ms, now_ms);
	ST(last_try_ms, now_ms);
	return true;
}

void kv_persist_bg_end(int64_t now_ms)
{
	int64_t began = LD(saving_since_ms);

	/* a clock stepped back reads as 0 s, never as years */
	ST(last_bg_secs, now_ms > began ? (now_ms - began) / 1000 : 0);
	ST(saving, false);
}

void kv_persist_loading(bool on)
{
	if (on)
		ADD(loading, 1);
	else
		atomic_fetch_sub_explicit(&loading, 1, memory_order_relaxed);
}

void kv_persist_loaded(uint64_t n, uint64_t exp, uint64_t skip)
{
	ADD(loaded, n);
	ADD(expired, exp);
	ADD(skipped, skip);
}
