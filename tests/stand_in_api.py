"""A stand-in model API on 127.0.0.1 for the real agent CLIs (Claude Code, Codex).

It plays a scripted model and records every request, so that a test can run
the real client (`claude -p …`, `codex exec …`) end to end and assert what the
client sent: the hooks' context, the tools it offered, the tool results it
passed back.

Two wire formats, each streamed the way the real service streams it:

- the Anthropic Messages API (`POST /v1/messages`, server-sent events
  `message_start`, `content_block_start`, `content_block_delta` with
  `text_delta` / `input_json_delta`, `content_block_stop`, `message_delta`
  with the stop reason, `message_stop`), for Claude Code through
  `ANTHROPIC_BASE_URL`;
- the OpenAI Responses API (`POST /v1/responses`, events `response.created`,
  `response.output_item.added`, `response.output_text.delta`,
  `response.function_call_arguments.delta`, `response.output_item.done`,
  `response.completed`), for Codex through a model provider's `base_url`.

The script: a test gives a `responder(request) -> Turn | None`, called for
every model request in order. A request is a `ModelRequest` (the JSON body
plus helpers: the text the user turn carries, the tool results in it, the
tools offered). A `Turn` is a list of `Text` and `ToolCall` blocks; `None`
means "not a turn of the script" (a client's side request: a title, a quota
probe), answered with a short text. Unknown paths get 404 in the API's own
error shape, so a client's optional probes fail the way they would offline.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    namespace: str | None = None  # Responses API: a tool inside a `namespace` tool (Codex's MCP)


Turn = list[Text | ToolCall]


@dataclass
class ModelRequest:
    """One request a client sent to the model endpoint."""

    api: str  # "anthropic" or "openai"
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            if isinstance(tool, dict):
                name = tool.get("name")
                if name is None and isinstance(tool.get("function"), dict):
                    name = tool["function"].get("name")
                if isinstance(name, str):
                    names.append(name)
        return names

    def tool(self, name: str) -> dict[str, Any] | None:
        for tool in self.body.get("tools") or []:
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool
        return None

    @property
    def text(self) -> str:
        """Every piece of text the request carries (system, messages, inputs), joined."""
        return "\n".join(_texts(self.body.get("system"))
                         + _texts(self.body.get("instructions"))
                         + _texts(self.body.get("messages"))
                         + _texts(self.body.get("input")))

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool results in the request, oldest first: {"id", "text", "is_error"}."""
        results: list[dict[str, Any]] = []
        for message in self.body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append({
                        "id": block.get("tool_use_id"),
                        "text": "\n".join(_texts(block.get("content"))),
                        "is_error": bool(block.get("is_error")),
                    })
        for item in self.body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                text = output if isinstance(output, str) else "\n".join(_texts(output))
                results.append({"id": item.get("call_id"), "text": text, "is_error": False})
        return results


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    if isinstance(value, dict):
        found: list[str] = []
        for key in ("text", "content", "output"):
            if key in value:
                found.extend(_texts(value[key]))
        return found
    return []


Responder = Callable[[ModelRequest], Turn | None]


