/* SPDX-License-Identifier: MIT */
/* Helpers shared by the environment tests: fixture paths and scratch trees.
 * A fake machine is a folder holding proc/ and sys/; tests either read the
 * fixtures in the source tree or build (or copy) one under a temp folder. */
#ifndef PC_TEST_ENVTEST_H
#define PC_TEST_ENVTEST_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The fixture tree tests/fixtures/env/<name>, from $PC_SOURCE_DIR. */
static inline const char *envtest_fixture(const char *name)
{
	static char path[4][1024];
	static int next;
	const char *src = getenv("PC_SOURCE_DIR");
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/tests/fixtures/env/%s", src ? src : ".", name);
	return p;
}

/* mkdir -p for the parent folders of path. */
static inline int envtest_mkparents(const char *path)
{
	char tmp[1024];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *s = strchr(tmp + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

/* Write text (verbatim) to root/rel, creating folders. Returns 0 or -errno. */
static inline int envtest_write(const char *root, const char *rel, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (envtest_mkparents(path))
		return -errno;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

/* Read root/rel whole into a malloc'd string, or NULL. */
static inline char *envtest_slurp(const char *root, const char *rel)
{
	char path[1024], *buf = NULL;
	size_t len = 0;
	FILE *f, *m;
	int c;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	while (m && (c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	if (m)
		fclose(m);
	return buf;
}

/* A fresh empty folder under $TMPDIR (or /tmp); caller frees and removes. */
static inline char *envtest_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	char *p;

	if (asprintf(&p, "%s/pc_env_XXXXXX", t ? t : "/tmp") < 0)
		return NULL;
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

/* Copy a fixture tree into a new temp folder (cp -a keeps the links). */
static inline char *envtest_copy_fixture(const char *name)
{
	char *dir = envtest_tmpdir(), cmd[2048];

	if (!dir)
		return NULL;
	snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", envtest_fixture(name), dir);
	if (system(cmd) != 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* Remove a temp tree made by the helpers above and free its name. */
static inline void envtest_rmtree(char *dir)
{
	char cmd[1100];

	if (!dir)
		return;
	if (strncmp(dir, "/tmp/", 5) == 0 || getenv("TMPDIR")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	free(dir);
}

/* Tree comparison state for nftw, which passes no user pointer. */
static const char *envtest_cmp_a, *envtest_cmp_b, *envtest_cmp_skip;
static int envtest_cmp_diffs;

/* Compare one entry of tree A with the same path under tree B: bytes of
 * regular files, targets of links, and that folders exist. */
static inline int envtest_cmp_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	const char *rel = path + strlen(envtest_cmp_a);
	char other[2048], la[1024], lb[1024];
	struct stat so;

	(void)f;
	if (*rel == '/')
		rel++;
	if (envtest_cmp_skip && !strncmp(rel, envtest_cmp_skip, strlen(envtest_cmp_skip)))
		return 0;
	snprintf(other, sizeof(other), "%s/%s", envtest_cmp_b, rel);
	if (lstat(other, &so) || (so.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		fprintf(stderr, "differs: %s missing or of another type in %s\n", rel, envtest_cmp_b);
		envtest_cmp_diffs++;
	} else if (type == FTW_SL) {
		ssize_t na = readlink(path, la, sizeof(la)), nb = readlink(other, lb, sizeof(lb));

		if (na != nb || na < 0 || memcmp(la, lb, (size_t)na)) {
			fprintf(stderr, "differs: link %s\n", rel);
			envtest_cmp_diffs++;
		}
	} else if (type == FTW_F) {
		char *x = envtest_slurp(envtest_cmp_a, rel), *y = envtest_slurp(envtest_cmp_b, rel);

		if (!x || !y || st->st_size != so.st_size || strcmp(x, y)) {
			fprintf(stderr, "differs: %s: \"%s\" vs \"%s\"\n", rel, x ? x : "?", y ? y : "?");
			envtest_cmp_diffs++;
		}
		free(x);
		free(y);
	}
	return 0;
}

/* Number of differences between trees a and b, both ways, ignoring
 * entries whose relative path starts with skip (NULL: none). */
static inline int envtest_tree_diff(const char *a, const char *b, const char *skip)
{
	envtest_cmp_diffs = 0;
	envtest_cmp_skip = skip;
	envtest_cmp_a = a;
	envtest_cmp_b = b;
	nftw(a, envtest_cmp_one, 16, FTW_PHYS);
	envtest_cmp_a = b;
	envtest_cmp_b = a;
	nftw(b, envtest_cmp_one, 16, FTW_PHYS);
	return envtest_cmp_diffs;
}

#endif
