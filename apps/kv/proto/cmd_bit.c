/* SPDX-License-Identifier: MIT */
/* Bit commands over string values: SETBIT, GETBIT, BITCOUNT, BITPOS,
 * BITOP, BITFIELD, BITFIELD_RO. Bits are numbered from the most
 * significant bit of the first byte, as Redis numbers them. Replies,
 * errors and the order of checks are Redis 7.0's (bitops.c). */
#include "cmd_impl.h"
#include "gather.h"

#include <stdlib.h>

#include "num.h"

#define ERR_BIT_OFFSET "ERR bit offset is not an integer or out of range"
#define ERR_BIT_VALUE  "ERR bit is not an integer or out of range"
#define ERR_BIT_ARG    "ERR The bit argument must be 1 or 0."
#define ERR_BITOP_NOT  "ERR BITOP NOT must be called with a single source key."
#define ERR_BF_TYPE    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
#define ERR_BF_OVERFLOW "ERR Invalid OVERFLOW type specified"
#define ERR_BF_RO      "ERR BITFIELD_RO only supports the GET subcommand"

/* Bit i of p (0 or 1). */
static inline unsigned bit_get(const unsigned char *p, uint64_t i)
{
	return (p[i >> 3] >> (7 - (i & 7))) & 1u;
}

static inline void bit_put(unsigned char *p, uint64_t i, unsigned v)
{
	unsigned char m = (unsigned char)(1u << (7 - (i & 7)));
	p[i >> 3] = v ? (unsigned char)(p[i >> 3] | m) : (unsigned char)(p[i >> 3] & ~m);
}

/* A bit offset at argument i: a plain number, or with hash "#n", n times
 * bits (BITFIELD); within the longest string a command may build. False
 * after Redis's error. */
static bool arg_bit_offset(struct kv_call *c, uint32_t i, bool hash, unsigned bits, uint64_t *off)
{
	bool use_hash = hash && c->argl[i] > 0 && c->argv[i][0] == '#';
	int64_t v;
	if (!kv_str2ll(c->argv[i] + use_hash, c->argl[i] - use_hash, &v) ||
	    (use_hash && __builtin_mul_overflow(v, (int64_t)bits, &v)) || v < 0 ||
	    (uint64_t)(v >> 3) >= c->max_bulk) {
		kv_err(c, ERR_BIT_OFFSET);
		return false;
	}
	*off = (uint64_t)v;
	return true;
}

/* The string at argument 1 for a write that reaches bit maxbit: made (all
 * zero bits) when absent, extended with zero bytes when shorter. NULL
 * after WRONGTYPE or the out-of-memory error. */
static unsigned char *string_for_bits(struct kv_call *c, uint64_t maxbit, size_t *len)
{
	struct kv_pos pos;
	size_t olen = 0, need = (size_t)(maxbit >> 3) + 1;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (kv_wrongtype(c, e, KV_STRING))
		return NULL;
	if (e)
		kv_entry_value(e, &olen);
	size_t nlen = need > olen ? need : olen;
	char *v = kv_db_resize(c->db, &pos, nlen, e != NULL);
	if (!v) {
		kv_err_oom(c);
		return NULL;
	}
	if (nlen > olen)
		memset(v + olen, 0, nlen - olen);
	*len = nlen;
	return (unsigned char *)v;
}

/* The string at argument i for reading: *p NULL when absent; false after
 * WRONGTYPE. */
static bool string_for_read(struct kv_call *c, uint32_t i, const unsigned char **p, size_t *len)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, i, &pos);
	*p = NULL;
	*len = 0;
	if (kv_wrongtype(c, e, KV_STRING))
		return false;
	if (e)
		*p = (const unsigned char *)kv_entry_value(e, len);
	return true;
}

void kv_setbit(struct kv_call *c)
{
	uint64_t off;
	int64_t on;
	size_t len;
	if (!arg_bit_offset(c, 2, false, 0, &off))
		return;
	if (!kv_str2ll(c->argv[3], c->argl[3], &on) || (on & ~1)) {
		kv_err(c, ERR_BIT_VALUE);
		return;
	}
	unsigned char *p = string_for_bits(c, off, &len);
	if (!p)
		return;
	unsigned old = bit_get(p, off);
	bit_put(p, off, (unsigned)on);
	kv_reply_int(c->out, old);
}

void kv_getbit(struct kv_call *c)
{
	uint64_t off;
	const unsigned char *p;
	size_t len;
	if (!arg_bit_offset(c, 2, false, 0, &off) || !string_for_read(c, 1, &p, &len))
		return;
	kv_reply_int(c->out, p && (off >> 3) < len ? bit_get(p, off) : 0);
}

