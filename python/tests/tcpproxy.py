"""A TCP forwarder between worker processes and the test PostgreSQL, to take
the database away from them the two ways a network does:

- ``cut()``: every connection closed, the port closed (connection refused),
  as when the server stops or its host goes down;
- ``freeze()``: connections stay open but nothing passes any more, and new
  ones are accepted and never answered, as when a firewall or a partition
  drops packets (each query then hangs until the kernel gives up).

Real sockets and the real server behind them; nothing is faked but the cable.
"""

from __future__ import annotations

import select
import socket
import threading

__all__ = ["TcpProxy"]


class TcpProxy:
    """Forwards 127.0.0.1:``port`` (0: any free port; read ``.port``) to
    ``target_host:target_port`` once ``start()`` is called."""

    def __init__(self, target_host: str, target_port: int, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.port = port
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self.connections = 0
        if port == 0:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        self._closed.clear()
        threading.Thread(target=self._accept, args=(listener,), name="tcpproxy-accept", daemon=True).start()
        return self

    def dsn(self, server_dsn: str) -> str:
        """``server_dsn`` with host and port pointing at this proxy."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(server_dsn, host="127.0.0.1", hostaddr=None, port=str(self.port))

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            self._track(client)
            self.connections += 1
            if self._frozen.is_set():
                continue  # accepted, never answered
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            self._track(upstream)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), name="tcpproxy-pump", daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while not self._closed.is_set():
                ready, _, _ = select.select([src], [], [], 0.2)
                if not ready:
                    continue
                if self._frozen.is_set():
                    self._closed.wait()  # hold the bytes: the other side hears nothing, ever
                    return
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def freeze(self) -> None:
        """Nothing passes any more; new connections are accepted and never answered."""
        self._frozen.set()

    def cut(self) -> None:
        """Close the port and every connection through it: connection refused from now on."""
        self._closed.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    close = cut
