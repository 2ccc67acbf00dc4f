/* SPDX-License-Identifier: MIT */
/* Interop helper for test_fb_interop.py: turns JSON into a FlatBuffer with
 * percore's builder, and a FlatBuffer into JSON with percore's verifier and
 * reader, so the script can hold both against flatc and python3-flatbuffers.
 *
 *   fb_interop encode TABLE IN.json OUT.bin
 *   fb_interop decode TABLE IN.bin            (JSON on stdout)
 *   fb_interop batch                          (requests on stdin)
 *
 * TABLE is echo.Echo, heartbeat.Heartbeat, error.Error, chat.Join,
 * chat.Say, chat.Leave, chat.Message, chat.History or test.AllTypes. The
 * JSON uses the schema's field names; 64-bit integers are written as
 * decimal strings (cJSON holds numbers as doubles) and read from either.
 * decode prints every field, scalars at their defaults when absent, and
 * exits 3 when the buffer fails verification.
 *
 * batch does the same for many files in one process (a process per case
 * made the test slow): each stdin line is a JSON request
 * {"op": "encode"|"decode", "table": T, "in": PATH, "out": PATH}, answered
 * by one stdout line {"status": S, "value": DECODED, "error": TEXT}, S
 * being the exit status the single command would have had. Each file is
 * still read into a buffer of its exact size, so ASan sees any read past
 * the end; the process exits 0 at end of input (LeakSanitizer runs then). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "interop.h"

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		/* exact size, so ASan catches a read past the end */
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static int encode(const struct interop_table *t, const char *in, const char *out,
		  char *why, size_t whylen)
{
	size_t len, blen;
	char *text = read_file(in, &len);
	cJSON *json = text ? cJSON_ParseWithLength(text, len) : NULL;
	size_t cap = 2 * len + 4096;
	void *space = aligned_alloc(8, (cap + 7) & ~(size_t)7);
	struct pc_fb_builder b;
	const void *buf;
	FILE *f;
	int err = -EINVAL;

	if (json && space && pc_fb_builder_init(&b, space, cap) == 0)
		err = t->encode(&b, json);
	buf = err ? NULL : pc_fb_builder_data(&b, &blen);
	if (buf && (f = fopen(out, "wb"))) {
		err = fwrite(buf, 1, blen, f) == blen ? 0 : -EIO;
		err = fclose(f) ? -EIO : err;
	} else if (!err) {
		err = -EIO;
	}
	if (err)
		snprintf(why, whylen, "encoding %s from %s failed: %s", t->name, in, strerror(-err));
	cJSON_Delete(json);
	free(text);
	free(space);
	return err ? 1 : 0;
}

/* Verify and read a file. Returns 0 with *json, 1 (unreadable) or 3
 * (rejected by the verifier) with the reason in why. */
static int decode(const struct interop_table *t, const char *in, cJSON **json, char *why,
		  size_t whylen)
{
	size_t len;
	char *buf = read_file(in, &len);
	int err;

	*json = NULL;
	if (!buf) {
		snprintf(why, whylen, "cannot read %s", in);
		return 1;
	}
	err = t->decode(buf, len, json);
	free(buf);
	if (err) {
		snprintf(why, whylen, "%s rejected by the %s verifier: %s", in, t->name,
			 strerror(-err));
		return 3;
	}
	return 0;
}

static const char *field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One batch request: the answer, as the single command would exit. */
static cJSON *answer(const char *line)
{
	cJSON *req = cJSON_Parse(line), *res = cJSON_CreateObject(), *value = NULL;
	const char *op = field(req, "op"), *in = field(req, "in"), *out = field(req, "out");
	const struct interop_table *t = interop_find(field(req, "table") ? field(req, "table") : "");
	char why[512] = "";
	int status = 2;

	if (t && in && op && !strcmp(op, "encode") && out)
		status = encode(t, in, out, why, sizeof(why));
	else if (t && in && op && !strcmp(op, "decode"))
		status = decode(t, in, &value, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "bad request: %.400s", line);
	cJSON_AddNumberToObject(res, "status", status);
	cJSON_AddItemToObject(res, "value", value ? value : cJSON_CreateNull());
	cJSON_AddStringToObject(res, "error", why);
	cJSON_Delete(req);
	return res;
}

/* Requests until end of input; every answer flushed before the next
 * request is read, so the caller may wait for each. */
static int batch(void)
{
	char *line = NULL;
	size_t cap = 0;

	while (getline(&line, &cap, stdin) > 0) {
		cJSON *res = answer(line);
		char *text = cJSON_PrintUnformatted(res);

		cJSON_Delete(res);
		if (!text || printf("%s\n", text) < 0 || fflush(stdout)) {
			free(text);
			free(line);
			return 1;
		}
		free(text);
	}
	free(line);
	return 0;
}

int main(int argc, char **argv)
{
	const struct interop_table *t = argc >= 3 ? interop_find(argv[2]) : NULL;
	char why[512] = "";
	cJSON *json;
	int rc;

	if (argc == 2 && strcmp(argv[1], "batch") == 0)
		return batch();
	if (t && argc == 5 && strcmp(argv[1], "encode") == 0) {
		rc = encode(t, argv[3], argv[4], why, sizeof(why));
	} else if (t && argc == 4 && strcmp(argv[1], "decode") == 0) {
		rc = decode(t, argv[3], &json, why, sizeof(why));
		if (!rc) {
			char *text = cJSON_Print(json);

			puts(text);
			free(text);
			cJSON_Delete(json);
		}
	} else {
		fprintf(stderr, "usage: fb_interop encode TABLE IN.json OUT.bin | decode TABLE IN.bin"
				" | batch\n");
		return 2;
	}
	if (rc)
		fprintf(stderr, "fb_interop: %s\n", why);
	return rc;
}
