/* SPDX-License-Identifier: MIT */
/* percore io: reading a journal back (percore/journal.h). Segments are
 * read whole, one at a time, in name (= LSN) order. A segment ends
 * cleanly at its end of file or at a header of zeros (the preallocated
 * part never written); anything else that does not check out stops the
 * log there for good. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/journal_fmt.h"

struct pc_journal_iter {
	int dfd;                 /* the directory, for openat and fsync */
	char *dir;
	char **names;            /* segments, sorted */
	size_t nnames, cur;      /* cur: the segment being read */
	unsigned char *data;     /* segment cur, whole; NULL: not loaded */
	size_t size, off;
	uint64_t expect;         /* the next record's LSN; 0: any */
	bool bad;                /* stopped at a bad record */
	char path[4096];
};

static bool segment_name(const char *n)
{
	size_t len = strlen(n);

	return len == JRN_NAME_LEN && strspn(n, "0123456789") == 20 &&
	       !strcmp(n + 20, JRN_SUFFIX);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_segments(struct pc_journal_iter *it)
{
	DIR *d = fdopendir(dup(it->dfd));
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!segment_name(e->d_name))
			continue;
		if (it->nnames == cap) {
			char **n = realloc(it->names, (cap = cap ? 2 * cap : 16) * sizeof(*n));

			if (!n)
				break;
			it->names = n;
		}
		if (!(it->names[it->nnames] = strdup(e->d_name)))
			break;
		it->nnames++;
	}
	closedir(d);
	if (e)
		return -ENOMEM;
	if (it->nnames)
		qsort(it->names, it->nnames, sizeof(*it->names), by_name);
	return 0;
}

int pc_journal_iter_open(struct pc_journal_iter **out, const char *dir)
{
	struct pc_journal_iter *it = calloc(1, sizeof(*it));
	int rc;

	if (!it || !(it->dir = strdup(dir))) {
		free(it);
		return -ENOMEM;
	}
	it->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (it->dfd < 0 && errno != ENOENT) {
		rc = -errno;
		pc_journal_iter_close(it);
		return rc;
	}
	rc = it->dfd >= 0 ? list_segments(it) : 0;
	if (rc) {
		pc_journal_iter_close(it);
		return rc;
	}
	*out = it;
	return 0;
}

/* Read segment cur whole. */
static int load(struct pc_journal_iter *it)
{
	int fd = openat(it->dfd, it->names[it->cur], O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		rc = -errno;
	it->size = rc ? 0 : (size_t)st.st_size;
	it->data = malloc(it->size ? it->size : 1);
	if (!rc && !it->data)
		rc = -ENOMEM;
	for (size_t got = 0; !rc && got < it->size;) {
		ssize_t n = pread(fd, it->data + got, it->size - got, (off_t)got);

		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			got += (size_t)n;
	}
	close(fd);
	it->off = 0;
	snprintf(it->path, sizeof(it->path), "%s/%s", it->dir, it->names[it->cur]);
	return rc;
}

static bool zeros(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int stop_bad(struct pc_journal_iter *it)
{
	it->bad = true;
	return -EBADMSG;
}

/* The segment's first LSN, from its name, must follow the last record. */
static int enter_segment(struct pc_journal_iter *it)
{
	uint64_t first = strtoull(it->names[it->cur], NULL, 10);
	int rc = load(it);

	if (rc)
		return rc;
	if (it->expect && first != it->expect)
		return stop_bad(it);
	it->expect = first;
	return 0;
}

static void leave_segment(struct pc_journal_iter *it)
{
	free(it->data);
	it->data = NULL;
	it->cur++;
}

int pc_journal_iter_next(struct pc_journal_iter *it, uint64_t *lsn, const void **p, size_t *len)
{
	for (;;) {
		const unsigned char *h;
		size_t left;
		uint32_t n;

		if (it->bad)
			return -EBADMSG;
		if (!it->data) {
			int rc;

			if (it->cur == it->nnames)
				return 0;
			if ((rc = enter_segment(it)))
				return rc;
		}
		h = it->data + it->off;
		left = it->size - it->off;
		if (left < PC_JOURNAL_HEADER ? zeros(h, left) : zeros(h, PC_JOURNAL_HEADER)) {
			leave_segment(it); /* clean end of this segment */
			continue;
		}
		if (left < PC_JOURNAL_HEADER)
			return stop_bad(it);
		n = jrn_le32(h);
		if (n > left - PC_JOURNAL_HEADER || n > PC_JOURNAL_MAX_RECORD ||
		    jrn_le32(h + 4) != jrn_crc(h, h + PC_JOURNAL_HEADER, n) ||
		    jrn_le64(h + 8) != it->expect)
			return stop_bad(it);
		*lsn = it->expect++;
		*p = h + PC_JOURNAL_HEADER;
		*len = n;
		it->off += PC_JOURNAL_HEADER + n;
		return 1;
	}
}

const char *pc_journal_iter_where(const struct pc_journal_iter *it, uint64_t *offset)
{
	*offset = it->data ? it->off : 0;
	return it->data ? it->path : NULL;
}

int pc_journal_iter_truncate(struct pc_journal_iter *it)
{
	int fd, rc = 0;

	if (!it->bad || !it->data)
		return -EINVAL;
	fd = openat(it->dfd, it->names[it->cur], O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)it->off) || fsync(fd))
		rc = -errno;
	close(fd);
	for (size_t i = it->cur + 1; !rc && i < it->nnames; i++)
		if (unlinkat(it->dfd, it->names[i], 0) && errno != ENOENT)
			rc = -errno;
	if (!rc && fsync(it->dfd))
		rc = -errno;
	return rc;
}

void pc_journal_iter_close(struct pc_journal_iter *it)
{
	if (!it)
		return;
	for (size_t i = 0; i < it->nnames; i++)
		free(it->names[i]);
	free(it->names);
	free(it->data);
	if (it->dfd >= 0)
		close(it->dfd);
	free(it->dir);
	free(it);
}
