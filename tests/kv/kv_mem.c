/* SPDX-License-Identifier: MIT */
/* Bytes per key of one shard's keyspace beside redis-server's: adds N keys
 * of 16 bytes with 32-byte values (Redis's usual memory yardstick) and
 * prints how much the process's resident set grew, the allocator's in-use
 * bytes grew (mallinfo2: malloc'd entries and the table; pooled entries
 * live in slab chunks outside it) and the keyspace's own count grew,
 * divided by N. With --redis, starts that redis-server on a free loopback
 * port (no persistence), stores the same keys through one pipelined
 * connection and prints its resident-set growth per key too.
 *
 * Usage: kv_mem [--keys N] [--redis PATH]. Meaningful in a build without
 * sanitizers. Exit 0, 1 on failure, 2 on a usage error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"

static void key_of(char key[32], long i)
{
	snprintf(key, 32, "key:%012ld", i % 1000000000000L);
}

static void value_of(char val[48], long i)
{
	snprintf(val, 48, "value:%026ld", i % 100000000000000000L);
}

/* Resident bytes of process pid (0: this one), from /proc; 0 if unknown. */
static size_t rss_of(pid_t pid)
{
	char path[64], line[256];
	size_t kb = 0;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static size_t malloc_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static int measure_ours(long n)
{
	struct kv_db *db = kv_db_new();
	if (!db)
		return 1;
	size_t rss0 = rss_of(0), mall0 = malloc_in_use(), used0 = kv_db_used(db);
	char key[32], val[48];
	for (long i = 0; i < n; i++) {
		struct kv_pos pos;
		key_of(key, i);
		value_of(val, i);
		kv_db_lookup(db, key, 16, 0, &pos);
		if (kv_db_store(db, &pos, val, 32, KV_NO_EXPIRE)) {
			fprintf(stderr, "kv_mem: out of memory at %ld keys\n", i);
			return 1;
		}
	}
	printf("{\"server\": \"kv\", \"keys\": %ld, \"rss_bytes_per_key\": %.1f, "
	       "\"malloc_bytes_per_key\": %.1f, \"counted_bytes_per_key\": %.1f}\n",
	       n, (double)(rss_of(0) - rss0) / (double)n, (double)(malloc_in_use() - mall0) / (double)n,
	       (double)(kv_db_used(db) - used0) / (double)n);
	kv_db_free(db);
	return 0;
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A connection to the server on port, retried for up to 10 s while it
 * starts; -1 when it never answers. */
static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	for (int tries = 0; tries < 200; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		if (fd >= 0)
			close(fd);
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
	return -1;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads until `want` "+OK\r\n" replies (5 bytes each) have come. */
static int read_oks(int fd, size_t want)
{
	char buf[65536];
	size_t got = 0;
	while (got < want * 5) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || buf[0] == '-')
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* SETs keys [0, n) in pipelined batches. */
static int fill_redis(int fd, long n)
{
	enum { BATCH = 1000 };
	static char req[BATCH * 96];
	char key[32], val[48];
	for (long b = 0; b < n; b += BATCH) {
		size_t len = 0;
		long end = b + BATCH < n ? b + BATCH : n;
		for (long i = b; i < end; i++) {
			key_of(key, i);
			value_of(val, i);
			len += (size_t)snprintf(req + len, sizeof(req) - len,
						"*3\r\n$3\r\nSET\r\n$16\r\n%s\r\n$32\r\n%s\r\n", key, val);
		}
		if (write_all(fd, req, len) || read_oks(fd, (size_t)(end - b)))
			return -1;
	}
	return 0;
}

static int measure_redis(const char *server, long n)
{
	int port = free_port();
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp(server, server, "--port", portstr, "--bind", "127.0.0.1", "--save", "",
		       "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning", (char *)NULL);
		_exit(127);
	}
	int fd = port > 0 && pid > 0 ? connect_to(port) : -1;
	int rc = 1;
	if (fd >= 0) {
		/* one request first, so the connection's own buffers are in the baseline */
		static const char ping[] = "*3\r\n$3\r\nSET\r\n$4\r\nwarm\r\n$2\r\nup\r\n";
		size_t rss0 = write_all(fd, ping, sizeof(ping) - 1) || read_oks(fd, 1) ? 0 : rss_of(pid);
		if (rss0 && fill_redis(fd, n) == 0) {
			printf("{\"server\": \"redis\", \"keys\": %ld, \"rss_bytes_per_key\": %.1f}\n", n,
			       (double)(rss_of(pid) - rss0) / (double)n);
			rc = 0;
		}
		close(fd);
	}
	if (rc)
		fprintf(stderr, "kv_mem: could not measure %s\n", server);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return rc;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: kv_mem [--keys N] [--redis PATH]\n"
		   "  --keys N      keys to add (default 1000000)\n"
		   "  --redis PATH  also measure this redis-server with the same keys\n");
	return rc;
}

int main(int argc, char **argv)
{
	long n = 1000000;
	const char *redis = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help"))
			return usage(stdout, 0);
		if (!strcmp(argv[i], "--keys") && i + 1 < argc)
			n = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--redis") && i + 1 < argc)
			redis = argv[++i];
		else
			return usage(stderr, 2);
	}
	if (n <= 0)
		return usage(stderr, 2);
	int rc = measure_ours(n);
	if (!rc && redis)
		rc = measure_redis(redis, n);
	return rc;
}
