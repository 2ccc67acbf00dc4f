/* SPDX-License-Identifier: MIT */
/* A connection's commands over several shards under way (flights), and
 * the check that keeps a later request of the connection off their keys
 * until they end (client.c). A connection gets its table at its first
 * flight and gives it back between bursts: an idle one carries a
 * pointer. */
#ifndef KV_FLIGHTS_H
#define KV_FLIGHTS_H

#include <stdbool.h>
#include <stdint.h>

/* Flights of one connection under way at once, at most; each further one
 * waits. Every one lets a pipeline's requests after it go on. */
#define KV_FLIGHT_MAX 64
/* A flight's most keys kept for the check; one with more holds every
 * later request until it ended. */
#define KV_FLIGHT_KEYS 1024
/* The bits of the table's key filter, kept while more flights than
 * KV_FLIGHT_UNFILTERED are under way: fewer are looked at one by one,
 * cheaper than keeping the filter for each. */
#define KV_FLIGHT_FILTER_BITS 2048
#define KV_FLIGHT_UNFILTERED 4
/* Flights ended since the filter was built, at most, before it is built
 * again. */
#define KV_FLIGHT_STALE 16

struct kv_client;
struct kv_job;
struct kv_tx;

/* A command over several shards under way (or a run of MSETs): its
 * transaction, the outstanding job its reply waits in (so the replies of
 * later requests come behind it), and its keys' hashes. */
struct kv_flight {
	struct kv_client *c;
	struct kv_job *slot;
	struct kv_tx *tx;
	uint32_t requests;            /* answered each with its reply (a run's) */
	bool all;                     /* every key: server-wide, or too many to keep */
	uint64_t mask;                /* a bit per key's hash, to rule out at once */
	uint32_t nkeys;
	uint64_t keys[];
};

/* A connection's flights. The filter has a bit for each key of any of
 * them, and of some that ended: most requests are ruled out by it at
 * once, where looking at each of 64 flights cost more than the request. */
struct kv_flights {
	struct kv_flights *next;      /* while spare */
	uint32_t n;
	uint32_t all;                 /* flights on every key */
	uint32_t stale;               /* flights ended whose bits the filter keeps */
	uint64_t filter[KV_FLIGHT_FILTER_BITS / 64];
	struct kv_flight *f[KV_FLIGHT_MAX];
};

/* A flight for nkeys keys (0 or past KV_FLIGHT_KEYS: every key), its
 * keys' hashes to set with kv_flight_key(); free() frees it. NULL when
 * out of memory. */
struct kv_flight *kv_flight_new(uint32_t nkeys);

/* A flight's mask bit for the key. */
static inline uint64_t kv_flight_mask_bit(uint64_t hash)
{
	return 1ull << (hash >> 58);
}

/* Sets the flight's k-th key. */
static inline void kv_flight_key(struct kv_flight *f, uint32_t k, uint64_t hash)
{
	f->keys[k] = hash;
	f->mask |= kv_flight_mask_bit(hash);
}

/* An empty table, or NULL when out of memory; free() frees it. */
struct kv_flights *kv_flights_new(void);

/* A shard's empty tables, kept for its connections' next flights: a
 * connection between bursts holds none, and giving its table back to
 * malloc cost more (at depth 1, many connections each taking one for a
 * command's flight, past malloc's per-thread cache). */
#define KV_FLIGHTS_SPARE 64
struct kv_flights_spare {
	struct kv_flights *list;
	unsigned n;
};

/* A spare table, or a new one (NULL when out of memory). */
struct kv_flights *kv_flights_take(struct kv_flights_spare *sp);
/* Keeps the empty table for later, or frees it past KV_FLIGHTS_SPARE. */
void kv_flights_put(struct kv_flights_spare *sp, struct kv_flights *fl);
/* Frees every spare table. */
void kv_flights_spare_free(struct kv_flights_spare *sp);
/* Adds the flight (the table has room: n < KV_FLIGHT_MAX). */
void kv_flights_add(struct kv_flights *fl, struct kv_flight *f);
/* Takes the flight, one of the table's, out. */
void kv_flights_remove(struct kv_flights *fl, const struct kv_flight *f);
/* Whether a request on the key (its kv_keyhash()) must wait for a
 * flight: one of them names it, or one is on every key. */
bool kv_flights_hold(const struct kv_flights *fl, uint64_t hash);

#endif
