/* SPDX-License-Identifier: MIT */
/* Glob matching with Redis's semantics: see glob.h. */
#include "glob.h"

#define MAX_NESTING 1000

struct glob {
	bool give_up;   /* a '*' found no match for the rest anywhere: longer tries cannot match either */
	int depth;
};

static bool match(struct glob *g, const char *p, size_t pl, const char *s, size_t sl);

/* '*' at p[0]: try the rest of the pattern at every position of s. */
static bool match_star(struct glob *g, const char *p, size_t pl, const char *s, size_t sl)
{
	while (pl > 1 && p[1] == '*') {
		p++;
		pl--;
	}
	if (pl == 1)
		return true;
	if (++g->depth > MAX_NESTING)
		return false;
	for (; sl; s++, sl--) {
		if (match(g, p + 1, pl - 1, s, sl))
			return true;
		if (g->give_up)
			return false;
	}
	g->give_up = true;
	return false;
}

/* A '[' set at the head of *p (after the '['): whether c is in it. Moves
 * *p and *pl to the set's closing ']' (or the pattern's last byte when it
 * has none, as Redis does). */
static bool match_set(const char **pp, size_t *plp, char c)
{
	const char *p = *pp;
	size_t pl = *plp;
	bool not = pl && p[0] == '^', hit = false;

	if (not) {
		p++;
		pl--;
	}
	for (;; p++, pl--) {
		if (pl == 0) {
			p--;
			pl++;
			break;
		}
		if (p[0] == '\\' && pl >= 2) {
			p++;
			pl--;
			hit |= p[0] == c;
		} else if (p[0] == ']') {
			break;
		} else if (pl >= 3 && p[1] == '-') {
			unsigned char lo = (unsigned char)p[0], hi = (unsigned char)p[2];
			if (lo > hi) {
				unsigned char t = lo;
				lo = hi;
				hi = t;
			}
			hit |= (unsigned char)c >= lo && (unsigned char)c <= hi;
			p += 2;
			pl -= 2;
		} else {
			hit |= p[0] == c;
		}
	}
	*pp = p;
	*plp = pl;
	return not ? !hit : hit;
}

static bool match(struct glob *g, const char *p, size_t pl, const char *s, size_t sl)
{
	size_t slen = sl;

	while (pl && sl) {
		switch (p[0]) {
		case '*':
			return match_star(g, p, pl, s, sl);
		case '?':
			break;
		case '[':
			p++;
			pl--;
			if (!match_set(&p, &pl, s[0]))
				return false;
			break;
		case '\\':
			if (pl >= 2) {
				p++;
				pl--;
			}
			/* fall through */
		default:
			if (p[0] != s[0])
				return false;
			break;
		}
		s++;
		sl--;
		p++;
		pl--;
	}
	/* the string was used up here: trailing '*' match nothing. (Redis
	 * skips them only after consuming a byte: "*" does not match "") */
	while (sl == 0 && slen && pl && p[0] == '*') {
		p++;
		pl--;
	}
	return pl == 0 && sl == 0;
}

bool kv_glob_match(const char *p, size_t plen, const char *s, size_t slen)
{
	struct glob g = { false, 0 };
	return match(&g, p, plen, s, slen);
}
