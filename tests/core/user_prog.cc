/* SPDX-License-Identifier: MIT */
// A user's program in C++17, built against an installed percore by
// test_install.sh (with pkg-config and with CMake's find_package) under
// -Wall -Wextra -Wpedantic -Werror, linking the runtime library alone.
// percore.h brings every public header in.
//
// The shards of a server exchange a call and its reply (shard 0 asks
// shard 1 to square 12), the server echoes a frame a plain socket sends,
// and an SPSC ring's inline code (C11 atomics in C, std::atomic here)
// carries values through. Prints "ok" and exits 0 when all did.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <percore.h>

namespace {

std::atomic<long> answer{0}; // 0 until shard 0 has the reply; -1 on failure

intptr_t square(void *arg) // on shard 1
{
	intptr_t v = reinterpret_cast<intptr_t>(arg);
	return pc_shard_id() == 1 ? v * v : -1;
}

void got_reply(void *, intptr_t result) // back on shard 0
{
	answer = pc_shard_id() == 0 ? static_cast<long>(result) : -1;
}

void ask(void *) // on shard 0, submitted from main
{
	if (pc_shard_call(1, square, reinterpret_cast<void *>(intptr_t{12}), got_reply, nullptr))
		answer = -1;
}

void on_frame(pc_session *s, const pc_frame *f, void *)
{
	pc_session_send_flags(s, f->msg_id, f->flags, f->body, f->len);
}

bool echo_once(uint16_t port)
{
	const char body[] = "hello";
	uint8_t out[PC_FRAME_HEADER_LEN + sizeof(body)], in[sizeof(out)];
	timeval tv{30, 0};
	sockaddr_in a{};
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)))
		return false;
	pc_frame_header_encode(out, 42, 0, sizeof(body));
	std::memcpy(out + PC_FRAME_HEADER_LEN, body, sizeof(body));
	if (write(fd, out, sizeof(out)) != static_cast<ssize_t>(sizeof(out)))
		return false;
	while (got < sizeof(in) && (n = read(fd, in + got, sizeof(in) - got)) > 0)
		got += static_cast<size_t>(n);
	close(fd);
	return got == sizeof(in) && std::memcmp(in, out, sizeof(in)) == 0;
}

// A producer thread and this one, through the ring's inline push and pop.
bool ring_carries(unsigned count)
{
	pc_spsc *r = pc_spsc_create(64, sizeof(unsigned));
	unsigned sum = 0, want = 0;

	if (!r)
		return false;
	std::thread producer([r, count] {
		for (unsigned i = 1; i <= count; i++)
			while (pc_spsc_push(r, &i) != 0)
				std::this_thread::yield();
	});
	for (unsigned i = 1; i <= count; i++) {
		unsigned v;

		while (pc_spsc_pop(r, &v) != 0)
			std::this_thread::yield();
		sum += v;
		want += i;
	}
	producer.join();
	bool ok = sum == want && pc_spsc_validate(r, NULL, 0) == 0;
	pc_spsc_destroy(r);
	return ok;
}

} // namespace

int main()
{
	pc_server_cfg cfg;
	pc_server *srv;
	char err[200];
	int rc = 0;

	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.engine.shards = 2;
	cfg.engine.placement = "off"; // the machine may be busy or small
	cfg.on_frame = on_frame;
	if (pc_server_start(&cfg, &srv, err, sizeof(err))) {
		std::fprintf(stderr, "user_prog: %s\n", err);
		return 1;
	}
	if (pc_engine_submit(pc_server_engine(srv), 0, ask, nullptr))
		rc = 1;
	for (int i = 0; i < 30000 && answer == 0; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	if (answer != 144) {
		std::fprintf(stderr, "user_prog: the call between shards gave %ld\n", answer.load());
		rc = 1;
	}
	if (!echo_once(pc_server_port(srv))) {
		std::fprintf(stderr, "user_prog: no echo\n");
		rc = 1;
	}
	pc_server_shutdown(srv, 1000);
	pc_server_wait(srv);
	pc_server_destroy(srv);
	if (!ring_carries(100000)) {
		std::fprintf(stderr, "user_prog: the ring lost or mangled values\n");
		rc = 1;
	}
	if (!rc)
		std::puts("ok");
	return rc;
}