/* A BITCOUNT or BITPOS range [start, end] (indices as Redis reads them:
 * negative from the end) turned into bits [*first, *last] of a string
 * len bytes long; bit: the indices count bits, else bytes. False when the
 * range is empty. */
static bool bit_range(int64_t start, int64_t end, bool bit, size_t len, int64_t *first,
		      int64_t *last)
{
	int64_t total = (int64_t)len * (bit ? 8 : 1);
	if (start < 0)
		start += total;
	if (end < 0)
		end += total;
	if (start < 0)
		start = 0;
	if (end < 0)
		end = 0;
	if (end >= total)
		end = total - 1;
	if (start > end)
		return false;
	*first = bit ? start : start * 8;
	*last = bit ? end : end * 8 + 7;
	return true;
}

/* The BYTE or BIT word at argument i; false after the syntax error. */
static bool arg_unit(struct kv_call *c, uint32_t i, bool *bit)
{
	*bit = kv_arg_is(c, i, "bit");
	if (*bit || kv_arg_is(c, i, "byte"))
		return true;
	kv_err(c, KV_ERR_SYNTAX);
	return false;
}

/* Set bits of p in bits [first, last]. */
static int64_t count_bits(const unsigned char *p, uint64_t first, uint64_t last)
{
	int64_t n = 0;
	uint64_t i = first;
	for (; i <= last && (i & 7); i++)
		n += bit_get(p, i);
	for (; i + 7 <= last; i += 8)
		n += __builtin_popcount(p[i >> 3]);
	for (; i <= last; i++)
		n += bit_get(p, i);
	return n;
}

/* BITCOUNT key [start end [BYTE|BIT]] */
void kv_bitcount(struct kv_call *c)
{
	int64_t start = 0, end = -1, first, last;
	bool bit = false;
	const unsigned char *p;
	size_t len;
	if (!string_for_read(c, 1, &p, &len))
		return;
	if (!p) {
		kv_reply_int(c->out, 0);
		return;
	}
	if (c->argc == 3 || c->argc > 5) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (c->argc >= 4) {
		if (!kv_arg_ll(c, 2, &start) || !kv_arg_ll(c, 3, &end))
			return;
		if (c->argc == 5 && !arg_unit(c, 4, &bit))
			return;
		if (start < 0 && end < 0 && start > end) {
			kv_reply_int(c->out, 0);
			return;
		}
	}
	if (!bit_range(start, end, bit, len, &first, &last)) {
		kv_reply_int(c->out, 0);
		return;
	}
	kv_reply_int(c->out, count_bits(p, (uint64_t)first, (uint64_t)last));
}

/* The first bit equal to want in bits [first, last], or -1. */
static int64_t find_bit(const unsigned char *p, uint64_t first, uint64_t last, unsigned want)
{
	unsigned char skip = want ? 0x00 : 0xff;
	for (uint64_t i = first; i <= last;) {
		if (!(i & 7) && i + 7 <= last && p[i >> 3] == skip) {
			i += 8;
			continue;
		}
		if (bit_get(p, i) == want)
			return (int64_t)i;
		i++;
	}
	return -1;
}

/* BITPOS key bit [start [end [BYTE|BIT]]]: looking for a 0 with no end
 * given, a string of all ones answers the bit just past it (the value
 * reads as padded with zeros). */
void kv_bitpos(struct kv_call *c)
{
	int64_t want, start = 0, end = -1, first, last;
	bool bit = false;
	const unsigned char *p;
	size_t len;
	if (!kv_arg_ll(c, 2, &want))
		return;
	if (want != 0 && want != 1) {
		kv_err(c, ERR_BIT_ARG);
		return;
	}
	if (!string_for_read(c, 1, &p, &len))
		return;
	if (!p) {
		kv_reply_int(c->out, want ? -1 : 0);
		return;
	}
	if (c->argc > 6) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (c->argc >= 4 && !kv_arg_ll(c, 3, &start))
		return;
	if (c->argc == 6 && !arg_unit(c, 5, &bit))
		return;
	if (c->argc >= 5 && !kv_arg_ll(c, 4, &end))
		return;
	if (!bit_range(start, end, bit, len, &first, &last)) {
		kv_reply_int(c->out, -1);
		return;
	}
	int64_t at = find_bit(p, (uint64_t)first, (uint64_t)last, (unsigned)want);
	if (at < 0 && !want && c->argc < 5)
		at = (last | 7) + 1;
	kv_reply_int(c->out, at);
}

