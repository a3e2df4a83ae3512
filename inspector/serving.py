"""`memlens serve`: textual-serve, with the door locked.

textual-serve's own server answers a WebSocket from any page and any ``Host``, needs no token,
and starts a new inspector process for every connection. A browser lets any web page open
``ws://127.0.0.1:8000/ws``, so any site open in the same browser could read and erase memory
through a served inspector. Here only the page memlens served can open the socket:

- every request must name the address served in its ``Host`` header (a page whose name was
  re-pointed at 127.0.0.1, DNS rebinding, names its own host and is refused);
- the socket's URL holds a random token made at each start, which only the served page knows;
- the socket's ``Origin`` must be the served address (browsers always send it and pages cannot
  forge it);
- at most ``max_sessions`` inspectors run at once; a further page is told so.

Everything else gets a plain 403 (or 503 at the cap) and starts nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")
DEFAULT_MAX_SESSIONS = 4


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    """A host as a ``Host`` header names it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass
class ServeGuard:
    """Who may talk to a served inspector: which ``Host`` and ``Origin`` values name it, the
    start's token, and how many inspectors may run at once."""

    host: str
    port: int
    max_sessions: int = DEFAULT_MAX_SESSIONS
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    sessions: int = 0

    @cached_property
    def allowed_hosts(self) -> set[str] | None:
        """The ``Host`` values that name this server, or None when it listens on every
        interface (then any name that reaches it is the server's, and ``Origin`` must match it)."""
        if self.host in WILDCARD_ADDRESSES:
            return None
        names = [_bracketed(name) for name in (LOOPBACK_NAMES if is_loopback(self.host) else (self.host,))]
        hosts = {f"{name}:{self.port}" for name in names}
        if self.port == 80:  # a browser leaves the default port out
            hosts |= set(names)
        return {host.lower() for host in hosts}

    def host_refusal(self, host_header: str | None) -> str | None:
        """Why a request naming ``host_header`` is refused, or None."""
        if not host_header:
            return "the request names no host"
        allowed = self.allowed_hosts
        if allowed is not None and host_header.lower() not in allowed:
            return f"this server answers to {', '.join(sorted(allowed))}, not {host_header}"
        return None

    def socket_refusal(self, host_header: str | None, origin: str | None, token: str) -> str | None:
        """Why a WebSocket asking with these is refused, or None."""
        if (why := self.host_refusal(host_header)) is not None:
            return why
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return "the socket's token is not this server's (reload the page memlens served)"
        if not origin:
            return "the socket names no origin"
        allowed = self.allowed_hosts
        names = allowed if allowed is not None else {str(host_header).lower()}
        if origin.lower() not in {f"http://{name}" for name in names}:
            return f"a page of {origin} may not open the inspector"
        return None

    def session_refusal(self) -> str | None:
        if self.sessions >= self.max_sessions:
            return f"{self.max_sessions} inspectors are already open; close one (or start memlens serve with a larger --max-sessions)"
        return None


def make_server(command: str, *, host: str, port: int, title: str, guard: ServeGuard) -> Any:
    """A textual-serve ``Server`` that asks ``guard`` before serving anything. Imported here, not
    at the top, so that `memlens --help` does not load aiohttp."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    @web.middleware
    async def check_host(request: web.Request, handler: Any) -> web.StreamResponse:
        if (why := guard.host_refusal(request.headers.get("Host"))) is not None:
            return web.Response(status=403, text=f"memlens serve refused this request: {why}\n")
        return await handler(request)

    class GuardedServer(Server):
        async def _make_app(self) -> web.Application:
            app = web.Application(middlewares=[check_host])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes(
                [
                    web.get("/", self.handle_index, name="index"),
                    web.get("/ws/{token}", self.handle_websocket, name="websocket"),
                    web.get("/download/{key}", self.handle_download, name="download"),
                    web.static("/static", self.statics_path, name="static"),
                ]
            )
            app.on_startup.append(self.on_startup)
            app.on_shutdown.append(self.on_shutdown)
            return app

        async def on_startup(self, app: web.Application) -> None:
            """Quiet: textual-serve's banner prints the command, and memlens prints its own line."""

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            # The socket is asked for on the host the page was loaded from, so its Origin and Host agree.
            page_host = request.headers["Host"]
            font_size = request.query.get("fontsize", "16")
            context = {
                "font_size": int(font_size) if font_size.isdigit() else 16,
                "app_websocket_url": f"ws://{page_host}/ws/{guard.token}",
                "config": {"static": {"url": f"http://{page_host}/static/"}},
                "application": {"name": title},
            }
            response = aiohttp_jinja2.render_template("app_index.html", request, context)
            response.headers["Cache-Control"] = "no-store"  # the page holds this start's token
            response.headers["Referrer-Policy"] = "no-referrer"
            return response

        async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
            why = guard.socket_refusal(request.headers.get("Host"), request.headers.get("Origin"), request.match_info["token"])
            if why is not None:
                return web.Response(status=403, text=f"memlens serve refused this socket: {why}\n")
            if (why := guard.session_refusal()) is not None:
                return web.Response(status=503, text=f"memlens serve: {why}\n")
            guard.sessions += 1
            try:
                return await super().handle_websocket(request)
            finally:
                guard.sessions -= 1

    return GuardedServer(command, host=host, port=port, title=title)