@dataclass
class StandInAPI:
    """The server; use as a context manager. `requests` holds every model request."""

    responder: Responder
    model: str = "stand-in-model"
    requests: list[ModelRequest] = field(default_factory=list)
    other_requests: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> StandInAPI:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                stand_in._post(self)

            def do_GET(self) -> None:  # noqa: N802
                stand_in._not_found(self)

            do_HEAD = do_GET  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

    def scripted(self) -> list[ModelRequest]:
        """The requests that were turns of the script (offered tools), in order."""
        return [request for request in self.requests if request.tool_names]

    # -- HTTP ---------------------------------------------------------------

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        path = handler.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            self._json(handler, 200, {"input_tokens": max(1, len(raw) // 4)})
            return
        api = ("anthropic" if path.endswith("/messages")
               else "openai" if path.endswith("/responses") else None)
        if api is None:
            self._not_found(handler)
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._json(handler, 400, {"error": {"type": "invalid_request_error",
                                                "message": "body is not JSON"}})
            return
        request = ModelRequest(api, path, {k.lower(): v for k, v in handler.headers.items()}, body)
        with self._lock:
            self.requests.append(request)
            try:
                turn = self.responder(request)
            except Exception as exc:  # noqa: BLE001 - a broken script is reported to the test
                self.errors.append(f"{type(exc).__name__}: {exc}")
                turn = [Text(f"stand-in script failed: {exc}")]
        if turn is None:
            turn = [Text("ok")]
        if api == "anthropic":
            events = self._anthropic_events(turn, body)
        else:
            events = self._openai_events(turn, body)
        if body.get("stream"):
            self._stream(handler, events)
        else:
            final = self._final_anthropic(turn) if api == "anthropic" else self._final_openai(turn)
            self._json(handler, 200, final)

    def _not_found(self, handler: BaseHTTPRequestHandler) -> None:
        self.other_requests.append((handler.command, handler.path))
        self._json(handler, 404, {"type": "error", "error": {"type": "not_found_error",
                                                             "message": "not found"}})

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(payload)

    @staticmethod
    def _stream(handler: BaseHTTPRequestHandler, events: Iterator[tuple[str, dict[str, Any]]]
                ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        for name, data in events:
            handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            handler.wfile.flush()

    # -- Anthropic Messages -------------------------------------------------

    def _final_anthropic(self, turn: Turn) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for block in turn:
            if isinstance(block, Text):
                content.append({"type": "text", "text": block.text})
            else:
                content.append({"type": "tool_use", "id": self.new_id("toolu"),
                                "name": block.name, "input": block.arguments})
        return {
            "id": self.new_id("msg"), "type": "message", "role": "assistant",
            "model": self.model, "content": content,
            "stop_reason": _stop_reason(turn), "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }

    def _anthropic_events(self, turn: Turn, body: dict[str, Any]
                          ) -> Iterator[tuple[str, dict[str, Any]]]:
        yield "message_start", {"type": "message_start", "message": {
            "id": self.new_id("msg"), "type": "message", "role": "assistant",
            "model": body.get("model") or self.model, "content": [], "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}}
        yield "ping", {"type": "ping"}
        for index, block in enumerate(turn):
            if isinstance(block, Text):
                yield "content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "text", "text": ""}}
                for piece in _pieces(block.text):
                    yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "text_delta", "text": piece}}
            else:
                yield "content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "tool_use",
                                                                "id": self.new_id("toolu"),
                                                                "name": block.name, "input": {}}}
                for piece in _pieces(json.dumps(block.arguments, ensure_ascii=False)):
                    yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "input_json_delta",
                                                            "partial_json": piece}}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": _stop_reason(turn),
                                          "stop_sequence": None},
                                "usage": {"output_tokens": 10}}
        yield "message_stop", {"type": "message_stop"}

    # -- OpenAI Responses ---------------------------------------------------

    def _openai_items(self, turn: Turn) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for block in turn:
            if isinstance(block, Text):
                items.append({"id": self.new_id("msg"), "type": "message", "status": "completed",
                              "role": "assistant",
                              "content": [{"type": "output_text", "text": block.text,
                                           "annotations": []}]})
            else:
                item = {"id": self.new_id("fc"), "type": "function_call",
                        "status": "completed", "call_id": self.new_id("call"),
                        "name": block.name,
                        "arguments": json.dumps(block.arguments, ensure_ascii=False)}
                if block.namespace is not None:
                    item["namespace"] = block.namespace
                items.append(item)
        return items

    def _response(self, response_id: str, status: str, output: list[dict[str, Any]],
                  body: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": response_id, "object": "response", "created_at": 1_780_000_000,
            "status": status, "model": body.get("model") or self.model, "output": output,
            "error": None, "incomplete_details": None,
        }
        if status == "completed":
            response["usage"] = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                 "output_tokens": 10,
                                 "output_tokens_details": {"reasoning_tokens": 0},
                                 "total_tokens": 20}
        return response

    def _final_openai(self, turn: Turn) -> dict[str, Any]:
        return self._response(self.new_id("resp"), "completed", self._openai_items(turn), {})

    def _openai_events(self, turn: Turn, body: dict[str, Any]
                       ) -> Iterator[tuple[str, dict[str, Any]]]:
        sequence = itertools.count()
        response_id = self.new_id("resp")

        def event(name: str, **data: Any) -> tuple[str, dict[str, Any]]:
            return name, {"type": name, "sequence_number": next(sequence), **data}

        yield event("response.created", response=self._response(response_id, "in_progress", [],
                                                                 body))
        yield event("response.in_progress",
                    response=self._response(response_id, "in_progress", [], body))
        items = self._openai_items(turn)
        for index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                yield event("response.output_item.added", output_index=index,
                            item={**item, "status": "in_progress", "content": []})
                part = {"type": "output_text", "text": "", "annotations": []}
                yield event("response.content_part.added", item_id=item["id"],
                            output_index=index, content_index=0, part=part)
                for piece in _pieces(text):
                    yield event("response.output_text.delta", item_id=item["id"],
                                output_index=index, content_index=0, delta=piece)
                yield event("response.output_text.done", item_id=item["id"], output_index=index,
                            content_index=0, text=text)
                yield event("response.content_part.done", item_id=item["id"],
                            output_index=index, content_index=0,
                            part={**part, "text": text})
            else:
                yield event("response.output_item.added", output_index=index,
                            item={**item, "status": "in_progress", "arguments": ""})
                for piece in _pieces(item["arguments"]):
                    yield event("response.function_call_arguments.delta", item_id=item["id"],
                                output_index=index, delta=piece)
                yield event("response.function_call_arguments.done", item_id=item["id"],
                            output_index=index, arguments=item["arguments"])
            yield event("response.output_item.done", output_index=index, item=item)
        yield event("response.completed",
                    response=self._response(response_id, "completed", items, body))


