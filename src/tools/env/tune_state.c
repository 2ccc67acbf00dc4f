/* SPDX-License-Identifier: MIT */
/* percore: the tune state file: the values tune changed, for reset.
 *
 * JSON through cJSON. The file decides what reset (often run as root)
 * writes where, so loading is strict: a regular file owned by this user,
 * writable by no one else, whose every entry names a file tune itself
 * would write and a plain word as its value. */
#include "env/tune_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FORMAT "percore-tune-state"
#define STATE_VERSION 1
#define STATE_MAX_BYTES (1 << 20)

bool sys_tune_value_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n >= 64)
		return false;
	for (; *v; v++)
		if (!(*v >= 'a' && *v <= 'z') && !(*v >= 'A' && *v <= 'Z') &&
		    !(*v >= '0' && *v <= '9') && !strchr("_-+", *v))
			return false;
	return true;
}

/* Read a state file with the checks above; *text is malloc'd. */
static int read_owned(const char *file, char **text)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EINVAL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size > STATE_MAX_BYTES) {
		close(fd);
		return -EINVAL;
	}
	*text = malloc((size_t)st.st_size + 1);
	if (!*text) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, *text, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(*text);
		return -EINVAL;
	}
	(*text)[n] = '\0';
	return 0;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int parse_change(const cJSON *e, struct pc_tune_change *c)
{
	const char *setting = str_of(e, "setting"), *path = str_of(e, "path");
	const char *old = str_of(e, "old"), *new = str_of(e, "new");

	if (!setting || !path || !old || !new || strlen(path) >= sizeof(c->path) ||
	    !sys_tune_value_ok(old) || !sys_tune_value_ok(new))
		return -EINVAL;
	c->setting = sys_tune_setting_for(setting, path, &c->cpu);
	if (!c->setting)
		return -EINVAL;
	snprintf(c->path, sizeof(c->path), "%s", path);
	snprintf(c->old_value, sizeof(c->old_value), "%s", old);
	snprintf(c->new_value, sizeof(c->new_value), "%s", new);
	return 0;
}

int sys_tune_state_parse(const char *text, struct pc_tune_state *s)
{
	const cJSON *changes, *e, *version;
	const char *format, *root;
	cJSON *j;
	int rc;

	memset(s, 0, sizeof(*s));
	j = cJSON_Parse(text);
	if (!j)
		return -EINVAL;
	format = str_of(j, "format");
	root = str_of(j, "root");
	version = cJSON_GetObjectItemCaseSensitive(j, "version");
	changes = cJSON_GetObjectItemCaseSensitive(j, "changes");
	rc = -EINVAL;
	if (format && !strcmp(format, STATE_FORMAT) && cJSON_IsNumber(version) &&
	    version->valueint == STATE_VERSION && root && strlen(root) < sizeof(s->root) &&
	    cJSON_IsArray(changes)) {
		snprintf(s->root, sizeof(s->root), "%s", root);
		rc = 0;
		cJSON_ArrayForEach(e, changes) {
			struct pc_tune_change c;

			if ((rc = parse_change(e, &c)) || (rc = sys_tune_state_add(s, &c)))
				break;
		}
	}
	cJSON_Delete(j);
	if (rc)
		sys_tune_state_free(s);
	return rc;
}

int sys_tune_state_load(const char *file, struct pc_tune_state *s)
{
	char *text = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = read_owned(file, &text);
	if (rc)
		return rc;
	rc = sys_tune_state_parse(text, s);
	free(text);
	return rc;
}

static char *state_json(const struct pc_tune_state *s)
{
	cJSON *j = cJSON_CreateObject(), *arr = NULL;
	char *text = NULL;
	bool ok;

	ok = j && cJSON_AddStringToObject(j, "format", STATE_FORMAT) &&
	     cJSON_AddNumberToObject(j, "version", STATE_VERSION) &&
	     cJSON_AddStringToObject(j, "root", s->root) &&
	     (arr = cJSON_AddArrayToObject(j, "changes"));
	for (size_t i = 0; ok && i < s->n; i++) {
		cJSON *o = cJSON_CreateObject();

		ok = o && cJSON_AddItemToArray(arr, o) &&
		     cJSON_AddStringToObject(o, "setting", s->c[i].setting) &&
		     cJSON_AddStringToObject(o, "path", s->c[i].path) &&
		     cJSON_AddStringToObject(o, "old", s->c[i].old_value) &&
		     cJSON_AddStringToObject(o, "new", s->c[i].new_value);
	}
	if (ok)
		text = cJSON_Print(j);
	cJSON_Delete(j);
	return text;
}

static int mkdir_parents(const char *file)
{
	char dir[PC_ROOTFS_PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", file);
	for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int write_all(int fd, const char *text)
{
	size_t len = strlen(text), done = 0;

	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			done += (size_t)n;
	}
	return 0;
}

int sys_tune_state_save(const char *file, const struct pc_tune_state *s)
{
	char tmp[PC_ROOTFS_PATH_MAX + 8], *text;
	int fd, rc;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", file) >= sizeof(tmp))
		return -ENAMETOOLONG;
	rc = mkdir_parents(file);
	if (rc)
		return rc;
	text = state_json(s);
	if (!text)
		return -ENOMEM;
	/* mkstemp: 0600 and O_EXCL, so nobody can slip a file in between */
	fd = mkstemp(tmp);
	if (fd < 0) {
		free(text);
		return -errno;
	}
	rc = write_all(fd, text);
	free(text);
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, file))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

struct pc_tune_change *sys_tune_state_find(struct pc_tune_state *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].path, path))
			return &s->c[i];
	return NULL;
}

int sys_tune_state_add(struct pc_tune_state *s, const struct pc_tune_change *c)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct pc_tune_change *n = realloc(s->c, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->c = n;
		s->cap = cap;
	}
	s->c[s->n++] = *c;
	return 0;
}

void sys_tune_state_free(struct pc_tune_state *s)
{
	free(s->c);
	s->c = NULL;
	s->n = s->cap = 0;
}
