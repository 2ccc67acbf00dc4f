#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A server that goes away mid-run: on each connection it reads WINDOW
bytes, echoes them and closes. Nothing is left unread, so the close is a
FIN; the client's next send draws a reset, and a send after that fails
with EPIPE. Prints its port on the first line."""
import socket
import sys
import threading

window = int(sys.argv[1])


def serve(conn):
    got = b""
    while len(got) < window:
        part = conn.recv(window - len(got))
        if not part:
            break
        got += part
    conn.sendall(got)
    conn.close()


srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
