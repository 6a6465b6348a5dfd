"""Opt-in fetching of remote ``image_url`` parts, hardened against server-side request forgery.

A client's request names the URL, so every fetch is an attacker-chosen request made from
inside the network. The fetcher therefore only talks to hosts the operator listed in
``allow_hosts``, and only to addresses that are public:

* the URL must be ``http``/``https`` without user info, its host must match the allowlist
  (exact names, ``*.suffix`` for subdomains, IP literals only when listed literally);
* the host is resolved once and *every* address must pass the address policy
  (``is_public_address`` by default); the connection then goes to the vetted address, not
  to the name again, so DNS cannot answer differently between the check and the connect
  (rebinding). The original ``Host`` header is sent, and for ``https`` the name travels in
  httpcore's ``sni_hostname`` request extension, which httpcore 1.0 passes as
  ``server_hostname`` to the TLS handshake: SNI and certificate hostname verification
  still use the name (``httpcore/_async/connection.py``, ``_connect``);
* redirects are followed by hand, and each hop is vetted like the first;
* the body is capped (declared ``Content-Length`` and streamed bytes) and one image's
  whole fetch, all hops included, runs within ``timeout_ms``.

A failed fetch is a fact about one image, recorded with ``ImagePart.set_unavailable``;
the request is still decided, and signals that need the bytes see the reason.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from types import TracebackType

import httpx

from vsr_extproc import __version__
from vsr_extproc.config.schema import FetchConfig
from vsr_extproc.core.request import ImagePart, NormalizedRequest
from vsr_extproc.errors import ImageError

IPAddress = IPv4Address | IPv6Address

#: resolves ``(host, port)`` to address strings, as ``getaddrinfo`` would
Resolver = Callable[[str, int], Awaitable[list[str]]]

#: decides whether the fetcher may connect to an address
AddressPolicy = Callable[[IPAddress], bool]

#: remote images fetched per request; the rest are marked unavailable, so one request
#: cannot make the router open an unbounded number of connections
MAX_IMAGES_PER_REQUEST = 8

USER_AGENT = f"vsr-extproc/{__version__} (image fetcher)"

_DEFAULT_PORTS = {"http": 80, "https": 443}

# ``is_global`` alone is not enough on Python 3.11: it calls multicast, 192.0.0.0/24,
# fec0::/10, 3fff::/20 and 64:ff9b:1::/48 global. This table names every range the
# fetcher refuses, so the policy does not drift with the interpreter's patch level.
_REFUSED_V4 = tuple(
    IPv4Network(network)
    for network in (
        "0.0.0.0/8",  # "this network", unspecified
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (CGNAT; Alibaba metadata 100.100.100.200)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata 169.254.169.254)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and 255.255.255.255 broadcast
    )
)
_REFUSED_V6 = tuple(
    IPv6Network(network)
    for network in (
        "::/8",  # unspecified, loopback, IPv4-compatible, SIIT, local NAT64 64:ff9b:1::/48
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments, Teredo 2001::/32 included
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
        "5f00::/16",  # SRv6 segment identifiers
        "fc00::/7",  # unique local (AWS metadata fd00:ec2::254 included)
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)
_NAT64 = IPv6Network("64:ff9b::/96")


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address that packets to ``address`` actually reach, if it embeds one.

    IPv4-mapped (``::ffff:a.b.c.d``), 6to4 (``2002:AABB:CCDD::/48``) and well-known NAT64
    (``64:ff9b::a.b.c.d``) addresses are delivered to an IPv4 host, so the policy must
    judge that host: ``::ffff:127.0.0.1`` is loopback whatever its IPv6 spelling says.
    """
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public_address(address: IPAddress) -> bool:
    """True if ``address`` is a globally reachable unicast address the fetcher may connect to.

    Refuses loopback, private and unique-local, link-local (cloud metadata), shared
    (CGNAT), multicast, reserved, unspecified, broadcast, documentation and benchmarking
    ranges, IPv4-compatible, Teredo and local-use NAT64 forms; IPv6 forms that embed an
    IPv4 address are judged by that address.
    """
    if isinstance(address, IPv6Address):
        embedded = embedded_ipv4(address)
        if embedded is not None:
            return is_public_address(embedded)
        refused: Iterable[IPv4Network | IPv6Network] = _REFUSED_V6
    else:
        refused = _REFUSED_V4
    return address.is_global and not any(address in network for network in refused)


