/* SPDX-License-Identifier: MIT */
/* percore internal: reading /proc and /sys through a root prefix.
 *
 * Everything the machine layer learns from the kernel's files goes through
 * these helpers, so the same code reads the real machine (root NULL or "/")
 * or a fake tree under a folder (tests, and planning for another machine).
 * Paths given here are absolute paths as seen on the machine ("/proc/..."). */
#ifndef PERCORE_SYS_ROOTFS_H
#define PERCORE_SYS_ROOTFS_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Longest path the helpers build. */
#define PC_ROOTFS_PATH_MAX 4096

/* The prefix to put before absolute paths: "" for the real machine, else
 * root without trailing slashes. Never NULL. */
const char *sys_rootfs_prefix(const char *root);

/* True when root names the real machine (NULL, "", or only slashes). */
bool sys_rootfs_is_real(const char *root);

/* Join root and the printf-formatted absolute path into buf.
 * Returns 0, or -ENAMETOOLONG when buf is too small. */
int sys_rootfs_path(char *buf, size_t len, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Read the file root+path into buf (at most len-1 bytes), NUL-terminate it
 * and trim trailing white space. Returns the length kept, or -errno
 * (-ENOENT missing, -EACCES unreadable, -EINVAL len 0). */
ssize_t sys_rootfs_read(const char *root, const char *path, char *buf, size_t len);

/* sys_rootfs_read with a printf-formatted path. */
ssize_t sys_rootfs_readf(char *buf, size_t len, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The whole file root+path as a malloc'd string (trailing white space
 * kept), or NULL when it cannot be read or memory runs out. For files of
 * any size, such as /proc/cpuinfo on a large machine. */
char *sys_rootfs_slurp(const char *root, const char *path);

/* Read a file holding one integer. Returns 0, -errno from reading, or
 * -EPROTO when the text is not a whole integer. */
int sys_rootfs_read_ll(const char *root, const char *path, long long *v);

/* True when root+path exists (any type). */
bool sys_rootfs_exists(const char *root, const char *path);

/* The CPUs that have a cpuN folder under root's /sys/devices/system/cpu
 * (empty when there is none). */
void sys_rootfs_cpus(const char *root, cpu_set_t *set);

/* Strip leading and trailing white space in place; returns s. */
char *sys_str_trim(char *s);

/* True when word appears in the space- or comma-separated list. */
bool sys_str_has_word(const char *list, const char *word, const char *seps);

/* The bracketed choice in a kernel choice list ("always [madvise] never"
 * gives "madvise") into buf; text without brackets is taken whole (a fake
 * tree written by a plain echo). Returns 0, or -EPROTO when there is no
 * single word to take. */
int sys_str_selected(const char *text, char *buf, size_t len);

/* Write value to the kernel attribute root+path (a sysfs or procfs file).
 * On a plain file (a fake tree) write the text the kernel would show
 * afterwards instead: a choice list gets its brackets moved to value
 * ("[always] madvise never" -> "always [madvise] never"), anything else
 * becomes value and a newline. Returns 0, or -errno (-EINVAL when value is
 * not one of a choice list's words). */
int sys_rootfs_write_attr(const char *root, const char *path, const char *value);

#endif
