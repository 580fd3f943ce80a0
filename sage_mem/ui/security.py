"""What keeps other web pages and other hosts away from the memory: checked before any route.

The threats are the user's own browser, not the network (the server binds
127.0.0.1 only):

- **DNS rebinding**: a page on `evil.example` re-points its name at 127.0.0.1
  and becomes same-origin with us. Its requests carry `Host: evil.example:PORT`,
  so every request whose Host is not `127.0.0.1:PORT` or `localhost:PORT` is
  refused, the page and static files included.
- **Cross-site reads and writes**: any page may send requests here (a form
  post, `fetch(…, {mode: "no-cors"})`, a `<script src>`). Every `/api/` request
  needs the per-launch token in the `X-Sage-Token` header. A cross-origin page
  cannot set that header without a CORS preflight, which is never answered,
  and cannot learn the token: it is only in the URL fragment that `--open`
  opens (never sent to a server) and in the page's storage. The event stream,
  which `EventSource` opens without custom headers, takes it as `?token=`.
  Changes also need a JSON body and, when the browser says where the request
  comes from (`Origin`, `Sec-Fetch-Site`), that it comes from this page.
- **Framing and injection**: a strict Content-Security-Policy (scripts and
  styles from this server only, no inline script), no framing, no referrer,
  `nosniff`, and `Cross-Origin-Resource-Policy: same-origin`. All memory text is
  put into the page as text nodes, never as HTML.

The page shell and static files hold no memory data and need no token.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_HEADER = "x-sage-token"
EVENTS_PATH = "/api/events"
SAFE_METHODS = frozenset({"GET", "HEAD"})

CSP = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
])

BASE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


def new_token() -> str:
    """A fresh random token for one launch (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class Guard:
    """ASGI middleware: Host check for everything, token (and origin) checks for `/api/`.

    `port` is read at each request, so the app can be built before the socket
    is bound; until it is set, every request is refused.
    """

    def __init__(self, app: ASGIApp, *, token: str, port: Callable[[], int | None]) -> None:
        self.app = app
        self.token = token
        self.port = port

    def allowed_hosts(self) -> set[str]:
        port = self.port()
        if not port:
            return set()
        return {f"127.0.0.1:{port}", f"localhost:{port}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        hosts = self.allowed_hosts()
        if host.lower() not in hosts:
            await _refuse(
                send, 403,
                "wrong Host header: open the page as http://127.0.0.1 with the port sage-mem "
                "ui printed (requests through other host names are refused: DNS rebinding)",
            )
            return
        path: str = scope.get("path", "")
        if path == "/api" or path.startswith("/api/"):
            problem = self.check_api(scope, headers, hosts)
            if problem is not None:
                status, message = problem
                await _refuse(send, status, message)
                return
        await self.app(scope, receive, _with_headers(send, api=path.startswith("/api/")))

    def check_api(
        self, scope: Scope, headers: dict[str, str], hosts: set[str]
    ) -> tuple[int, str] | None:
        """Why this API request is refused (status, message), or None when it may go on."""
        given = headers.get(TOKEN_HEADER)
        if given is None and scope.get("path") == EVENTS_PATH:
            given = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
                     or [None])[0]
        if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
            return 401, (
                "missing or wrong token: open the link sage-mem ui printed "
                "(the token changes at every launch)"
            )
        if headers.get("sec-fetch-site") == "cross-site":
            return 403, "cross-site request refused"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in hosts}:
            return 403, "request from another origin refused"
        if scope.get("method", "GET") not in SAFE_METHODS:
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return 415, "changes must be sent as application/json"
        return None


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = name.decode("latin-1").lower()
        if key in out:
            # Two Host (or token) headers are a trick, not a mistake: keep neither.
            out[key] = "\x00"
            continue
        out[key] = value.decode("latin-1")
    return out


def _with_headers(send: Send, *, api: bool) -> Send:
    extra = list(BASE_HEADERS)
    if api:
        extra.append((b"cache-control", b"no-store"))

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            message["headers"] = [
                *message.get("headers", []),
                *[(name, value) for name, value in extra if name not in present],
            ]
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message, "kind": "Refused"}).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *BASE_HEADERS,
        ],
    })
    await send({"type": "http.response.body", "body": body})
