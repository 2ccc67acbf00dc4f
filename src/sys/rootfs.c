/* percore internal: reading /proc and /sys through a root prefix. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/rootfs.h"

bool pc_rootfs_is_real(const char *root)
{
	if (!root)
		return true;
	while (*root == '/')
		root++;
	return *root == '\0';
}

const char *pc_rootfs_prefix(const char *root)
{
	return pc_rootfs_is_real(root) ? "" : root;
}

static int vjoin(char *buf, size_t len, const char *root, const char *fmt, va_list ap)
{
	const char *pre = pc_rootfs_prefix(root);
	size_t plen = strlen(pre);
	int n;

	/* "dir/" + "/proc" would still work, but a clean path reads better in
	 * messages that quote it. */
	while (plen > 1 && pre[plen - 1] == '/')
		plen--;
	if (plen >= len)
		return -ENAMETOOLONG;
	memcpy(buf, pre, plen);
	n = vsnprintf(buf + plen, len - plen, fmt, ap);
	if (n < 0 || (size_t)n >= len - plen)
		return -ENAMETOOLONG;
	return 0;
}

int pc_rootfs_path(char *buf, size_t len, const char *root, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vjoin(buf, len, root, fmt, ap);
	va_end(ap);
	return rc;
}

static ssize_t read_abs(const char *path, char *buf, size_t len)
{
	size_t used = 0;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (used < len - 1) {
		ssize_t n = read(fd, buf + used, len - 1 - used);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	while (used > 0 && isspace((unsigned char)buf[used - 1]))
		buf[--used] = '\0';
	return (ssize_t)used;
}

ssize_t pc_rootfs_read(const char *root, const char *path, char *buf, size_t len)
{
	char full[PC_ROOTFS_PATH_MAX];

	if (len == 0)
		return -EINVAL;
	buf[0] = '\0';
	if (pc_rootfs_path(full, sizeof(full), root, "%s", path))
		return -ENAMETOOLONG;
	return read_abs(full, buf, len);
}

ssize_t pc_rootfs_readf(char *buf, size_t len, const char *root, const char *fmt, ...)
{
	char full[PC_ROOTFS_PATH_MAX];
	va_list ap;
	int rc;

	if (len == 0)
		return -EINVAL;
	buf[0] = '\0';
	va_start(ap, fmt);
	rc = vjoin(full, sizeof(full), root, fmt, ap);
	va_end(ap);
	if (rc)
		return rc;
	return read_abs(full, buf, len);
}

int pc_rootfs_read_ll(const char *root, const char *path, long long *v)
{
	char buf[64], *end;
	ssize_t n = pc_rootfs_read(root, path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	if (n == 0 || errno || *end != '\0')
		return -EPROTO;
	return 0;
}

bool pc_rootfs_exists(const char *root, const char *path)
{
	char full[PC_ROOTFS_PATH_MAX];
	struct stat st;

	if (pc_rootfs_path(full, sizeof(full), root, "%s", path))
		return false;
	return stat(full, &st) == 0;
}

char *pc_str_trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

bool pc_str_has_word(const char *list, const char *word, const char *seps)
{
	size_t wl = strlen(word);
	const char *p = list;

	if (wl == 0)
		return false;
	while (*p) {
		size_t tl;

		p += strspn(p, seps);
		tl = strcspn(p, seps);
		if (tl == wl && !strncmp(p, word, wl))
			return true;
		p += tl;
	}
	return false;
}
