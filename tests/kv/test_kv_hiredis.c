/* SPDX-License-Identifier: MIT */
/* The hiredis C client against `percore kv --shards 2`: commands, binary
 * keys and values (%b), a pipeline of thousands of commands, multi-key
 * commands over both shards, errors as hiredis reports them. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "../testmain.h"

static pid_t server_pid;
static int server_port;

/* Starts the server, reads its port from "listening on ADDR:PORT (". */
static int start_server(void *state)
{
	const char *dir = getenv("PC_BUILD_DIR");
	char path[4096], line[512];
	int fds[2];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tools/percore/percore", dir ? dir : ".");
	if (pipe(fds))
		return -1;
	server_pid = fork();
	if (server_pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		execl(path, path, "kv", "--port", "0", "--shards", "2", "--oversubscribe", "--policy",
		      "off", "--save", "", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "listening on ");
		char *end = p ? strstr(p, " (") : NULL;

		if (end) {
			*end = '\0';
			server_port = atoi(strrchr(p, ':') + 1);
			break;
		}
	}
	/* stderr stays open (the server writes to it until it ends) */
	return server_port > 0 ? 0 : -1;
}

static int stop_server(void *state)
{
	int st = 0;

	(void)state;
	kill(server_pid, SIGTERM);
	waitpid(server_pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static redisContext *connect_kv(void)
{
	redisContext *c = redisConnect("127.0.0.1", server_port);

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	return c;
}

/* Runs a command and checks a status, integer or string reply. */
static void expect_str(redisContext *c, const char *want, const char *fmt, ...)
{
	va_list ap;
	redisReply *r;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	if (!want)
		assert_int_equal(r->type, REDIS_REPLY_NIL);
	else
		assert_string_equal(r->str, want);
	freeReplyObject(r);
}

static void test_commands(void **state)
{
	redisContext *c = connect_kv();
	redisReply *r;

	(void)state;
	expect_str(c, "PONG", "PING");
	expect_str(c, "OK", "SET %s %s", "hk", "hello");
	expect_str(c, "hello", "GET %s", "hk");
	expect_str(c, NULL, "GET %s", "missing");
	r = redisCommand(c, "INCRBY counter %d", 42);
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->integer, 42);
	freeReplyObject(r);
	r = redisCommand(c, "INCR hk");
	assert_int_equal(r->type, REDIS_REPLY_ERROR);
	assert_string_equal(r->str, "ERR value is not an integer or out of range");
	freeReplyObject(r);
	expect_str(c, "OK", "FLUSHALL");
	redisFree(c);
}

static void test_binary(void **state)
{
	redisContext *c = connect_kv();
	char key[64], val[256];
	redisReply *r;

	(void)state;
	for (int i = 0; i < 64; i++)
		key[i] = (char)(i * 37);
	for (int i = 0; i < 256; i++)
		val[i] = (char)i;
	r = redisCommand(c, "SET %b %b", key, sizeof(key), val, sizeof(val));
	assert_int_equal(r->type, REDIS_REPLY_STATUS);
	freeReplyObject(r);
	r = redisCommand(c, "GET %b", key, sizeof(key));
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_int_equal(r->len, sizeof(val));
	assert_memory_equal(r->str, val, sizeof(val));
	freeReplyObject(r);
	expect_str(c, "OK", "FLUSHALL");
	redisFree(c);
}

/* Thousands of commands appended, then every reply read in order. */
static void test_pipeline(void **state)
{
	redisContext *c = connect_kv();
	enum { N = 5000 };
	redisReply *r;
	char want[32];

	(void)state;
	for (int i = 0; i < N; i++) {
		redisAppendCommand(c, "SET pk:%d %d", i, i);
		redisAppendCommand(c, "GET pk:%d", i);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
		assert_string_equal(r->str, "OK");
		freeReplyObject(r);
		assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
		snprintf(want, sizeof(want), "%d", i);
		assert_string_equal(r->str, want);
		freeReplyObject(r);
	}
	r = redisCommand(c, "DBSIZE");
	assert_int_equal(r->integer, N);
	freeReplyObject(r);
	expect_str(c, "OK", "FLUSHALL");
	redisFree(c);
}

/* MSET/MGET/DEL over 20 keys: both shards own some of them. */
static void test_multi(void **state)
{
	redisContext *c = connect_kv();
	const char *argv[41];
	size_t argl[41];
	char names[20][8];
	redisReply *r;

	(void)state;
	argv[0] = "MSET";
	for (int i = 0; i < 20; i++) {
		snprintf(names[i], sizeof(names[i]), "m%d", i);
		argv[1 + 2 * i] = names[i];
		argv[2 + 2 * i] = names[i];
	}
	for (int i = 0; i < 41; i++)
		argl[i] = strlen(argv[i]);
	r = redisCommandArgv(c, 41, argv, argl);
	assert_string_equal(r->str, "OK");
	freeReplyObject(r);
	argv[0] = "MGET";
	for (int i = 0; i < 20; i++) {
		argv[1 + i] = names[i];
		argl[1 + i] = strlen(names[i]);
	}
	argl[0] = 4;
	r = redisCommandArgv(c, 21, argv, argl);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 20);
	for (int i = 0; i < 20; i++)
		assert_string_equal(r->element[i]->str, names[i]);
	freeReplyObject(r);
	argv[0] = "DEL";
	argl[0] = 3;
	r = redisCommandArgv(c, 21, argv, argl);
	assert_int_equal(r->integer, 20);
	freeReplyObject(r);
	redisFree(c);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_pipeline),
		cmocka_unit_test(test_multi),
	};

	int rc;

	if (start_server(NULL)) {
		fprintf(stderr, "percore kv did not start\n");
		return 1;
	}
	rc = pc_test_main(tests, argc, argv);
	if (stop_server(NULL)) {
		fprintf(stderr, "percore kv did not exit cleanly\n");
		return 1;
	}
	return rc;
}
