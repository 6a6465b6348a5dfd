"""The opt-in remote image fetcher: what it fetches, and every way it refuses to (SSRF).

All traffic stays on 127.0.0.1: a small aiohttp server bound to port 0, reached through
injected resolvers that map test names to loopback (or to the internal addresses an
attacker would aim at). Every test is bounded in time.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, ip_address
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler
from builders import PNG_1X1, body, chat, image_part, text_part, user
from hypothesis import given
from hypothesis import strategies as st

from vsr_extproc.config.schema import FetchConfig
from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.errors import ImageError
from vsr_extproc.fetch import (
    MAX_IMAGES_PER_REQUEST,
    IPAddress,
    RemoteImageFetcher,
    is_public_address,
)

LOOPBACK = IPv4Address("127.0.0.1")

#: what the injected resolvers answer; names an attacker would point at internal services
NAMES: dict[str, list[str]] = {
    "images.example.test": ["127.0.0.1"],
    "cdn.images.example.test": ["127.0.0.1"],
    "other.example.test": ["127.0.0.1"],
    "evil.example.net": ["127.0.0.1"],
    "loopback.example.test": ["127.0.0.1"],
    "v6loopback.example.test": ["::1"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
    "metadata.example.test": ["169.254.169.254"],
    "alibaba.example.test": ["100.100.100.200"],
    "private.example.test": ["10.0.0.7"],
    "ula.example.test": ["fd00:ec2::254"],
    "split.example.test": ["8.8.8.8", "10.0.0.1"],
}


@dataclass
class Resolver:
    """A fake DNS that records every name it was asked about."""

    asked: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in NAMES:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return NAMES[host]


def loopback_only(address: IPAddress) -> bool:
    return address == LOOPBACK


def loopback_or_public(address: IPAddress) -> bool:
    """The test server's one address, plus the default policy for everything else."""
    return address == LOOPBACK or is_public_address(address)


@dataclass
class Seen:
    path: str
    host: str
    user_agent: str


@dataclass
class ImageServer:
    port: int
    seen: list[Seen]
    scheme: str = "http"
    #: TLS server names the clients sent (SNI), in order
    server_names: list[str | None] = field(default_factory=list)

    def url(self, path: str, host: str = "images.example.test") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


def make_app(seen: list[Seen], release: asyncio.Event) -> web.Application:
    async def image(request: web.Request) -> web.Response:
        return web.Response(body=PNG_1X1, content_type="image/png")

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such image")

    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": request.query["to"]})

    async def hop(request: web.Request) -> web.Response:
        left = int(request.match_info["left"])
        if left == 0:
            return web.Response(body=PNG_1X1, content_type="image/png")
        return web.Response(status=302, headers={"Location": f"/hop/{left - 1}"})

    async def declared_huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "image/png"})
        response.content_length = 10**9
        await response.prepare(request)
        await response.write(PNG_1X1[:8])
        await wait(release, 5)
        return response

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "image/png"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for _ in range(4096):  # 4 MiB at most, far past the 4 KiB cap
                await response.write(b"\0" * 1024)
        except ConnectionError:
            pass
        return response

    async def slow(request: web.Request) -> web.Response:
        await wait(release, 2)
        return web.Response(body=PNG_1X1, content_type="image/png")

    async def gzip(request: web.Request) -> web.Response:
        return web.Response(body=b"\x1f\x8b", headers={"Content-Encoding": "gzip"})

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        seen.append(Seen(request.path, request.host, request.headers.get("User-Agent", "")))
        return await handler(request)

    app = web.Application(middlewares=[record])
    app.router.add_get("/img.png", image)
    app.router.add_get("/missing", missing)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/hop/{left}", hop)
    app.router.add_get("/declared-huge", declared_huge)
    app.router.add_get("/endless", endless)
    app.router.add_get("/slow", slow)
    app.router.add_get("/gzip", gzip)
    return app


async def wait(event: asyncio.Event, seconds: float) -> None:
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass


