/* SPDX-License-Identifier: MIT */
/* percore internal: reading /proc and /sys through a root prefix. */
#include "sys/rootfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

bool sys_rootfs_is_real(const char *root)
{
	if (!root)
		return true;
	while (*root == '/')
		root++;
	return *root == '\0';
}

const char *sys_rootfs_prefix(const char *root)
{
	return sys_rootfs_is_real(root) ? "" : root;
}

static int vjoin(char *buf, size_t len, const char *root, const char *fmt, va_list ap)
{
	const char *pre = sys_rootfs_prefix(root);
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

int sys_rootfs_path(char *buf, size_t len, const char *root, const char *fmt, ...)
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

ssize_t sys_rootfs_read(const char *root, const char *path, char *buf, size_t len)
{
	char full[PC_ROOTFS_PATH_MAX];

	if (len == 0)
		return -EINVAL;
	buf[0] = '\0';
	if (sys_rootfs_path(full, sizeof(full), root, "%s", path))
		return -ENAMETOOLONG;
	return read_abs(full, buf, len);
}

ssize_t sys_rootfs_readf(char *buf, size_t len, const char *root, const char *fmt, ...)
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

char *sys_rootfs_slurp(const char *root, const char *path)
{
	char full[PC_ROOTFS_PATH_MAX], chunk[4096], *buf = NULL;
	size_t len = 0;
	FILE *mem;
	ssize_t n;
	int fd;

	if (sys_rootfs_path(full, sizeof(full), root, "%s", path))
		return NULL;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	mem = open_memstream(&buf, &len);
	if (!mem) {
		close(fd);
		return NULL;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && fwrite(chunk, 1, (size_t)n, mem) != (size_t)n)
			break;
	close(fd);
	if (fclose(mem) || n != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int sys_rootfs_read_ll(const char *root, const char *path, long long *v)
{
	char buf[64], *end;
	ssize_t n = sys_rootfs_read(root, path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	if (n == 0 || errno || *end != '\0')
		return -EPROTO;
	return 0;
}

bool sys_rootfs_exists(const char *root, const char *path)
{
	char full[PC_ROOTFS_PATH_MAX];
	struct stat st;

	if (sys_rootfs_path(full, sizeof(full), root, "%s", path))
		return false;
	return stat(full, &st) == 0;
}

void sys_rootfs_cpus(const char *root, cpu_set_t *set)
{
	char path[PC_ROOTFS_PATH_MAX];
	struct dirent *e;
	DIR *d;

	CPU_ZERO(set);
	if (sys_rootfs_path(path, sizeof(path), root, "/sys/devices/system/cpu"))
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long n;

		if (strncmp(e->d_name, "cpu", 3) || e->d_name[3] < '0' || e->d_name[3] > '9')
			continue;
		n = strtol(e->d_name + 3, &end, 10);
		if (*end == '\0' && n < CPU_SETSIZE)
			CPU_SET((int)n, set);
	}
	closedir(d);
}

char *sys_str_trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

bool sys_str_has_word(const char *list, const char *word, const char *seps)
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

int sys_str_selected(const char *text, char *buf, size_t len)
{
	const char *open = strchr(text, '['), *close;
	size_t n;

	if (open) {
		close = strchr(open, ']');
		if (!close)
			return -EPROTO;
		open++;
	} else {
		while (isspace((unsigned char)*text))
			text++;
		open = text;
		close = open + strlen(open);
		while (close > open && isspace((unsigned char)close[-1]))
			close--;
	}
	n = (size_t)(close - open);
	if (n == 0 || n >= len || memchr(open, ' ', n))
		return -EPROTO;
	memcpy(buf, open, n);
	buf[n] = '\0';
	return 0;
}

/* Move the brackets of a choice list to value, as the kernel would show
 * the list after value was written. */
static int rechoose(const char *list, const char *value, char *out, size_t len)
{
	size_t used = 0, vl = strlen(value);
	bool found = false;

	out[0] = '\0';
	for (const char *p = list; *p; ) {
		const char *w;
		size_t tl, wl;
		bool pick;
		int n;

		p += strspn(p, " \n");
		tl = strcspn(p, " \n");
		if (tl == 0)
			break;
		w = p;
		wl = tl;
		if (w[0] == '[' && wl >= 2 && w[wl - 1] == ']') {
			w++;
			wl -= 2;
		}
		pick = wl == vl && !strncmp(w, value, wl);
		found |= pick;
		n = snprintf(out + used, len - used, "%s%s%.*s%s", used ? " " : "", pick ? "[" : "",
			     (int)wl, w, pick ? "]" : "");
		if (n < 0 || (size_t)n >= len - used)
			return -ENAMETOOLONG;
		used += (size_t)n;
		p += tl;
	}
	return found ? 0 : -EINVAL;
}

static bool on_kernel_fs(const char *full)
{
	struct statfs sf;

	return statfs(full, &sf) == 0 &&
	       (sf.f_type == SYSFS_MAGIC || sf.f_type == PROC_SUPER_MAGIC);
}

int sys_rootfs_write_attr(const char *root, const char *path, const char *value)
{
	char full[PC_ROOTFS_PATH_MAX], cur[1024], text[1100];
	bool kernel;
	size_t len;
	ssize_t n;
	int fd;

	if (sys_rootfs_path(full, sizeof(full), root, "%s", path))
		return -ENAMETOOLONG;
	kernel = on_kernel_fs(full);
	if (kernel || (n = read_abs(full, cur, sizeof(cur))) < 0 || !strchr(cur, '[')) {
		if ((size_t)snprintf(text, sizeof(text), "%s\n", value) >= sizeof(text))
			return -ENAMETOOLONG;
	} else {
		int rc = rechoose(cur, value, text, sizeof(text) - 1);

		if (rc)
			return rc;
		strcat(text, "\n");
	}
	/* A kernel attribute takes one write of the whole value; truncating a
	 * plain file is what makes it hold only the new text. */
	fd = open(full, O_WRONLY | O_CLOEXEC | (kernel ? 0 : O_TRUNC));
	if (fd < 0)
		return -errno;
	len = strlen(text);
	n = write(fd, text, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	if (close(fd))
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}
