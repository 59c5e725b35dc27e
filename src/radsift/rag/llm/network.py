"""Where a prompt may go: the LLM endpoint (or the one proxy named with ``--llm-proxy``), on this
machine unless ``--allow-remote-llm``, and nowhere else.

Prompts hold report text (patient data), so the endpoint's client:

- never reads proxy variables (``http_proxy``, ``https_proxy``, ``ALL_PROXY``, ``NO_PROXY`` ...): a
  variable left in a shell would otherwise send every prompt to a host nobody checked. A proxy is
  used only when named (``--llm-proxy``), and then the same rule holds for it as for the endpoint;
- resolves every host name (``localhost``, ``*.localhost`` included: ``/etc/hosts`` or a resolver
  may map any name anywhere) and checks *every* address it resolves to, when the options are given
  and again on each connection, connecting only to the addresses it checked (a name that resolves
  elsewhere between the two is caught at the connection);
- follows no redirect (a redirect is an HTTP error), and records the address it actually connected
  to (:attr:`Route.contacted`) for the audit log.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import urllib.request
from urllib.parse import urlsplit, urlunsplit

from radsift.errors import ConfigError

#: Why a remote endpoint is refused (shared by every message that refuses one).
REMOTE_HINT = ("prompts hold report text (patient data), so a host that is not this machine is refused "
               "unless you pass --allow-remote-llm")


class RemoteRefused(OSError):
    """A connection the rule refuses (a name that resolved to a remote address at connection time)."""


def _address_is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is loopback too; ::ffff:10.0.0.1 is not
    return (mapped or ip).is_loopback


def _infos(host: str, port: int | None) -> list[tuple]:
    """``getaddrinfo`` of ``host`` for TCP (an address literal is not looked up)."""
    return socket.getaddrinfo(host.strip("[]"), port or 0, type=socket.SOCK_STREAM)


def resolve(host: str, port: int | None = None) -> list[str]:
    """Every address ``host`` resolves to (an address literal is itself).

    Raises:
        OSError: The name does not resolve (``socket.gaierror``).
    """
    seen: list[str] = []
    for info in _infos(host, port):
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen


def is_loopback(host: str) -> bool:
    """True when ``host`` resolves and *every* address it resolves to is a loopback address
    (127.0.0.0/8, ::1); a name that does not resolve is not this machine."""
    try:
        addresses = resolve(host)
    except (OSError, UnicodeError, ValueError):
        return False
    return bool(addresses) and all(_address_is_loopback(a) for a in addresses)


def check_host(host: str, port: int | None, *, allow_remote: bool, option: str) -> list[str]:
    """Refuse ``host`` unless every address it resolves to is this machine (or ``allow_remote``).

    Returns:
        The addresses checked ([] with ``allow_remote``: nothing is looked up then).

    Raises:
        ConfigError: Naming ``option``: the name does not resolve, or an address is not loopback.
    """
    if allow_remote:
        return []
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError, ValueError) as exc:
        raise ConfigError(f"{option} {host}: cannot resolve the name ({exc}); {REMOTE_HINT}") from None
    remote = [a for a in addresses if not _address_is_loopback(a)]
    if remote or not addresses:
        shown = host if remote == [host.strip("[]")] else f"{host} (resolves to {', '.join(remote[:4])})"
        raise ConfigError(f"{option} {shown}: not this machine; {REMOTE_HINT}")
    return addresses


def proxy_url(proxy: str | None, *, allow_remote: bool) -> str | None:
    """``--llm-proxy``: an ``http://HOST:PORT`` proxy, under the same rule as the endpoint.

    Raises:
        ConfigError: Not an http URL with a host, or a remote proxy without ``allow_remote``.
    """
    if proxy is None:
        return None
    if not isinstance(proxy, str) or not proxy.strip():
        raise ConfigError("--llm-proxy is empty: give the proxy, e.g. http://127.0.0.1:3128")
    parts = urlsplit(proxy.strip())
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"--llm-proxy {proxy[:200]!r}: the port is not a number from 0 to 65535") from None
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise ConfigError(f"--llm-proxy {proxy[:200]!r}: give an http://HOST:PORT proxy (e.g. http://127.0.0.1:3128)")
    check_host(parts.hostname, port, allow_remote=allow_remote, option="--llm-proxy")
    return urlunsplit(("http", parts.netloc, "", "", ""))


def without_credentials(url: str | None) -> str | None:
    """``url`` without a user or password (for logs and the audit trail)."""
    if url is None:
        return None
    p = urlsplit(url)
    host = p.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((p.scheme, host + (f":{p.port}" if p.port else ""), p.path, "", ""))


class Route:
    """One call's way out: the opener it uses, and the addresses it connected to.

    Args:
        proxy: The ``--llm-proxy`` URL, or None: no proxy, whatever the environment says.
        allow_remote: Connect to any address (else loopback addresses only).
    """

    def __init__(self, proxy: str | None, allow_remote: bool) -> None:
        self.proxy = proxy
        self.allow_remote = allow_remote
        self.contacted: list[str] = []  # "address:port" of each connection made

    def opener(self) -> urllib.request.OpenerDirector:
        """An opener with the proxy named (or none), guarded connections and no redirects."""
        proxies = {"http": self.proxy, "https": self.proxy} if self.proxy else {}
        opener = urllib.request.OpenerDirector()
        # ProxyHandler({}) reads no environment variable; no HTTPRedirectHandler: a 3xx is an error
        for handler in (urllib.request.ProxyHandler(proxies), _GuardedHTTP(self), _GuardedHTTPS(self),
                        urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor()):
            opener.add_handler(handler)
        return opener

    def connect(self, address: tuple, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None) -> socket.socket:
        """``socket.create_connection`` for ``address``, to checked addresses only.

        Raises:
            RemoteRefused: ``address``'s host resolves to an address that is not this machine.
            OSError: No address could be connected to.
        """
        host, port = address
        infos = _infos(host, port)
        if not self.allow_remote:
            remote = sorted({str(i[4][0]) for i in infos if not _address_is_loopback(str(i[4][0]))})
            if remote or not infos:
                raise RemoteRefused(f"{host} resolves to {', '.join(remote) or 'nothing'}, not this machine; "
                                    f"{REMOTE_HINT}")
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in infos:
            sock = socket.socket(family, kind, proto)
            try:
                if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                    sock.settimeout(timeout)
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            shown = f"[{sockaddr[0]}]" if family == socket.AF_INET6 else sockaddr[0]
            self.contacted.append(f"{shown}:{sockaddr[1]}")
            return sock
        raise error if error is not None else OSError(f"{host}: no address to connect to")


class _GuardedHTTP(urllib.request.HTTPHandler):
    def __init__(self, route: Route) -> None:
        super().__init__()
        self.route = route

    def http_open(self, req):
        return self.do_open(self._connection, req)

    def _connection(self, host, **kwargs):
        conn = http.client.HTTPConnection(host, **kwargs)
        conn._create_connection = self.route.connect  # every connection (the proxy's too) is checked
        return conn


class _GuardedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, route: Route) -> None:
        super().__init__(context=ssl.create_default_context())
        self.route = route

    def https_open(self, req):
        return self.do_open(self._connection, req, context=self._context)

    def _connection(self, host, **kwargs):
        conn = http.client.HTTPSConnection(host, **kwargs)
        conn._create_connection = self.route.connect
        return conn