async def serve(ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[ImageServer]:
    seen: list[Seen] = []
    release = asyncio.Event()
    runner = web.AppRunner(make_app(seen, release), shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield ImageServer(port, seen, "https" if ssl_context else "http")
    finally:
        release.set()
        await runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[ImageServer]:
    async for running in serve():
        yield running


@pytest.fixture
def resolver() -> Resolver:
    return Resolver()


@pytest.fixture
async def make_fetcher(
    resolver: Resolver,
) -> AsyncIterator[Callable[..., RemoteImageFetcher]]:
    made: list[RemoteImageFetcher] = []

    def make(
        *,
        allow_hosts: tuple[str, ...] = ("*.example.test",),
        address_allowed: Callable[[IPAddress], bool] = loopback_only,
        ssl_context: ssl.SSLContext | None = None,
        **config: object,
    ) -> RemoteImageFetcher:
        settings = {"enabled": True, "max_bytes": 4096, "timeout_ms": 2000, "max_redirects": 2}
        fetcher = RemoteImageFetcher(
            FetchConfig.model_validate({**settings, **config, "allow_hosts": allow_hosts}),
            resolver=resolver,
            address_allowed=address_allowed,
            ssl_context=ssl_context,
        )
        made.append(fetcher)
        return fetcher

    yield make
    for fetcher in made:
        await fetcher.close()


def request_with(*urls: str) -> NormalizedRequest:
    return normalize(
        body(chat(user([text_part("what is this?"), *(image_part(url) for url in urls)])))
    )


async def fetch_one(fetcher: RemoteImageFetcher, url: str) -> tuple[bytes | None, str]:
    """Fetch one URL; the bytes, or None and the reason ``ImagePart.data()`` reports."""
    request = request_with(url)
    await fetcher(request)
    try:
        return request.images[0].data(), ""
    except ImageError as exc:
        return None, str(exc)


# --- the address policy -------------------------------------------------------------------

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",  # mapped: judged by the IPv4 host it reaches
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
]
REFUSED = {
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "10.0.0.7": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.168.1.1": "private",
    "169.254.169.254": "link-local, cloud metadata",
    "100.100.100.200": "shared, Alibaba metadata",
    "100.64.0.1": "shared (CGNAT)",
    "0.0.0.0": "unspecified",
    "255.255.255.255": "broadcast",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "240.0.0.1": "reserved",
    "192.0.0.8": "IETF protocol assignments",
    "192.0.2.1": "documentation",
    "198.51.100.1": "documentation",
    "203.0.113.1": "documentation",
    "198.18.0.1": "benchmarking",
    "::1": "IPv6 loopback",
    "::": "IPv6 unspecified",
    "::ffff:127.0.0.1": "IPv4-mapped loopback",
    "::ffff:169.254.169.254": "IPv4-mapped metadata",
    "::ffff:10.0.0.1": "IPv4-mapped private",
    "::127.0.0.1": "IPv4-compatible (deprecated)",
    "::8.8.8.8": "IPv4-compatible (deprecated), even of a public address",
    "2002:7f00:1::1": "6to4 of loopback",
    "2002:a9fe:a9fe::1": "6to4 of metadata",
    "64:ff9b::7f00:1": "NAT64 of loopback",
    "64:ff9b::a9fe:a9fe": "NAT64 of metadata",
    "64:ff9b:1::808:808": "local-use NAT64",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2": "Teredo",
    "fc00::1": "unique local",
    "fd00:ec2::254": "AWS IPv6 metadata (unique local)",
    "fe80::1": "IPv6 link-local",
    "fec0::1": "IPv6 site-local",
    "ff02::1": "IPv6 multicast",
    "2001:db8::1": "IPv6 documentation",
    "3fff::1": "IPv6 documentation",
    "100::1": "discard-only",
}


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_public_address(ip_address(address))


@pytest.mark.parametrize(("address", "kind"), REFUSED.items())
def test_internal_addresses_are_refused(address: str, kind: str) -> None:
    assert not is_public_address(ip_address(address)), kind


INTERNAL_V4 = [
    IPv4Network(network)
    for network in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]


def mapped(address: IPv4Address) -> IPv6Address:
    return IPv6Address((0xFFFF << 32) | int(address))


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_any_ipv4_is_judged_alike_in_its_mapped_form(value: int) -> None:
    address = IPv4Address(value)
    assert is_public_address(mapped(address)) == is_public_address(address)
    if any(address in network for network in INTERNAL_V4):
        assert not is_public_address(address)
        assert not is_public_address(mapped(address))


@given(
    st.sampled_from(INTERNAL_V4).flatmap(
        lambda network: st.integers(int(network.network_address), int(network.broadcast_address))
    )
)
def test_every_internal_ipv4_is_refused_in_every_spelling(value: int) -> None:
    address = IPv4Address(value)
    assert not is_public_address(address)
    assert not is_public_address(mapped(address))
    assert not is_public_address(IPv6Address((0x2002 << 112) | (value << 80)))  # 6to4
    assert not is_public_address(IPv6Address(int(IPv6Address("64:ff9b::")) | value))  # NAT64


# --- fetching -----------------------------------------------------------------------------


async def test_fetches_an_allowed_image_by_ip_with_the_original_host(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    data, reason = await fetch_one(make_fetcher(), server.url("/img.png"))
    assert (data, reason) == (PNG_1X1, "")
    [seen] = server.seen
    assert seen.host == f"images.example.test:{server.port}"
    assert seen.user_agent.startswith("vsr-extproc/")


async def test_wildcard_matches_subdomains_but_not_the_bare_domain(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    fetcher = make_fetcher(allow_hosts=("*.images.example.test",))
    data, _ = await fetch_one(fetcher, server.url("/img.png", host="CDN.Images.Example.Test"))
    assert data == PNG_1X1
    data, reason = await fetch_one(fetcher, server.url("/img.png"))
    assert data is None
    assert "'images.example.test' is not in allow_hosts" in reason
    assert len(server.seen) == 1


async def test_a_host_not_allowlisted_is_refused_before_any_lookup_or_connection(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher], resolver: Resolver
) -> None:
    data, reason = await fetch_one(make_fetcher(), server.url("/img.png", host="evil.example.net"))
    assert data is None
    assert reason == "image 0: refused: host 'evil.example.net' is not in allow_hosts"
    assert resolver.asked == []
    assert server.seen == []


async def test_ip_literals_are_fetched_only_when_listed_literally(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    unlisted = make_fetcher(allow_hosts=("*.example.test",))
    _, reason = await fetch_one(unlisted, server.url("/img.png", host="127.0.0.1"))
    assert "'127.0.0.1' is not in allow_hosts" in reason
    assert server.seen == []
    listed = make_fetcher(allow_hosts=("127.0.0.1",))
    data, _ = await fetch_one(listed, server.url("/img.png", host="127.0.0.1"))
    assert data == PNG_1X1


@pytest.mark.parametrize(
    "name",
    [
        "loopback.example.test",  # 127.0.0.1
        "v6loopback.example.test",  # ::1
        "mapped.example.test",  # ::ffff:127.0.0.1
        "metadata.example.test",  # 169.254.169.254
        "alibaba.example.test",  # 100.100.100.200
        "private.example.test",  # 10.0.0.7
        "ula.example.test",  # fd00:ec2::254
        "split.example.test",  # 8.8.8.8 and 10.0.0.1: every address must pass
    ],
)
async def test_the_default_policy_refuses_names_that_resolve_inside(
    name: str, server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    fetcher = make_fetcher(address_allowed=is_public_address)
    data, reason = await fetch_one(fetcher, server.url("/img.png", host=name))
    assert data is None
    assert f"refused: host '{name}' resolves to " in reason
    assert "not a public address" in reason
    assert server.seen == []


async def test_an_unresolvable_host_is_unavailable(
    make_fetcher: Callable[..., RemoteImageFetcher],
) -> None:
    _, reason = await fetch_one(make_fetcher(), "http://nowhere.example.test/img.png")
    assert reason.startswith("image 0: could not resolve host 'nowhere.example.test'")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("ftp://images.example.test/img.png", "scheme 'ftp' is not http or https"),
        ("http://user:secret@images.example.test/img.png", "user info"),
    ],
)
async def test_bad_urls_are_refused(
    url: str, expected: str, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    fetcher = make_fetcher()
    request = request_with("http://images.example.test/placeholder.png")
    request.images[0].url = url  # normalize only lets http(s) through; the fetcher re-checks
    await fetcher(request)
    with pytest.raises(ImageError, match=expected):
        request.images[0].data()


async def test_a_redirect_chain_within_max_redirects_is_followed(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    data, _ = await fetch_one(make_fetcher(max_redirects=2), server.url("/hop/2"))
    assert data == PNG_1X1
    assert [seen.path for seen in server.seen] == ["/hop/2", "/hop/1", "/hop/0"]


async def test_a_redirect_chain_longer_than_max_redirects_is_refused(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    data, reason = await fetch_one(make_fetcher(max_redirects=2), server.url("/hop/3"))
    assert data is None
    assert reason == "image 0: refused: more than 2 redirects"
    assert [seen.path for seen in server.seen] == ["/hop/3", "/hop/2", "/hop/1"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("http://127.0.0.2:{port}/img.png", "refused: 127.0.0.2 is not a public address"),
        ("http://127.0.0.1:{port}/img.png", "host '127.0.0.1' is not in allow_hosts"),
        ("http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is not a public"),
        ("http://[::ffff:10.0.0.1]/", "refused: ::ffff:10.0.0.1 is not a public"),
        ("http://[::ffff:127.0.0.1]:{port}/img.png", "refused: ::ffff:127.0.0.1 is not a public"),
        ("http://metadata.example.test/", "resolves to 169.254.169.254, which is not a public"),
        ("http://evil.example.net:{port}/img.png", "'evil.example.net' is not in allow_hosts"),
        ("file:///etc/passwd", "scheme 'file' is not http or https"),
        ("http://u:p@images.example.test:{port}/img.png", "user info"),
    ],
)
async def test_a_redirect_is_vetted_like_the_first_request(
    target: str,
    expected: str,
    server: ImageServer,
    make_fetcher: Callable[..., RemoteImageFetcher],
) -> None:
    # IP literals listed on purpose: the address policy still refuses them.
    fetcher = make_fetcher(
        allow_hosts=(
            "*.example.test",
            "127.0.0.2",
            "169.254.169.254",
            "[::ffff:10.0.0.1]",
            "::ffff:127.0.0.1",
        ),
        address_allowed=loopback_or_public,
    )
    location = target.format(port=server.port)
    start = server.url("/redirect") + "?to=" + location.replace("&", "%26")
    data, reason = await fetch_one(fetcher, start)
    assert data is None
    assert reason.startswith("image 0: redirect 1 to ")
    assert expected in reason
    assert [seen.path for seen in server.seen] == ["/redirect"]


async def test_a_declared_length_over_the_cap_is_refused_before_reading(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    started = time.monotonic()
    data, reason = await fetch_one(make_fetcher(), server.url("/declared-huge"))
    assert data is None
    assert reason == "image 0: refused: Content-Length 1000000000 is over the 4096-byte limit"
    assert time.monotonic() - started < 1  # the server is still "sending" for 5 s


async def test_a_chunked_body_over_the_cap_is_aborted(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    data, reason = await fetch_one(make_fetcher(), server.url("/endless"))
    assert data is None
    assert reason == "image 0: refused: the body is over the 4096-byte limit"


async def test_a_compressed_body_is_refused(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    _, reason = await fetch_one(make_fetcher(), server.url("/gzip"))
    assert reason == "image 0: refused: unexpected Content-Encoding 'gzip'"


async def test_a_slow_server_times_out_within_the_budget(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    started = time.monotonic()
    data, reason = await fetch_one(make_fetcher(timeout_ms=300), server.url("/slow"))
    elapsed = time.monotonic() - started
    assert data is None
    assert reason == "image 0: timed out after 300 ms"
    assert 0.25 < elapsed < 1.0


async def test_an_error_status_makes_the_image_unavailable(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    data, reason = await fetch_one(make_fetcher(), server.url("/missing"))
    assert data is None
    assert reason == "image 0: HTTP 404 Not Found"


async def test_one_good_and_one_bad_image_in_one_request(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    request = request_with(server.url("/img.png"), server.url("/missing"))
    await make_fetcher()(request)
    good, bad = request.images
    assert good.data() == PNG_1X1
    assert not bad.available
    with pytest.raises(ImageError, match=r"^image 1: HTTP 404 Not Found$"):
        bad.data()


async def test_images_beyond_the_per_request_limit_are_not_fetched(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    count = MAX_IMAGES_PER_REQUEST + 2
    request = request_with(*(server.url(f"/img.png?n={n}") for n in range(count)))
    await make_fetcher()(request)
    assert [image.available for image in request.images] == [True] * 8 + [False] * 2
    with pytest.raises(ImageError, match="more than 8 remote images"):
        request.images[-1].data()
    assert len(server.seen) == MAX_IMAGES_PER_REQUEST


async def test_a_disabled_fetcher_fetches_nothing(
    server: ImageServer, make_fetcher: Callable[..., RemoteImageFetcher]
) -> None:
    _, reason = await fetch_one(make_fetcher(enabled=False), server.url("/img.png"))
    assert reason == "image 0: a remote URL that was not fetched"
    assert server.seen == []


# --- TLS: the connection goes to the IP, SNI and the certificate check use the name -------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for images.example.test only (no IP in it)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec",
            "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", "/CN=images.example.test",
            "-addext", "subjectAltName=DNS:images.example.test",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )  # fmt: skip
    return cert, key


@pytest.fixture
async def tls_server(certificate: tuple[Path, Path]) -> AsyncIterator[ImageServer]:
    server_names: list[str | None] = []

    def record(_: ssl.SSLObject, name: str | None, __: ssl.SSLContext) -> None:
        server_names.append(name)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    context.sni_callback = record
    async for running in serve(context):
        running.server_names = server_names
        yield running


async def test_https_sends_the_name_as_sni_and_verifies_the_certificate_against_it(
    tls_server: ImageServer,
    certificate: tuple[Path, Path],
    make_fetcher: Callable[..., RemoteImageFetcher],
) -> None:
    trusted = ssl.create_default_context(cafile=str(certificate[0]))
    fetcher = make_fetcher(ssl_context=trusted)
    data, reason = await fetch_one(fetcher, tls_server.url("/img.png"))
    assert (data, reason) == (PNG_1X1, "")
    [seen] = tls_server.seen
    assert seen.host == f"images.example.test:{tls_server.port}"
    assert tls_server.server_names == ["images.example.test"]

    # Same IP, same certificate, another name: the check is against the name, not the IP.
    data, reason = await fetch_one(fetcher, tls_server.url("/img.png", host="other.example.test"))
    assert data is None
    assert "CERTIFICATE_VERIFY_FAILED" in reason
    assert "other.example.test" in reason
    assert tls_server.server_names == ["images.example.test", "other.example.test"]
    assert len(tls_server.seen) == 1