enum bitop { BITOP_AND, BITOP_OR, BITOP_XOR, BITOP_NOT };

/* dst[0..n) = op over the sources (each zero-padded to n). */
static void bitop_apply(enum bitop op, unsigned char *dst, size_t n,
			const unsigned char *const *src, const size_t *slen, uint32_t nsrc)
{
	for (size_t b = 0; b < n; b++) {
		unsigned char v = b < slen[0] ? src[0][b] : 0;
		for (uint32_t k = 1; k < nsrc; k++) {
			unsigned char s = b < slen[k] ? src[k][b] : 0;
			v = op == BITOP_AND ? (unsigned char)(v & s) :
			    op == BITOP_OR ? (unsigned char)(v | s) : (unsigned char)(v ^ s);
		}
		dst[b] = op == BITOP_NOT ? (unsigned char)~v : v;
	}
}

/* The sources of BITOP, gathered (keys 1 on): NULL length 0 for an
 * absent key. False after WRONGTYPE. */
static bool bitop_sources(struct kv_call *c, const struct kv_gather *g,
			  const unsigned char **src, size_t *slen, size_t *max)
{
	*max = 0;
	for (uint32_t k = 1; k < g->nkeys; k++) {
		const struct kv_gval *v = &g->vals[k];

		if (v->found && v->type != KV_STRING) {
			kv_err(c, KV_ERR_WRONGTYPE);
			return false;
		}
		src[k - 1] = v->found ? (const unsigned char *)v->str : NULL;
		slen[k - 1] = v->found ? v->len : 0;
		if (slen[k - 1] > *max)
			*max = slen[k - 1];
	}
	return true;
}

/* BITOP op destkey key [key ...]: the result is built apart (a source may
 * be the destination), then stored; an empty result deletes destkey. The
 * sources are gathered (gather.h), so the keys may live on any shards. */
static void bitop_compute(struct kv_call *c, struct kv_gather *g)
{
	static const char *const names[] = { "and", "or", "xor", "not" };
	int op = -1;
	for (int k = 0; k < 4; k++)
		if (kv_arg_is(c, 1, names[k]))
			op = k;
	if (op < 0) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (op == BITOP_NOT && c->argc != 4) {
		kv_err(c, ERR_BITOP_NOT);
		return;
	}
	uint32_t nsrc = c->argc - 3;
	const unsigned char **src = malloc(nsrc * sizeof(*src));
	size_t *slen = malloc(nsrc * sizeof(*slen)), max;
	unsigned char *res = NULL;
	if (!src || !slen) {
		kv_err_oom(c);
		goto out;
	}
	if (!bitop_sources(c, g, src, slen, &max))
		goto out;
	struct kv_gput *p = kv_gather_add_put(g, 0, kv_gather_replace);
	if (max == 0) {
		kv_reply_int(c->out, 0); /* the write deletes destkey */
		goto out;
	}
	res = malloc(max);
	if (!res) {
		g->nput = 0;
		kv_err_oom(c);
		goto out;
	}
	bitop_apply((enum bitop)op, res, max, src, slen, nsrc);
	/* a built value: Redis's "raw" at any length */
	p->v = (struct kv_gval){ .found = true, .type = KV_STRING, .owned = true, .str = (char *)res,
				 .len = max, .str_enc = KV_STR_RAW, .expire = KV_NO_EXPIRE };
	res = NULL;
	kv_reply_int(c->out, (int64_t)max);
out:
	free(res);
	free(slen);
	free(src);
}

const struct kv_gather_ops kv_bitop_ops = { kv_gather_sources, bitop_compute };

void kv_bitop(struct kv_call *c)
{
	kv_gather_run(c, &kv_bitop_ops);
}

/* ---- BITFIELD ------------------------------------------------------------ */

enum bf_overflow { BF_WRAP, BF_SAT, BF_FAIL };
enum bf_opcode { BF_GET, BF_SET, BF_INCRBY };

struct bf_op {
	uint64_t off;
	int64_t arg;
	enum bf_opcode code;
	enum bf_overflow ow;
	unsigned bits;
	bool sign;
};

/* bits bits of p from bit off, as an unsigned number. */
static uint64_t bf_get_u(const unsigned char *p, uint64_t off, unsigned bits)
{
	uint64_t v = 0;
	for (unsigned j = 0; j < bits; j++)
		v = (v << 1) | bit_get(p, off + j);
	return v;
}

static int64_t bf_get_s(const unsigned char *p, uint64_t off, unsigned bits)
{
	uint64_t v = bf_get_u(p, off, bits);
	if (bits < 64 && (v & ((uint64_t)1 << (bits - 1))))
		v |= UINT64_MAX << bits;
	return (int64_t)v;
}