async def resolve_host(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the event loop's ``getaddrinfo`` (the default resolver)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


class HostAllowlist:
    """The ``allow_hosts`` patterns, compiled once.

    Names match exactly and case-insensitively; ``*.example.com`` matches any subdomain
    of example.com but not example.com itself; an IP literal matches only itself, and
    wildcards never match IP literals.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        names: set[str] = set()
        suffixes: list[str] = []
        addresses: set[IPAddress] = set()
        for pattern in patterns:
            entry = pattern.strip().strip("[]").lower()
            if entry.startswith("*."):
                suffixes.append(entry[1:])
            elif (address := _parse_address(entry)) is not None:
                addresses.add(address)
            elif entry:
                names.add(entry)
        self._names = frozenset(names)
        self._suffixes = tuple(suffixes)
        self._addresses = frozenset(addresses)

    def allows(self, host: str) -> bool:
        """True if ``host`` (a name, or an IP literal without brackets) is allowed."""
        address = _parse_address(host)
        if address is not None:
            return address in self._addresses
        name = host.lower()
        return name in self._names or any(
            name.endswith(suffix) and len(name) > len(suffix) for suffix in self._suffixes
        )


def _parse_address(text: str) -> IPAddress | None:
    try:
        return ip_address(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class _Hop:
    """One vetted request: the URL as named, and where and how to actually connect."""

    url: httpx.URL
    connect_url: httpx.URL
    host_header: str
    sni_hostname: str | None


class RemoteImageFetcher:
    """Fills in the bytes of a request's remote images (the router's ``ImageFetcher``).

    One shared ``httpx.AsyncClient`` per fetcher, created on first use; ``close()`` it at
    shutdown. Calling the fetcher never raises for a failed fetch: each image ends with
    either its bytes or a reason.
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        resolver: Resolver | None = None,
        address_allowed: AddressPolicy = is_public_address,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``ssl_context`` trusts a private CA (internal image hosts, tests); by default
        certifi's bundle with hostname verification."""
        self._config = config
        self._allowlist = HostAllowlist(config.allow_hosts)
        self._resolver = resolver or resolve_host
        self._address_allowed = address_allowed
        self._ssl_context = ssl_context
        self._timeout_s = config.timeout_ms / 1000
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, request: NormalizedRequest) -> None:
        """Fetch every unfetched remote image of ``request`` concurrently.

        Images sharing a URL are fetched once. Beyond ``MAX_IMAGES_PER_REQUEST`` distinct
        URLs the rest are marked unavailable without any network traffic.
        """
        if not self._config.enabled:
            return
        by_url: dict[str, list[ImagePart]] = {}
        for image in request.images:
            if image.is_remote and not image.available and image.url:
                by_url.setdefault(image.url, []).append(image)
        urls = list(by_url)
        for url in urls[MAX_IMAGES_PER_REQUEST:]:
            for image in by_url[url]:
                image.set_unavailable(
                    f"not fetched: more than {MAX_IMAGES_PER_REQUEST} remote images in one request"
                )
        async with asyncio.TaskGroup() as group:
            for url in urls[:MAX_IMAGES_PER_REQUEST]:
                group.create_task(self._fetch_into(url, by_url[url]))

    async def close(self) -> None:
        """Close the shared client (its connections); the fetcher may be used again after."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> RemoteImageFetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared client, created on first use (inside the running event loop)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                # Proxies from the environment would connect to the *name* again and
                # undo the address check.
                trust_env=False,
                verify=self._ssl_context or True,
                timeout=httpx.Timeout(self._timeout_s),
                # The pool is keyed by scheme, IP and port, not by SNI name: a kept-alive
                # TLS connection verified for one allowed name could carry a request for
                # another name on the same IP whose certificate was never checked.
                limits=httpx.Limits(max_keepalive_connections=0),
                headers={
                    "User-Agent": USER_AGENT,
                    "Accept": "image/*",
                    # Bytes are capped as they arrive; a compressed body would expand
                    # past the cap inside the decoder before the cap could see it.
                    "Accept-Encoding": "identity",
                },
            )
        return self._client

    async def _fetch_into(self, url: str, images: list[ImagePart]) -> None:
        try:
            async with asyncio.timeout(self._timeout_s):
                data = await self._fetch(url)
        except (TimeoutError, httpx.TimeoutException):
            reason = f"timed out after {self._config.timeout_ms} ms"
        except ImageError as exc:
            reason = str(exc)
        except httpx.HTTPError as exc:
            reason = f"fetch failed: {type(exc).__name__}: {exc}"
        except Exception as exc:  # a failed fetch is a fact about one image, never a crash
            reason = f"fetch failed: {exc!r}"
        else:
            for image in images:
                image.set_data(data)
            return
        for image in images:
            image.set_unavailable(reason)

    async def _fetch(self, url: str) -> bytes:
        try:
            current = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise ImageError(f"invalid URL: {exc}") from None
        max_redirects = self._config.max_redirects
        for redirects in range(max_redirects + 1):
            hop = await self._vet(current, redirects)
            async with self.client.stream(
                "GET",
                hop.connect_url,
                headers={"Host": hop.host_header},
                extensions={"sni_hostname": hop.sni_hostname} if hop.sni_hostname else None,
            ) as response:
                if response.is_redirect:
                    current = _redirect_target(hop.url, response.headers["Location"])
                    continue
                if not response.is_success:
                    raise ImageError(f"HTTP {response.status_code} {response.reason_phrase}")
                return await self._read(response)
        raise ImageError(f"refused: more than {max_redirects} redirects")

    async def _vet(self, url: httpx.URL, redirects: int) -> _Hop:
        """Check one hop's URL and resolve its host to an address the policy allows."""
        where = f"redirect {redirects} to {_shorten(url)}: " if redirects else ""
        if url.scheme not in _DEFAULT_PORTS:
            raise ImageError(f"{where}refused: scheme {url.scheme!r} is not http or https")
        if url.userinfo:
            raise ImageError(f"{where}refused: URLs with user info are not fetched")
        host = url.raw_host.decode("ascii").lower()
        if not host:
            raise ImageError(f"{where}refused: the URL has no host")
        if not (self._allowlist.allows(host) or self._allowlist.allows(url.host)):
            raise ImageError(f"{where}refused: host {host!r} is not in allow_hosts")
        port = url.port or _DEFAULT_PORTS[url.scheme]
        address = await self._vetted_address(host, port, where)
        literal = _parse_address(host) is not None
        return _Hop(
            url=url,
            connect_url=url.copy_with(host=str(address)),
            host_header=url.netloc.decode("ascii"),
            # TLS SNI must not carry an IP literal; certificates for those name the IP.
            sni_hostname=host if url.scheme == "https" and not literal else None,
        )

    async def _vetted_address(self, host: str, port: int, where: str) -> IPAddress:
        literal = _parse_address(host)
        if literal is not None:
            if not self._address_allowed(literal):
                raise ImageError(f"{where}refused: {host} is not a public address")
            return literal
        try:
            candidates = await self._resolver(host, port)
        except OSError as exc:
            raise ImageError(f"{where}could not resolve host {host!r}: {exc}") from None
        if not candidates:
            raise ImageError(f"{where}could not resolve host {host!r}: no addresses")
        addresses: list[IPAddress] = []
        # Every address must pass, not just the one used: a name that also resolves to an
        # internal address is refused outright rather than raced.
        for candidate in candidates:
            address = _parse_address(candidate)
            if address is None or not self._address_allowed(address):
                raise ImageError(
                    f"{where}refused: host {host!r} resolves to {candidate}, "
                    "which is not a public address"
                )
            addresses.append(address)
        return addresses[0]

    async def _read(self, response: httpx.Response) -> bytes:
        """The body, refused as soon as it is known to exceed ``max_bytes``."""
        limit = self._config.max_bytes
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ImageError(f"refused: unexpected Content-Encoding {encoding!r}")
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise ImageError(
                f"refused: Content-Length {int(declared)} is over the {limit}-byte limit"
            )
        chunks: list[bytes] = []
        received = 0
        async for chunk in response.aiter_raw():
            received += len(chunk)
            if received > limit:
                raise ImageError(f"refused: the body is over the {limit}-byte limit")
            chunks.append(chunk)
        return b"".join(chunks)


def _redirect_target(base: httpx.URL, location: str) -> httpx.URL:
    try:
        return base.join(location)
    except httpx.InvalidURL as exc:
        raise ImageError(f"invalid redirect Location {location[:200]!r}: {exc}") from None


def _shorten(url: httpx.URL, limit: int = 200) -> str:
    text = str(url)
    return text if len(text) <= limit else text[: limit - 1] + "…"
