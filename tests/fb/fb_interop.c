/* Interop helper for test_fb_interop.py: turns JSON into a FlatBuffer with
 * percore's builder, and a FlatBuffer into JSON with percore's verifier and
 * reader, so the script can hold both against flatc and python3-flatbuffers.
 *
 *   fb_interop encode TABLE IN.json OUT.bin
 *   fb_interop decode TABLE IN.bin            (JSON on stdout)
 *
 * TABLE is echo.Echo, heartbeat.Heartbeat, error.Error, chat.Join,
 * chat.Say, chat.Leave, chat.Message, chat.History or test.AllTypes. The
 * JSON uses the schema's field names; 64-bit integers are written as
 * decimal strings (cJSON holds numbers as doubles) and read from either.
 * decode prints every field, scalars at their defaults when absent, and
 * exits 3 when the buffer fails verification. */
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

static int encode(const struct interop_table *t, const char *in, const char *out)
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
		fprintf(stderr, "fb_interop: encoding %s from %s failed: %s\n", t->name, in,
			strerror(-err));
	cJSON_Delete(json);
	free(text);
	free(space);
	return err ? 1 : 0;
}

static int decode(const struct interop_table *t, const char *in)
{
	size_t len;
	char *buf = read_file(in, &len);
	cJSON *json = NULL;
	char *text;
	int err;

	if (!buf) {
		fprintf(stderr, "fb_interop: cannot read %s\n", in);
		return 1;
	}
	err = t->decode(buf, len, &json);
	if (err) {
		fprintf(stderr, "fb_interop: %s rejected by the %s verifier: %s\n", in, t->name,
			strerror(-err));
		free(buf);
		return 3;
	}
	text = cJSON_Print(json);
	puts(text);
	free(text);
	cJSON_Delete(json);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const struct interop_table *t = argc >= 3 ? interop_find(argv[2]) : NULL;

	if (t && argc == 5 && strcmp(argv[1], "encode") == 0)
		return encode(t, argv[3], argv[4]);
	if (t && argc == 4 && strcmp(argv[1], "decode") == 0)
		return decode(t, argv[3]);
	fprintf(stderr, "usage: fb_interop encode TABLE IN.json OUT.bin | decode TABLE IN.bin\n");
	return 2;
}