static void bf_set(unsigned char *p, uint64_t off, unsigned bits, uint64_t v)
{
	for (unsigned j = 0; j < bits; j++)
		bit_put(p, off + j, (unsigned)((v >> (bits - 1 - j)) & 1));
}

/* Whether value + incr leaves the unsigned range of bits bits: 0 no, else
 * (WRAP, SAT) the value to store in *limit. Redis's arithmetic, wraps
 * included. */
static int bf_overflow_u(uint64_t value, int64_t incr, unsigned bits, enum bf_overflow ow,
			 uint64_t *limit)
{
	uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
	int64_t maxincr = (int64_t)(max - value), minincr = (int64_t)(0 - value);
	int r = 0;
	if (value > max || (incr > 0 && incr > maxincr)) {
		r = 1;
		*limit = max;
	} else if (incr < 0 && incr < minincr) {
		r = -1;
		*limit = 0;
	}
	if (r && ow == BF_WRAP)
		*limit = (value + (uint64_t)incr) & ~(UINT64_MAX << bits);
	return r;
}

static int bf_overflow_s(int64_t value, int64_t incr, unsigned bits, enum bf_overflow ow,
			 int64_t *limit)
{
	int64_t max = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
	int64_t min = -max - 1;
	int64_t maxincr = (int64_t)((uint64_t)max - (uint64_t)value);
	int64_t minincr = (int64_t)((uint64_t)min - (uint64_t)value);
	int r = 0;
	if (value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr)) {
		r = 1;
		*limit = max;
	} else if (value < min || (bits != 64 && incr < minincr) ||
		   (value < 0 && incr < 0 && incr < minincr)) {
		r = -1;
		*limit = min;
	}
	if (r && ow == BF_WRAP) {
		uint64_t sum = (uint64_t)value + (uint64_t)incr;
		if (bits < 64)
			sum = sum & ((uint64_t)1 << (bits - 1)) ? sum | (UINT64_MAX << bits) :
								  sum & ~(UINT64_MAX << bits);
		*limit = (int64_t)sum;
	}
	return r;
}

/* A bitfield type (i1..i64, u1..u63) at argument i; false after the
 * error. */
static bool arg_bf_type(struct kv_call *c, uint32_t i, bool *sign, unsigned *bits)
{
	int64_t n;
	const char *s = c->argv[i];
	size_t l = c->argl[i];
	*sign = l > 0 && s[0] == 'i';
	if (l == 0 || (s[0] != 'i' && s[0] != 'u') || !kv_str2ll(s + 1, l - 1, &n) || n < 1 ||
	    n > (*sign ? 64 : 63)) {
		kv_err(c, ERR_BF_TYPE);
		return false;
	}
	*bits = (unsigned)n;
	return true;
}

/* OVERFLOW's argument i; false after the error. */
static bool arg_bf_overflow(struct kv_call *c, uint32_t i, enum bf_overflow *ow)
{
	static const char *const names[] = { "wrap", "sat", "fail" };
	for (int k = 0; k < 3; k++)
		if (kv_arg_is(c, i, names[k])) {
			*ow = (enum bf_overflow)k;
			return true;
		}
	kv_err(c, ERR_BF_OVERFLOW);
	return false;
}

/* The subcommand at argument *i into op (*i moves past its arguments);
 * an OVERFLOW changes *ow and adds no op (*got false). False after the
 * error. */
static bool bf_parse_one(struct kv_call *c, uint32_t *i, enum bf_overflow *ow, struct bf_op *op,
			 bool *got)
{
	uint32_t j = *i, left = c->argc - j - 1;
	*got = false;
	if (kv_arg_is(c, j, "overflow") && left >= 1) {
		*i = j + 2;
		return arg_bf_overflow(c, j + 1, ow);
	}
	if (kv_arg_is(c, j, "get") && left >= 2)
		op->code = BF_GET;
	else if (kv_arg_is(c, j, "set") && left >= 3)
		op->code = BF_SET;
	else if (kv_arg_is(c, j, "incrby") && left >= 3)
		op->code = BF_INCRBY;
	else {
		kv_err(c, KV_ERR_SYNTAX);
		return false;
	}
	op->ow = *ow;
	op->arg = 0;
	if (!arg_bf_type(c, j + 1, &op->sign, &op->bits) ||
	    !arg_bit_offset(c, j + 2, true, op->bits, &op->off) ||
	    (op->code != BF_GET && !kv_arg_ll(c, j + 3, &op->arg)))
		return false;
	*i = j + (op->code == BF_GET ? 3 : 4);
	*got = true;
	return true;
}