def _stop_reason(turn: Turn) -> str:
    return "tool_use" if any(isinstance(block, ToolCall) for block in turn) else "end_turn"


def _pieces(text: str, size: int = 16) -> list[str]:
    """The text cut in small pieces, as a streaming model sends it (at least one, maybe empty)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# -- the real clients -------------------------------------------------------

CLIENTS_BIN_ENV = "SAGE_MEM_CLIENTS_BIN"
"""Where `claude` and `codex` are; default: the prefix `.ci/clients-setup` installs into."""
CLIENTS_PREFIX_ENV = "SAGE_MEM_CLIENTS_PREFIX"
API_KEY = "sk-stand-in-not-a-real-key"
_CLIENT_VARIABLES = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "SAGE_MEM_")


# Read when the tests are collected, before any fixture gives a test a HOME of its own.
_PREFIX = os.environ.get(CLIENTS_PREFIX_ENV) or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sage-mem-ci" / "clients"
)
_BIN = os.environ.get(CLIENTS_BIN_ENV) or str(Path(_PREFIX) / "node_modules" / ".bin")


def clients_bin() -> Path:
    return Path(_BIN)


def client(name: str) -> str:
    """The path of a real client CLI (`claude`, `codex`); without it, skip the test saying
    why, or under `CI=true` fail it: CI installed the clients (`.ci/clients-setup`), and a
    setup that broke must not turn the real-client tier into a row of silent skips."""
    import pytest

    path = clients_bin() / name
    if not (path.exists() and os.access(path, os.X_OK)):
        why = (f"{name} is not installed at {path}: run .ci/clients-setup (npm install of "
               f"@anthropic-ai/claude-code and @openai/codex), or set {CLIENTS_BIN_ENV}")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true: {why}", pytrace=False)
        pytest.skip(why)
    return str(path)


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment with a fresh HOME, this sage-mem on PATH, and none of a
    real client's variables.

    Credentials and settings of the machine's own agents (ANTHROPIC_*, CLAUDE*,
    OPENAI_*, CODEX_*) and a memory folder of its own (SAGE_MEM_*) never reach
    the client under test; PYTHONPATH stays, so the sage-mem it runs is this one.
    """
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(_CLIENT_VARIABLES)}
    # This sage-mem's own `sage-mem` on PATH, as a project-scope install asks of everyone.
    path = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", os.defpath)])
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"), PATH=path, **extra)
    return env


def claude_env(home: Path, api: StandInAPI, **extra: str) -> dict[str, str]:
    """Claude Code pointed at the stand-in, with no traffic but the model's."""
    return isolated_env(
        home,
        ANTHROPIC_BASE_URL=api.url,
        ANTHROPIC_API_KEY=API_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        # MCP tools in the request itself, not behind ToolSearch: what was offered shows.
        ENABLE_TOOL_SEARCH="false",
        **extra,
    )


def codex_provider(api: StandInAPI) -> str:
    """The lines of a user's `config.toml` that point Codex at the stand-in (Responses API)."""
    return "\n".join([
        f'model = "{api.model}"',
        'model_provider = "stand-in"',
        "check_for_update_on_startup = false",
        # Codex gives an optional MCP server 1 s to start before the first turn goes
        # out without its tools; a cold `sage-mem serve` on a loaded machine takes more.
        "mcp_optional_startup_grace_ms = 0",
        "",
        "[features]",
        "plugins = false",  # no sync of the curated plugins from the network
        "remote_plugin = false",
        "",
        "[model_providers.stand-in]",
        'name = "stand-in"',
        f'base_url = "{api.url}/v1"',
        'env_key = "STAND_IN_API_KEY"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        "[analytics]",
        "enabled = false",
        "",
    ])


def codex_env(home: Path, **extra: str) -> dict[str, str]:
    return isolated_env(home, CODEX_HOME=str(home / ".codex"), STAND_IN_API_KEY=API_KEY, **extra)


def sage_mem_on_path(folder: Path) -> Path:
    """A `sage-mem` command in `folder` that runs this sage-mem (for command lines naming it).

    It fixes PYTHONPATH itself: Codex starts MCP servers with a bare environment.
    """
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "sage-mem"
    path = os.environ.get("PYTHONPATH", "")
    script.write_text(
        "#!/bin/sh\n"
        + (f"PYTHONPATH={shlex.quote(path)}\nexport PYTHONPATH\n" if path else "")
        + f'exec {shlex.quote(sys.executable)} -m sage_mem "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script
