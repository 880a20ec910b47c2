"""Hosts on separate addresses of this machine, for the network-loss tests.

:func:`lan` builds a small LAN out of network namespaces (``ip netns``) and
yields a :class:`Lan`: a bridge in the root namespace holding the "server"
address ``10.77.S.1/24`` (S picked free at random) and one namespace per
host, each joined to the bridge by a veth pair, its end inside named ``eth0``
with address ``10.77.S.<10+i>``. Everything the LAN made is removed on exit,
whatever happened in between: the namespaces (their veth ends, and so the
pairs, go with them) and the bridge. Names carry a random tag, so runs never
share one.

:meth:`Lan.cut` partitions a host the way a dead switch port or a pulled cable
somewhere between two machines does: the bridge port of the host goes to the
``disabled`` state, so every frame to or from the host is dropped silently in
both directions while both ends of the veth keep their carrier. Neither side
gets an error or a reset: an open TCP connection just stops hearing back (it
retransmits until it times out), a new one gets no answer to its SYN.
:meth:`Lan.heal` puts the port back to ``forwarding``.

(``tc qdisc ... netem loss 100%`` models the same, but needs the sch_netem
module, which kernels built without it lack; ``ip link set ... down`` on the
host's side tells the host's kernel, which then answers a new connection with
"network unreachable" at once: a host whose own cable is out, not a network
partition.)

:func:`unavailable` says why network namespaces cannot be made here (not root,
no CAP_NET_ADMIN, no ``ip``), or None.
"""

from __future__ import annotations

import ipaddress
import os
import random
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Host", "Lan", "lan", "unavailable"]

PRIVATE = "10.77"  # the /16 the LANs take their /24 from
SERVER_OCTET = 1
FIRST_HOST_OCTET = 10


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def _bridge(*args: str) -> None:
    argv = ["bridge", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")


def unavailable() -> str | None:
    """Why this process cannot make network namespaces, or None when it can
    (checked by making one and deleting it)."""
    if shutil.which("ip") is None or shutil.which("bridge") is None:
        return "iproute2's ip and bridge commands are not installed"
    probe = f"conductor-probe-{os.getpid()}-{secrets.token_hex(2)}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` is not permitted here (needs root or CAP_NET_ADMIN): {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _used_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this machine has addresses or routes in (root namespace)."""
    nets: list[ipaddress.IPv4Network] = []
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            nets.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
    for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines():
        first = line.split()[0] if line.split() else ""
        if first[:1].isdigit():
            nets.append(ipaddress.IPv4Network(first if "/" in first else f"{first}/32", strict=False))
    return nets


def _free_subnet() -> ipaddress.IPv4Network:
    used = _used_networks()
    candidates = [ipaddress.IPv4Network(f"{PRIVATE}.{n}.0/24") for n in range(256)]
    random.shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(other) for other in used if other.prefixlen > 0):
            return net
    raise RuntimeError(f"no free /24 in {PRIVATE}.0.0/16 on this machine")


@dataclass
class Host:
    """One worker "host": a network namespace with one address on the LAN."""

    name: str  # the namespace
    address: str
    port: str  # its veth end in the root namespace: the bridge port
    cut: bool = False

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def socket(self, local_port: int) -> str:
        """``ss -tnoi`` on this host for the TCP socket bound to ``local_port``:
        its state and timers; 'unacked:N' appears while N segments it sent
        are not acknowledged."""
        argv = self.command(["ss", "-H", "-tnoi", "state", "all", "sport", "=", f":{local_port}"])
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout.strip()


@dataclass
class Lan:
    """A bridge holding ``server_address`` and the hosts joined to it; see the module doc."""

    tag: str
    subnet: ipaddress.IPv4Network
    bridge: str
    server_address: str
    hosts: list[Host] = field(default_factory=list)

    def cut(self, host: Host) -> None:
        """Drop every frame to and from ``host`` from now on, silently, both ways."""
        _bridge("link", "set", "dev", host.port, "state", "0")  # disabled
        host.cut = True

    def heal(self, host: Host) -> None:
        """Forward ``host``'s frames again."""
        _bridge("link", "set", "dev", host.port, "state", "3")  # forwarding
        host.cut = False

    def port_state(self, host: Host) -> str:
        """The bridge's word for ``host``'s port ('forwarding', 'disabled', ...)."""
        out = subprocess.run(["bridge", "link", "show", "dev", host.port], capture_output=True, text=True,
                             timeout=30, check=True).stdout  # fmt: skip
        words = out.split()
        return words[words.index("state") + 1] if "state" in words else out.strip()

    def carrier(self, host: Host) -> tuple[bool, bool]:
        """Whether each end of ``host``'s veth has its carrier: (root side, host side)."""
        root = _ip("-o", "link", "show", "dev", host.port).stdout
        inner = _ip("-o", "link", "show", "dev", "eth0", netns=host.name).stdout
        return "NO-CARRIER" not in root, "NO-CARRIER" not in inner


@contextmanager
def lan(hosts: int) -> Iterator[Lan]:
    """A LAN of ``hosts`` namespaces and a server address; all removed on exit."""
    tag = secrets.token_hex(3)
    subnet = _free_subnet()
    base = subnet.network_address
    net = Lan(tag=tag, subnet=subnet, bridge=f"cb{tag}", server_address=str(base + SERVER_OCTET))
    made_bridge = False
    namespaces: list[str] = []
    try:
        _ip("link", "add", net.bridge, "type", "bridge")
        made_bridge = True
        _ip("addr", "add", f"{net.server_address}/{subnet.prefixlen}", "dev", net.bridge)
        _ip("link", "set", net.bridge, "up")
        for i in range(hosts):
            name = f"conductor-{tag}-h{i}"
            _ip("netns", "add", name)
            namespaces.append(name)
            port, peer = f"cv{tag}{i}", f"cp{tag}{i}"
            _ip("link", "add", port, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", name)
            _ip("link", "set", peer, "name", "eth0", netns=name)
            _ip("link", "set", port, "master", net.bridge)
            _ip("link", "set", port, "up")
            address = str(base + FIRST_HOST_OCTET + i)
            _ip("addr", "add", f"{address}/{subnet.prefixlen}", "dev", "eth0", netns=name)
            _ip("link", "set", "eth0", "up", netns=name)
            _ip("link", "set", "lo", "up", netns=name)
            net.hosts.append(Host(name=name, address=address, port=port))
        yield net
    finally:
        errors: list[str] = []
        for name in namespaces:  # the veth ends inside go with it, and so the pairs
            proc = _ip("netns", "del", name, check=False)
            if proc.returncode != 0:
                errors.append(proc.stderr.strip())
        for host in net.hosts:  # in case a namespace outlived its name (a process still in it)
            _ip("link", "del", host.port, check=False)
        if made_bridge:
            proc = _ip("link", "del", net.bridge, check=False)
            if proc.returncode != 0:
                errors.append(proc.stderr.strip())
        if errors:
            raise RuntimeError(f"tearing down the LAN {tag} left: {'; '.join(errors)}")