/* Every subcommand into ops (room for argc / 3); *n of them, *maxbit the
 * last bit a write reaches (-1: no write). False after the error. */
static bool bf_parse(struct kv_call *c, struct bf_op *ops, size_t *n, int64_t *maxbit)
{
	enum bf_overflow ow = BF_WRAP;
	bool got;
	*n = 0;
	*maxbit = -1;
	for (uint32_t i = 2; i < c->argc;) {
		if (!bf_parse_one(c, &i, &ow, &ops[*n], &got))
			return false;
		if (!got)
			continue;
		struct bf_op *op = &ops[(*n)++];
		int64_t last = (int64_t)(op->off + op->bits - 1);
		if (op->code != BF_GET && last > *maxbit)
			*maxbit = last;
	}
	return true;
}

/* GET: read from a copy of the 9 bytes the field can span, zero past the
 * string's end. */
static void bf_reply_get(struct kv_call *c, const struct bf_op *op, const unsigned char *p,
			 size_t len)
{
	unsigned char buf[9] = { 0 };
	uint64_t byte = op->off >> 3;
	for (uint64_t k = 0; k < 9 && p && byte + k < len; k++)
		buf[k] = p[byte + k];
	uint64_t at = op->off - byte * 8;
	kv_reply_int(c->out, op->sign ? bf_get_s(buf, at, op->bits) : (int64_t)bf_get_u(buf, at, op->bits));
}

/* SET or INCRBY on p: replies the old (SET) or new (INCRBY) value, or nil
 * when OVERFLOW FAIL stops it. */
static void bf_write(struct kv_call *c, const struct bf_op *op, unsigned char *p)
{
	bool incr = op->code == BF_INCRBY, fail;
	uint64_t stored;
	int64_t reply;
	if (op->sign) {
		int64_t old = bf_get_s(p, op->off, op->bits), lim = 0;
		int64_t nv = incr ? (int64_t)((uint64_t)old + (uint64_t)op->arg) : op->arg;
		int r = incr ? bf_overflow_s(old, op->arg, op->bits, op->ow, &lim) :
			       bf_overflow_s(op->arg, 0, op->bits, op->ow, &lim);
		if (r)
			nv = lim;
		fail = r && op->ow == BF_FAIL;
		stored = (uint64_t)nv;
		reply = incr ? nv : old;
	} else {
		uint64_t old = bf_get_u(p, op->off, op->bits), lim = 0;
		uint64_t nv = incr ? old + (uint64_t)op->arg : (uint64_t)op->arg;
		int r = incr ? bf_overflow_u(old, op->arg, op->bits, op->ow, &lim) :
			       bf_overflow_u((uint64_t)op->arg, 0, op->bits, op->ow, &lim);
		if (r)
			nv = lim;
		fail = r && op->ow == BF_FAIL;
		stored = nv;
		reply = (int64_t)(incr ? nv : old);
	}
	if (fail) {
		kv_reply_null(c->out);
		return;
	}
	kv_reply_int(c->out, reply);
	bf_set(p, op->off, op->bits, stored);
}

static void bitfield_generic(struct kv_call *c, bool readonly)
{
	struct bf_op *ops = malloc((c->argc / 3 + 1) * sizeof(*ops));
	size_t n, len = 0;
	int64_t maxbit;
	const unsigned char *rp = NULL;
	unsigned char *wp = NULL;
	if (!ops) {
		kv_err_oom(c);
		return;
	}
	if (!bf_parse(c, ops, &n, &maxbit))
		goto out;
	if (maxbit < 0) {
		if (!string_for_read(c, 1, &rp, &len))
			goto out;
	} else if (readonly) {
		kv_err(c, ERR_BF_RO);
		goto out;
	} else {
		wp = string_for_bits(c, (uint64_t)maxbit, &len);
		if (!wp)
			goto out;
		rp = wp;
	}
	kv_reply_array(c->out, n);
	for (size_t k = 0; k < n; k++) {
		if (ops[k].code == BF_GET)
			bf_reply_get(c, &ops[k], rp, len);
		else
			bf_write(c, &ops[k], wp);
	}
out:
	free(ops);
}

/* BITFIELD key [GET type off | SET type off v | INCRBY type off n |
 * OVERFLOW WRAP|SAT|FAIL] ... */
void kv_bitfield(struct kv_call *c)
{
	bitfield_generic(c, false);
}

void kv_bitfield_ro(struct kv_call *c)
{
	bitfield_generic(c, true);
}
