"""`sage-mem ui`: every route of the web server, its security, live events, and `store.restore`.

The server runs for real (uvicorn on a free port of 127.0.0.1, in a thread)
and is spoken to over HTTP with the standard library, so that what is tested
is what a browser meets: the Host header, the token, the headers, the stream.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from support import TEMPLATE, wait_until, write_memory

from sage_mem.errors import ConflictError, MemoryNotFound
from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer

SCRIPT = "<script>alert('x')</script>"


def memory_file(description: str, body: str = "", **meta: Any) -> str:
    lines = [f"description: {json.dumps(description, ensure_ascii=False)}"]
    lines += [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body + "\n"


class Client:
    """HTTP to the server as a browser tab on it would send it (token and Host by default)."""

    def __init__(self, server: UiServer) -> None:
        self.server = server
        self.port = server.port

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "default",
        host: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, Any, http.client.HTTPMessage]:
        sent = {"Host": host or f"127.0.0.1:{self.port}"}
        if token == "default":
            token = self.server.token
        if token is not None:
            sent["X-Sage-Token"] = token
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            payload = response.read()
        finally:
            conn.close()
        kind = response.getheader("content-type", "")
        parsed: Any = json.loads(payload) if kind.startswith("application/json") else payload
        return response.status, parsed, response.headers

    def get(self, path: str, **kwargs: Any) -> tuple[int, Any, http.client.HTTPMessage]:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any, **kwargs: Any) -> tuple[int, Any, http.client.HTTPMessage]:
        return self.request("POST", path, body, **kwargs)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, data, _ = self.request(method, path, body)
        assert status == 200, (status, data)
        return data


def populate(memory_dir: Path) -> Path:
    """The template's eight memories, one with a script in it, one nested and dated."""
    if not memory_dir.exists():
        shutil.copytree(TEMPLATE, memory_dir)
    write_memory(memory_dir, "user_evil", memory_file(
        f"Evil {SCRIPT} description", f"Body with {SCRIPT} and <img src=x onerror=alert(1)>",
        category="user", tags=["xss", "pets"],
    ))
    write_memory(memory_dir, "project/api/auth_flow", memory_file(
        "The API signs requests with short-lived tokens", "See the auth service.",
        category="project", tags=["api"], created="2026-01-02", updated="2026-01-03T10:00:00Z",
    ))
    return memory_dir


@pytest.fixture
def folder(memory_dir: Path) -> Path:
    return populate(memory_dir)


@pytest.fixture
def store(folder: Path) -> Iterator[MemoryStore]:
    with MemoryStore(folder, watch=True) as opened:
        yield opened


@pytest.fixture
def server(store: MemoryStore) -> Iterator[UiServer]:
    with UiServer(store, port=0).start() as running:
        yield running


@pytest.fixture
def client(server: UiServer) -> Client:
    return Client(server)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """One server for the tests that only read, or whose requests are refused (it is faster)."""
    folder = populate(tmp_path_factory.mktemp("shared") / "memory")
    with MemoryStore(folder, watch=True) as opened, UiServer(opened, port=0).start() as running:
        yield Client(running)


# security: where it listens, which Host, which token


def test_the_server_listens_on_loopback_only(server: UiServer) -> None:
    assert server.socket.getsockname()[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}/#token={server.token}"


def test_each_launch_has_its_own_long_random_token(store: MemoryStore) -> None:
    first, second = UiServer(store, port=0), UiServer(store, port=0)
    try:
        assert first.token != second.token
        assert len(first.token) >= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", first.token)
    finally:
        first.socket.close()
        second.socket.close()


API_READS = [
    "/api/info", "/api/memories", "/api/memories?q=cat", "/api/memory?id=user_evil",
    "/api/archived", "/api/audit", "/api/stars", "/api/runs", "/api/runs/20260101T000000Z-0001",
    "/api/events",
]
API_WRITES = [
    ("/api/memory", {"id": "user_new", "description": "new", "create": True}),
    ("/api/archive", {"id": "user_evil", "reason": "test"}),
    ("/api/restore", {"id": "archive/user_evil"}),
    ("/api/dream", {"mode": "report"}),
    ("/api/runs/20260101T000000Z-0001/rollback", {"scope": "touched"}),
]


@pytest.mark.parametrize("path", API_READS)
def test_reading_memory_data_needs_the_token(shared: Client, path: str) -> None:
    status, data, _ = shared.get(path, token=None)
    assert status == 401
    assert "token" in data["error"]
    assert SCRIPT not in json.dumps(data)


@pytest.mark.parametrize("path", API_READS)
def test_a_wrong_token_is_refused(shared: Client, path: str) -> None:
    status, _, _ = shared.get(path, token="x" * 43)
    assert status == 401


@pytest.mark.parametrize(("path", "body"), API_WRITES)
def test_changes_without_the_token_are_refused_and_change_nothing(
    client: Client, folder: Path, path: str, body: dict[str, Any]
) -> None:
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    status, _, _ = client.post(path, body, token=None)
    assert status == 401
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before


@pytest.mark.parametrize("host", [
    pytest.param("evil.example:{port}", id="rebound-name"),
    pytest.param("127.0.0.1.nip.io:{port}", id="lookalike"),
    pytest.param("127.0.0.1:{other}", id="other-port"),
    pytest.param("127.0.0.1", id="no-port"),
    pytest.param("[::1]:{port}", id="ipv6"),
    pytest.param("", id="empty"),
])
@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/memories"])
def test_a_wrong_host_header_is_refused_everywhere(
    shared: Client, host: str, path: str
) -> None:
    status, data, headers = shared.get(
        path, host=host.format(port=shared.port, other=shared.port + 1) or " "
    )
    assert status == 403
    assert "Host" in data["error"]
    assert headers["content-security-policy"]


def test_localhost_with_the_right_port_is_accepted(shared: Client) -> None:
    status, data, _ = shared.get("/api/info", host=f"localhost:{shared.port}")
    assert status == 200 and data["memories"] >= 8


def test_two_host_headers_are_refused(shared: Client) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=10)
    try:
        conn.putrequest("GET", "/api/info", skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{shared.port}")
        conn.putheader("Host", "evil.example")
        conn.putheader("X-Sage-Token", shared.server.token)
        conn.endheaders()
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status in (400, 403)


def test_a_request_from_another_origin_is_refused_even_with_the_token(shared: Client) -> None:
    status, data, _ = shared.post(
        "/api/memory", {"id": "user_x", "description": "x", "create": True},
        headers={"Origin": "http://evil.example"},
    )
    assert status == 403 and "origin" in data["error"]
    status, _, _ = shared.get("/api/memories", headers={"Origin": "null"})
    assert status == 403


def test_a_cross_site_fetch_is_refused(shared: Client) -> None:
    status, _, _ = shared.get("/api/memories", headers={"Sec-Fetch-Site": "cross-site"})
    assert status == 403


def test_a_request_from_the_page_itself_is_accepted(shared: Client) -> None:
    status, _, _ = shared.get("/api/memories", headers={
        "Origin": f"http://127.0.0.1:{shared.port}", "Sec-Fetch-Site": "same-origin",
    })
    assert status == 200


def test_a_form_post_is_refused_even_with_the_token(client: Client, folder: Path) -> None:
    status, _, _ = client.request(
        "POST", "/api/memory", raw=b"id=user_form&description=x&create=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 415
    assert not (folder / "user_form.md").exists()


def test_no_cors_headers_are_ever_sent(shared: Client) -> None:
    status, _, headers = shared.request("OPTIONS", "/api/memories", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-sage-token",
    }, token=None)
    assert status in (401, 403, 405)
    assert headers["access-control-allow-origin"] is None
    _, _, headers = shared.get("/api/memories")
    assert headers["access-control-allow-origin"] is None


def test_responses_carry_a_strict_content_security_policy(shared: Client) -> None:
    for path in ["/", "/static/app.js", "/api/info"]:
        status, _, headers = shared.get(path)
        assert status == 200
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["cross-origin-resource-policy"] == "same-origin"
    assert shared.get("/api/info")[2]["cache-control"] == "no-store"


def test_the_page_needs_no_token_and_holds_no_memory_text(shared: Client) -> None:
    status, page, headers = shared.get("/", token=None)
    assert status == 200 and headers["content-type"].startswith("text/html")
    text = page.decode()
    assert "<script src=\"/static/app.js\"" in text
    assert "Evil" not in text and "猫" not in text
    assert "<script>" not in text  # no inline script: the policy would refuse it anyway


def test_static_files_hold_no_inner_html(shared: Client) -> None:
    for name in ("app.js", "starmap.js", "markdown.js"):
        status, body, _ = shared.get(f"/static/{name}", token=None)
        assert status == 200
        code = body.decode()
        assert not re.search(r"(inner|outer)HTML\s*=|insertAdjacentHTML|document\.write", code)
        assert not re.search(r"\beval\(|new Function\(", code)


# memory text travels as data


def test_script_in_a_memory_comes_back_as_json_text(shared: Client) -> None:
    status, data, headers = shared.get("/api/memory?id=user_evil")
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert SCRIPT in data["memory"]["description"] and SCRIPT in data["memory"]["body"]
    listed = shared.ok("GET", "/api/memories?q=evil")["results"]
    assert listed[0]["description"] == f"Evil {SCRIPT} description"
    star = next(s for s in stars_of(shared.ok("GET", "/api/stars")) if s["id"] == "user_evil")
    assert SCRIPT in star["description"]


# memories: search, facets, read


def test_search_uses_the_index_and_facets_count_the_whole_folder(shared: Client) -> None:
    data = shared.ok("GET", "/api/memories?q=" + quote("我的猫叫什么"))
    assert data["results"][0]["id"] == "user_cat_zh"
    assert data["all"] == 10
    categories = {c["name"]: c["count"] for c in data["facets"]["categories"]}
    assert categories == {"user": 3, "feedback": 2, "project": 3, "reference": 2}
    tags = {t["name"]: t["count"] for t in data["facets"]["tags"]}
    assert tags["example"] == 8 and tags["xss"] == 1


def test_category_and_tag_chips_combine_with_the_search(shared: Client) -> None:
    everything = shared.ok("GET", "/api/memories")
    assert everything["total"] == 10 and len(everything["results"]) == 10
    users = shared.ok("GET", "/api/memories?category=user")
    assert {r["id"] for r in users["results"]} == {"user_cat_zh", "user_profile", "user_evil"}
    tagged = shared.ok("GET", "/api/memories?category=user&tag=pets")
    assert [r["id"] for r in tagged["results"]] == ["user_evil"]
    searched = shared.ok("GET", "/api/memories?q=tests&category=feedback")
    assert searched["results"] and all(r["category"] == "feedback" for r in searched["results"])
    nothing = shared.ok("GET", "/api/memories?q=tests&category=user&tag=api")
    assert nothing["results"] == [] and nothing["total"] == 0
    assert nothing["facets"] == everything["facets"]


def test_the_list_without_a_query_shows_the_newest_first(shared: Client) -> None:
    rows = shared.ok("GET", "/api/memories")["results"]
    updated = [r["updated"] or "" for r in rows]
    assert updated == sorted(updated, reverse=True)
    ids = [r["id"] for r in rows]
    assert ids.index("project/api/auth_flow") > ids.index("user_profile")
    assert ids[-1] == "user_evil"  # no `updated` at all: last


def test_newest_first_is_by_the_moment_not_by_how_the_stamp_is_written(
    client: Client, folder: Path
) -> None:
    """Stamps in three zones (a team's shared folder; Claude Code's `modified` with its
    offset): newest first by when they were written, not by their text, which put them in
    the reverse order."""
    for memory_id, updated in (("user_utc_day", "2026-11-05"),  # 00:00 UTC
                               ("user_baker_island", "2026-11-04T23:00:00-12:00"),  # 11:00 UTC
                               ("user_tokyo", "2026-11-05T08:00:00+09:00")):  # 23:00 UTC, 4th
        write_memory(folder, memory_id, memory_file(f"Zones {memory_id}", updated=updated))
    client.server.store.reconcile()
    rows = client.ok("GET", "/api/memories?sort=newest&limit=1000")["results"]
    ids = [row["id"] for row in rows if row["id"] in
           ("user_utc_day", "user_baker_island", "user_tokyo")]
    assert ids == ["user_baker_island", "user_utc_day", "user_tokyo"]
    rows = client.ok("GET", "/api/memories?sort=oldest&limit=1000")["results"]
    ids = [row["id"] for row in rows if row["id"] in
           ("user_utc_day", "user_baker_island", "user_tokyo")]
    assert ids == ["user_tokyo", "user_utc_day", "user_baker_island"]


def test_reading_a_memory_gives_body_sha_and_frontmatter(client: Client, folder: Path) -> None:
    memory = client.ok("GET", "/api/memory?id=project/api/auth_flow")["memory"]
    assert memory["id"] == "project/api/auth_flow"
    assert memory["body"].strip() == "See the auth service."
    raw = (folder / "project/api/auth_flow.md").read_bytes()
    assert memory["sha256"] == hashlib.sha256(raw).hexdigest()
    assert memory["meta"]["created"] == "2026-01-02"


@pytest.mark.parametrize(("path", "status"), [
    ("/api/memory?id=user_nobody", 404),
    ("/api/memory?id=../../etc/passwd", 400),
    ("/api/memory", 400),
    ("/api/runs/20260101T000000Z-0001", 404),
    ("/api/runs/not-a-run", 404),
    ("/api/nothing-here", 404),
])
def test_bad_reads_answer_with_a_clear_status(shared: Client, path: str, status: int) -> None:
    got, data, _ = shared.get(path)
    assert got == status
    if path.startswith("/api/memory"):
        assert data["error"] and data["kind"]


def test_info_names_the_folder(client: Client, folder: Path) -> None:
    info = client.ok("GET", "/api/info")
    assert info["folder"] == str(folder) and info["memories"] == 10


def stars_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The stars of `/api/stars` (sent in columns, each category and date text once) as one
    object a star."""
    fields = {"id": "ids", "description": "descriptions", "category": "categories",
              "length": "lengths", "created": "created", "updated": "updated"}
    assert all(len(data[column]) == data["total"] for column in fields.values())
    tables = {"category": data["category_names"], "created": data["dates"],
              "updated": data["dates"]}
    return [{key: tables[key][data[column][n]] if key in tables else data[column][n]
             for key, column in fields.items()} for n in range(data["total"])]


def edges_of(data: dict[str, Any]) -> list[dict[str, str]]:
    """The relations of `/api/stars` (each as its two stars' places) as `{from, to, kind}`."""
    ids = data["ids"]
    return [{"from": ids[pairs[k]], "to": ids[pairs[k + 1]], "kind": kind}
            for kind, pairs in (("link", data["links"]), ("supersedes", data["supersedes"]))
            for k in range(0, len(pairs), 2)]


def test_the_star_map_is_made_once_a_change_and_sent_in_columns(
    client: Client, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 20,000 memories the map's answer was 4.4 MB of an object a star and a relation, made
    again at every look: now one list a field, relations as places, made once a generation."""
    from sage_mem.ui import overview

    made: list[int] = []
    original = overview.star_data

    def counted(*args: Any) -> Any:
        made.append(1)
        return original(*args)

    monkeypatch.setattr(overview, "star_data", counted)
    first = client.ok("GET", "/api/stars")
    assert client.ok("GET", "/api/stars") == first and made == [1]
    assert "stars" not in first and "edges" not in first  # (not the objects any more)
    assert len(first["links"]) % 2 == 0 and all(isinstance(n, int) for n in first["links"])
    write_memory(folder, "user_new_star", memory_file("A new 星星", "See [[user_profile]].",
                                                      category="user"))
    deadline = time.monotonic() + 20
    while "user_new_star" not in client.ok("GET", "/api/stars")["ids"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert {"from": "user_new_star", "to": "user_profile", "kind": "link"} in edges_of(
        client.ok("GET", "/api/stars"))


def test_the_star_map_sends_each_category_and_date_once(client: Client, folder: Path) -> None:
    """At 50,000 memories the texts of the categories and dates were 2.5 of the answer's
    5.7 MB: each is sent once, and each star says its place in the table."""
    for n in range(6):
        write_memory(folder, f"user_same_day_{n}", memory_file(
            f"Same day {n}", category="user", created="2026-02-03",
            updated="2026-02-04T10:00:00Z"))
    client.server.store.reconcile()
    data = client.ok("GET", "/api/stars")
    assert len(data["dates"]) == len(set(data["dates"]))
    assert len(data["category_names"]) == len(set(data["category_names"]))
    assert "2026-02-03" in data["dates"] and "user" in data["category_names"]
    assert all(isinstance(n, int) for column in ("categories", "created", "updated")
               for n in data[column])
    stars = {s["id"]: s for s in stars_of(data)}
    assert stars["user_same_day_5"]["created"] == "2026-02-03"
    assert stars["user_same_day_5"]["updated"] == "2026-02-04T10:00:00Z"
    assert stars["user_same_day_5"]["category"] == "user"
    assert len(stars) == len(client.server.store.list())


def test_the_star_map_has_a_star_for_every_memory(shared: Client) -> None:
    stars = stars_of(shared.ok("GET", "/api/stars"))
    assert len(stars) == 10
    auth = next(s for s in stars if s["id"] == "project/api/auth_flow")
    assert auth["category"] == "project" and auth["created"] == "2026-01-02"
    assert auth["length"] > 0 and auth["updated"].startswith("2026-01-03")


# writing


def test_creating_a_memory_writes_its_file(client: Client, folder: Path) -> None:
    data = client.ok("POST", "/api/memory", {
        "id": "feedback_short", "description": "Keep answers short", "category": "feedback",
        "tags": ["style"], "body": "**Why:** the user reads on a phone.", "create": True,
    })
    assert data["memory"]["id"] == "feedback_short"
    text = (folder / "feedback_short.md").read_text()
    assert "description: Keep answers short" in text and "**Why:**" in text
    found = client.ok("GET", "/api/memories?q=" + quote("answers short"))["results"]
    assert found[0]["id"] == "feedback_short"


def test_creating_over_an_existing_memory_is_a_conflict(client: Client, folder: Path) -> None:
    before = (folder / "user_profile.md").read_bytes()
    status, data, _ = client.post(
        "/api/memory", {"id": "user_profile", "description": "x", "create": True}
    )
    assert status == 409 and "exists already" in data["error"]
    assert (folder / "user_profile.md").read_bytes() == before


def test_saving_changes_only_the_fields_sent(client: Client, folder: Path) -> None:
    path = folder / "project/api/auth_flow.md"
    path.write_text(path.read_text().replace("---\n\n", "customKey: kept\n---\n\n", 1))
    memory = client.ok("GET", "/api/memory?id=project/api/auth_flow")["memory"]
    saved = client.ok("POST", "/api/memory", {
        "id": memory["id"], "expectedSha256": memory["sha256"], "tags": ["api", "auth"],
        "body": "See the auth service.\n\nTokens live 15 minutes.",
    })["memory"]
    text = path.read_text()
    assert "customKey: kept" in text and "Tokens live 15 minutes." in text
    assert saved["tags"] == ["api", "auth"] and saved["sha256"] != memory["sha256"]
    assert saved["description"] == memory["description"]


def test_saving_over_a_change_on_disk_is_a_conflict_with_both_versions(
    client: Client, folder: Path
) -> None:
    memory = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    path = folder / "user_profile.md"
    path.write_text(path.read_text() + "\nEdited in vim meanwhile.\n")
    status, data, _ = client.post("/api/memory", {
        "id": "user_profile", "expectedSha256": memory["sha256"], "body": "Mine.",
    })
    assert status == 409 and data["kind"] == "ConflictError"
    assert "changed on disk" in data["error"]
    assert "Edited in vim meanwhile." in data["current"]["body"]
    assert "Edited in vim meanwhile." in path.read_text()
    resolved = client.ok("POST", "/api/memory", {
        "id": "user_profile", "expectedSha256": data["current"]["sha256"], "body": "Mine.",
    })
    assert resolved["memory"]["body"].strip() == "Mine."


def test_a_conflict_with_a_removed_file_says_so(client: Client, folder: Path) -> None:
    memory = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    (folder / "user_profile.md").unlink()
    status, data, _ = client.post("/api/memory", {
        "id": "user_profile", "expectedSha256": memory["sha256"], "body": "Mine.",
    })
    assert status == 409 and data["current"] is None
    assert not (folder / "user_profile.md").exists()


def test_a_conflict_names_the_fields_of_the_write_that_differ_on_disk(
    client: Client, folder: Path
) -> None:
    memory = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    path = folder / "user_profile.md"
    path.write_text(path.read_text().replace("tags: [example]", "tags: [example, vim]"))
    status, data, _ = client.post("/api/memory", {
        "id": "user_profile", "expectedSha256": memory["sha256"],
        "tags": ["example"], "trust": 0.6, "summary": "Backend developer",
    })
    assert status == 409
    assert data["fields"] == ["summary", "tags"]  # trust is what the disk holds already
    assert data["actualSha256"] == data["current"]["sha256"] != memory["sha256"]


def editor_fields(memory: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A memory as the page's editor sends it: every field, with the person's changes."""
    keys = ("description", "category", "name", "summary", "project", "tags", "aliases",
            "supersedes", "trust", "baseline", "baselinePriority", "body")
    fields = {key: memory[key] if memory[key] is not None else "" for key in keys}
    fields["body"] = fields["body"].lstrip("\n")
    return {**fields, **changes}


def test_merging_takes_the_disks_changes_and_the_pages_without_a_choice(
    client: Client, folder: Path
) -> None:
    base = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    path = folder / "user_profile.md"
    path.write_text(path.read_text().replace("tags: [example]", "tags: [example, python]")
                    + "\nEdited in vim meanwhile.\n")
    on_disk = path.read_bytes()
    mine = editor_fields(base, description="A backend developer who likes short answers")
    data = client.ok("POST", "/api/merge", {"id": "user_profile", "base": base, "mine": mine})
    assert path.read_bytes() == on_disk  # a merge writes nothing
    assert data["conflicts"] == [] and data["body"]["clean"]
    assert data["fromMine"] == ["description"] and data["fromDisk"] == ["tags"]
    assert data["body"]["from"] == "disk"
    merged = data["merged"]
    assert merged["description"] == "A backend developer who likes short answers"
    assert merged["tags"] == ["example", "python"]
    assert merged["body"].endswith("Edited in vim meanwhile.")
    assert data["current"]["sha256"] == hashlib.sha256(on_disk).hexdigest()
    client.ok("POST", "/api/memory", {
        "id": "user_profile", "expectedSha256": data["current"]["sha256"],
        "description": merged["description"],
    })
    text = path.read_text()
    assert "description: A backend developer who likes short answers" in text
    assert "tags: [example, python]" in text and "Edited in vim meanwhile." in text


def test_merging_lists_true_conflicts_and_overlapping_body_edits(
    client: Client, folder: Path
) -> None:
    base = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    path = folder / "user_profile.md"
    path.write_text(path.read_text()
                    .replace("trust: 0.6", "trust: 0.9")
                    .replace("reads Go and TypeScript", "reads Rust"))
    mine = editor_fields(
        base, trust=0.2, tags=["example", "mine"],
        body=base["body"].lstrip("\n").replace("reads Go and TypeScript", "reads C"),
    )
    data = client.ok("POST", "/api/merge", {"id": "user_profile", "base": base, "mine": mine})
    assert data["conflicts"] == [{"field": "trust", "base": 0.6, "mine": 0.2, "disk": 0.9}]
    assert data["merged"]["tags"] == ["example", "mine"] and data["fromMine"] == ["tags"]
    assert not data["body"]["clean"] and data["merged"]["body"] is None
    clash = next(chunk for chunk in data["body"]["chunks"] if "disk" in chunk)
    assert "Works mostly in Python and reads C. Prefers short answers that" in clash["mine"]
    assert "Works mostly in Python and reads Rust. Prefers short answers that" in clash["disk"]
    assert any("(An example memory" in line
               for chunk in data["body"]["chunks"] for line in chunk.get("lines", []))


@pytest.mark.parametrize(("body", "status", "message"), [
    pytest.param({"id": "user_nobody", "base": {}, "mine": {}}, 404, "no memory",
                 id="a-memory-gone-from-disk"),
    pytest.param({"id": "user_profile", "mine": {}}, 400, "base must be", id="no-base"),
    pytest.param({"id": "user_profile", "base": {}, "mine": "x"}, 400, "mine must be",
                 id="mine-not-an-object"),
    pytest.param({"base": {}, "mine": {}}, 400, "id is required", id="no-id"),
])
def test_a_bad_merge_request_is_refused(
    shared: Client, body: dict[str, Any], status: int, message: str
) -> None:
    got, data, _ = shared.post("/api/merge", body)
    assert got == status and message in data["error"]


@pytest.mark.parametrize(("body", "message"), [
    ({"id": "user_profile", "body": "x"}, "expectedSha256"),
    ({"id": "user_profile", "expectedSha256": "0" * 64, "trust": 7}, "trust"),
    ({"id": "user_profile", "expectedSha256": "0" * 64, "colour": "red"}, "unknown field"),
    ({"description": "no id", "create": True}, "id is required"),
    ({"id": "../outside", "description": "x", "create": True}, "leave the memory folder"),
    ({"id": "user_x", "create": True}, "needs a description"),
    ([1, 2], "JSON object"),
])
def test_bad_writes_are_refused_with_the_reason(
    shared: Client, body: Any, message: str
) -> None:
    status, data, _ = shared.post("/api/memory", body)
    assert status == 400, data
    assert message in data["error"]


def test_a_body_that_is_not_json_is_refused(shared: Client) -> None:
    status, data, _ = shared.request(
        "POST", "/api/memory", raw=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert status == 400 and "not JSON" in data["error"]


@pytest.mark.parametrize("path", ["/api/memory", "/api/merge", "/api/archive", "/api/rename",
                                  "/api/dream/settings"])
def test_a_body_nested_too_deep_is_refused_in_one_line(
    shared: Client, path: str, capfd: pytest.CaptureFixture[str]
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    status, data, _ = shared.request(
        "POST", path, raw=deep, headers={"Content-Type": "application/json"}
    )
    assert status == 400 and "nested too deeply" in data["error"]
    assert "Traceback" not in capfd.readouterr().err


def test_raw_text_that_is_not_unicode_is_refused_in_one_line_and_writes_nothing(
    client: Client, folder: Path
) -> None:
    """JSON can spell a lone surrogate (`\\ud800`), which no UTF-8 file can hold: the raw
    editor's save says so as every other field does (`memory.value.not_text`), not a 500."""
    path = folder / "user_cat_zh.md"
    before = path.read_bytes()
    raw = client.ok("GET", "/api/raw?id=user_cat_zh")
    status, data, _ = client.post("/api/raw", {"id": "user_cat_zh", "text": "cat \ud800",
                                               "expectedSha256": raw["sha256"]})
    assert status == 400 and data["error"].startswith("text is not valid text: it holds U+D800")
    assert path.read_bytes() == before


def test_a_client_gone_before_its_body_arrived_leaves_no_traceback(client: Client) -> None:
    """A tab closed in the middle of a save: the body is cut short, nobody is left to answer.
    Nothing tells when the server is done with it, so its log is watched for half a second
    (uvicorn logs an application's exception on `uvicorn.error`, with its traceback)."""
    import logging

    crashes: list[logging.LogRecord] = []
    watcher = logging.Handler()
    watcher.emit = crashes.append  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(watcher)
    try:
        with socket.create_connection(("127.0.0.1", client.port), timeout=10) as sock:
            sock.sendall(
                f"POST /api/memory HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\n"
                f"X-Sage-Token: {client.server.token}\r\nContent-Type: application/json\r\n"
                "Content-Length: 100\r\n\r\n{\"id\": ".encode()
            )
            sock.shutdown(socket.SHUT_WR)
            sock.recv(1024)
        deadline = time.monotonic() + 0.5
        while not crashes and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        logger.removeHandler(watcher)
    assert not [record.getMessage() for record in crashes if record.exc_info]
    assert client.ok("GET", "/api/info")


def test_a_secret_is_refused_unless_allowed(client: Client, folder: Path) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6" * 8
    body = {"id": "reference_keys", "description": "Where keys are", "body": f"key: {key}",
            "create": True}
    status, data, _ = client.post("/api/memory", body)
    assert status == 400 and data["kind"] == "SecretRefused"
    assert not (folder / "reference_keys.md").exists()
    client.ok("POST", "/api/memory", {**body, "allowSecret": True})
    assert key in (folder / "reference_keys.md").read_text()


def test_a_locked_memory_cannot_be_changed_or_archived(client: Client, folder: Path) -> None:
    write_memory(folder, "user_locked", memory_file("Locked one", "x", locked=True))
    client.server.store.reconcile()
    memory = client.ok("GET", "/api/memory?id=user_locked")["memory"]
    status, _, _ = client.post(
        "/api/memory", {"id": "user_locked", "expectedSha256": memory["sha256"], "body": "y"}
    )
    assert status == 423
    status, _, _ = client.post("/api/archive", {"id": "user_locked", "reason": "old"})
    assert status == 423


# archive and restore


def test_archiving_moves_the_file_and_restoring_brings_it_back(
    client: Client, folder: Path
) -> None:
    original = (folder / "user_profile.md").read_text()
    archived = client.ok("POST", "/api/archive", {"id": "user_profile", "reason": "moved on"})
    assert archived["memory"]["id"] == "archive/user_profile"
    assert not (folder / "user_profile.md").exists()
    assert "archiveReason: moved on" in (folder / "archive/user_profile.md").read_text()
    rows = client.ok("GET", "/api/archived")["results"]
    assert [(r["id"], r["archiveReason"]) for r in rows] == [("archive/user_profile", "moved on")]
    assert "user_profile" not in {r["id"] for r in client.ok("GET", "/api/memories")["results"]}

    restored = client.ok("POST", "/api/restore", {"id": "archive/user_profile"})["memory"]
    assert restored["id"] == "user_profile" and not restored["archived"]
    text = (folder / "user_profile.md").read_text()
    assert "archiveReason" not in text and "archived:" not in text
    assert text.split("---")[2] == original.split("---")[2]
    assert client.ok("GET", "/api/archived")["results"] == []
    assert "user_profile" in {r["id"] for r in client.ok("GET", "/api/memories")["results"]}


@pytest.mark.parametrize("path, body", [
    pytest.param("/api/archive", {"reason": "moved on"}, id="archive"),
    pytest.param("/api/rename", {"newId": "user/profile"}, id="rename"),
])
def test_archive_and_rename_refuse_a_file_changed_since_the_page_showed_it(
    client: Client, folder: Path, path: str, body: dict[str, str]
) -> None:
    shown = client.ok("GET", "/api/memory?id=user_profile")["memory"]["sha256"]
    file = folder / "user_profile.md"
    file.write_text(file.read_text() + "\n用 vim 改过。\n")
    edited = file.read_bytes()
    status, data, _ = client.post(path, {"id": "user_profile", "expectedSha256": shown, **body})
    assert status == 409 and data["kind"] == "ConflictError", data
    assert "changed on disk since it was read" in data["error"]
    assert file.read_bytes() == edited
    assert not (folder / "archive").exists() and not (folder / "user/profile.md").exists()
    status, data, _ = client.post(path, {"id": "user_profile", "expectedSha256": 5, **body})
    assert status == 400 and "expectedSha256" in data["error"]
    assert file.read_bytes() == edited
    now = client.ok("GET", "/api/memory?id=user_profile")["memory"]["sha256"]
    client.ok("POST", path, {"id": "user_profile", "expectedSha256": now, **body})
    assert not file.exists()


def test_archiving_needs_a_reason(client: Client, folder: Path) -> None:
    status, data, _ = client.post("/api/archive", {"id": "user_profile", "reason": " "})
    assert status == 400 and "reason" in data["error"]
    status, _, _ = client.post("/api/archive", {"id": "user_profile"})
    assert status == 400
    assert (folder / "user_profile.md").exists()


def test_restoring_over_a_memory_of_the_same_id_is_refused(
    client: Client, folder: Path
) -> None:
    client.ok("POST", "/api/archive", {"id": "user_profile", "reason": "moved on"})
    write_memory(folder, "user_profile", memory_file("A new profile"))
    status, data, _ = client.post("/api/restore", {"id": "archive/user_profile"})
    assert status == 409 and "exists now" in data["error"]
    assert "A new profile" in (folder / "user_profile.md").read_text()
    assert (folder / "archive/user_profile.md").exists()


def test_restoring_a_memory_that_is_not_archived_is_404(shared: Client) -> None:
    status, data, _ = shared.post("/api/restore", {"id": "archive/user_nobody"})
    assert status == 404 and "no archived memory" in data["error"]


# store.restore itself


def test_restore_removes_the_archive_marks_and_updates_index_and_catalog(
    memory_dir: Path,
) -> None:
    store = MemoryStore(memory_dir)
    store.archive("user_profile", reason="moved on")
    assert "user_profile.md" not in (memory_dir / "MEMORY.md").read_text()
    restored = store.restore("archive/user_profile")
    assert restored.id == "user_profile" and not restored.archived
    assert "archived" not in restored.meta and "archiveReason" not in restored.meta
    assert restored.updated and restored.meta["updated"] == restored.updated
    assert store.search("profile")[0].id == "user_profile"
    assert "archive/user_profile" not in {m.id for m in store.list(archived=True)}
    assert "(user_profile.md)" in (memory_dir / "MEMORY.md").read_text()
    assert not (memory_dir / "archive/user_profile.md").exists()
    assert not [p for p in (memory_dir).rglob(".*.tmp")]


def test_restore_takes_the_id_with_or_without_the_archive_prefix(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir)
    store.archive("user_profile", reason="moved on")
    assert store.restore("user_profile").id == "user_profile"


def test_restore_keeps_keys_it_did_not_add_and_restores_nested_ids(empty_dir: Path) -> None:
    write_memory(empty_dir, "archive/project/api/old", memory_file(
        "Old API", "Body.", category="project", archived="2026-01-01T00:00:00Z",
        archiveReason="replaced", supersededBy="project/api/new", customKey="kept",
    ))
    store = MemoryStore(empty_dir)
    restored = store.restore("archive/project/api/old")
    assert restored.id == "project/api/old"
    text = (empty_dir / "project/api/old.md").read_text()
    assert "supersededBy" in text and "customKey" in text and "archiveReason" not in text


def test_restore_never_overwrites(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir)
    store.archive("user_profile", reason="moved on")
    write_memory(memory_dir, "user_profile", memory_file("Someone else"))
    store.reconcile()
    with pytest.raises(ConflictError):
        store.restore("archive/user_profile")
    assert "Someone else" in (memory_dir / "user_profile.md").read_text()
    assert (memory_dir / "archive/user_profile.md").exists()


@pytest.mark.parametrize("memory_id", ["user_profile", "项目/用户档案"])
def test_a_second_archived_copy_is_restored_under_its_own_id_never_over_another(
    empty_dir: Path, memory_id: str
) -> None:
    # archive/ID.md is taken by the first copy, so the second lands at archive/ID-2.md.
    store = MemoryStore(empty_dir)
    store.write(memory_id, description="First", category="user")
    store.archive(memory_id, reason="old")
    store.write(memory_id, description="Second", category="user")
    second = store.archive(memory_id, reason="old again")
    assert second.id == f"archive/{memory_id}-2"
    restored = store.restore(second.id)
    assert restored.id == memory_id and restored.description == "Second"
    assert not (empty_dir / f"{memory_id}-2.md").exists()
    assert "archivedFrom" not in (empty_dir / f"{memory_id}.md").read_text()
    with pytest.raises(ConflictError):  # the first copy: never over the one restored
        store.restore(f"archive/{memory_id}")
    assert (empty_dir / f"archive/{memory_id}.md").exists()
    assert "Second" in (empty_dir / f"{memory_id}.md").read_text()


def test_restore_of_a_missing_archived_memory_is_not_found(memory_dir: Path) -> None:
    with pytest.raises(MemoryNotFound):
        MemoryStore(memory_dir).restore("archive/user_nobody")


def test_restore_moves_a_locked_file_as_it_is(empty_dir: Path) -> None:
    text = memory_file("Locked", "x", archived="2026-01-01", archiveReason="by hand", locked=True)
    write_memory(empty_dir, "archive/user_locked", text)
    MemoryStore(empty_dir).restore("archive/user_locked")
    assert (empty_dir / "user_locked.md").read_text() == text


def test_store_listeners_hear_writes_and_can_be_removed(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir)
    heard: list[int] = []
    remove = store.add_listener(lambda: heard.append(1))
    store.write("user_profile", summary="Profile")
    store.archive("user_profile", reason="old")
    store.restore("archive/user_profile")
    assert len(heard) >= 3
    remove()
    store.write("user_profile", summary="Profile again")
    count = len(heard)
    store.write("user_profile", summary="And again")
    assert len(heard) == count


def test_a_failing_listener_does_not_break_a_write(memory_dir: Path) -> None:
    store = MemoryStore(memory_dir)

    def broken() -> None:
        raise RuntimeError("listener bug")

    store.add_listener(broken)
    assert store.write("user_profile", summary="Still saved").summary == "Still saved"


# audit


def test_audit_findings_link_to_memory_ids(client: Client, folder: Path) -> None:
    crlf = b"---\r\ndescription: crlf\r\ncategory: user\r\n---\r\n\r\nx\r\n"
    (folder / "user_crlf.md").write_bytes(crlf)
    write_memory(folder, "feedback_misfiled", memory_file("Misfiled", category="user"))
    client.server.store.reconcile()
    data = client.ok("GET", "/api/audit")
    by_path = {f["path"]: f for f in data["findings"]}
    assert by_path["user_crlf.md"]["id"] == "user_crlf"
    assert by_path["feedback_misfiled.md"]["id"] == "feedback_misfiled"
    assert data["count"] == len(data["findings"]) and data["checked"] >= 12


def test_the_audit_answers_for_a_file_name_that_is_not_utf8(client: Client, folder: Path) -> None:
    """A name whose bytes are not UTF-8 reached the JSON answer as a lone surrogate, which
    starlette could not encode: the Audit tab got a 500 and a traceback in the log."""
    with open(os.fsencode(folder) + b"/user_caf\xe9.md", "wb") as handle:
        handle.write(memory_file("Cafe", category="user").encode())
    client.server.store.reconcile()
    data = client.ok("GET", "/api/audit")
    found = {(f["check"], f["path"]) for f in data["findings"]}
    assert ("unaddressable-name", "user_caf\udce9.md") in found, found
    assert client.ok("GET", "/api/memories")["all"] >= 1


# dream runs


@pytest.fixture
def dreamy(folder: Path) -> Path:
    write_memory(folder, "user_old_editor", memory_file("Old editor: vim", "vim", category="user"))
    write_memory(folder, "user_new_editor", memory_file(
        "New editor: helix", "helix", category="user", supersedes=["user_old_editor"]))
    write_memory(folder, "project_deploy", memory_file(
        f"Deploy day {SCRIPT}", "Yesterday we moved the deploy to Fridays.",
        category="project", created="2026-01-10", updated="2026-01-10T09:00:00Z"))
    return folder


def test_a_dream_run_shows_its_report_and_each_change_as_a_diff(
    dreamy: Path, client: Client
) -> None:
    client.server.store.reconcile()
    result = client.ok("POST", "/api/dream", {"mode": "rewrite"})
    assert result["status"] == "finished" and result["changes"] >= 2
    runs = client.ok("GET", "/api/runs")["runs"]
    assert runs[0]["runId"] == result["runId"] and runs[0]["mode"] == "rewrite"
    detail = client.ok("GET", f"/api/runs/{result['runId']}")
    assert detail["report"].startswith(f"# Autodream run {result['runId']}")
    assert detail["rollback"] == {"possible": True, "why": None}
    changes = {c["file"]: c for c in detail["run"]["changes"]}
    dates = changes["project_deploy.md"]["diff"]
    assert ["-", "Yesterday we moved the deploy to Fridays."] in dates
    # The date the rule wrote in (its wording is the rule's: only the date is pinned here).
    assert any(kind == "+" and "2026-01-09" in text and "Fridays" in text for kind, text in dates)
    archived = changes["user_old_editor.md"]
    assert archived["operation"] == "archive"
    assert any(kind == "+" and text.startswith("archiveReason:") for kind, text in archived["diff"])


def test_a_rollback_previews_then_puts_the_files_back(dreamy: Path, client: Client) -> None:
    before = (dreamy / "project_deploy.md").read_bytes()
    client.server.store.reconcile()
    run_id = client.ok("POST", "/api/dream", {"mode": "rewrite"})["runId"]
    assert (dreamy / "project_deploy.md").read_bytes() != before
    plan = client.ok("POST", f"/api/runs/{run_id}/rollback", {"scope": "touched", "dryRun": True})
    assert plan["dryRun"] and plan["restored"] >= 1
    assert (dreamy / "project_deploy.md").read_bytes() != before
    done = client.ok("POST", f"/api/runs/{run_id}/rollback", {"scope": "touched"})
    assert not done["dryRun"] and done["rollbackId"]
    assert (dreamy / "project_deploy.md").read_bytes() == before
    assert (dreamy / "user_old_editor.md").exists()
    detail = client.ok("GET", f"/api/runs/{run_id}")
    assert detail["run"]["status"] == "rolled-back"
    assert detail["rollback"]["possible"] is False
    assert done["rollbackId"] in detail["rollback"]["why"]
    undo = client.ok("GET", f"/api/runs/{done['rollbackId']}")
    assert undo["run"]["kind"] == "rollback" and undo["rollback"]["possible"]
    status, data, _ = client.post(f"/api/runs/{run_id}/rollback", {"scope": "touched"})
    assert status == 400 and "rolled back already" in data["error"]


def test_a_report_run_changes_nothing_and_offers_no_rollback(dreamy: Path, client: Client) -> None:
    client.server.store.reconcile()
    before = (dreamy / "project_deploy.md").read_bytes()
    run_id = client.ok("POST", "/api/dream", {"mode": "report"})["runId"]
    assert (dreamy / "project_deploy.md").read_bytes() == before
    detail = client.ok("GET", f"/api/runs/{run_id}")
    assert detail["rollback"]["possible"] is False and "report run" in detail["rollback"]["why"]
    assert all(c["diff"] is None and "proposed" in c["diffNote"] for c in detail["run"]["changes"])


@pytest.mark.parametrize(("body", "message"), [
    ({"mode": "sideways"}, "mode"),
])
def test_a_bad_dream_request_is_refused(shared: Client, body: dict[str, str], message: str) -> None:
    status, data, _ = shared.post("/api/dream", body)
    assert status == 400 and message in data["error"]


def test_a_bad_rollback_scope_is_refused(shared: Client) -> None:
    status, data, _ = shared.post("/api/runs/20260101T000000Z-0001/rollback", {"scope": "some"})
    assert status == 400 and "scope" in data["error"]


# live events


class EventStream:
    """A server-sent event stream read line by line, as EventSource reads it."""

    def __init__(self, client: Client, token: str | None) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", client.port, timeout=10)
        path = "/api/events" + (f"?token={token}" if token else "")
        self.conn.request("GET", path, headers={"Host": f"127.0.0.1:{client.port}"})
        self.response = self.conn.getresponse()

    def next_event(self) -> tuple[str, dict[str, Any]]:
        name, data = "message", {}
        while True:
            line = self.response.fp.readline().decode()
            if not line:
                raise EOFError("stream ended")
            line = line.rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "" and name != "message":
                return name, data

    def wait_for(self, wanted: str) -> dict[str, Any]:
        while True:
            name, data = self.next_event()
            if name == wanted:
                return data

    def close(self) -> None:
        self.conn.close()


def test_an_edit_on_disk_reaches_the_event_stream(client: Client, folder: Path) -> None:
    stream = EventStream(client, client.server.token)
    try:
        assert stream.response.status == 200
        assert stream.response.getheader("content-type").startswith("text/event-stream")
        assert stream.next_event()[0] == "hello"
        write_memory(folder, "user_from_vim", memory_file("Written in an editor"))
        assert stream.wait_for("memories")["generation"] >= 1
        assert client.ok("GET", "/api/memory?id=user_from_vim")["memory"]["description"] == (
            "Written in an editor"
        )
    finally:
        stream.close()


def test_a_write_through_the_page_reaches_other_open_pages(client: Client) -> None:
    stream = EventStream(client, client.server.token)
    try:
        stream.next_event()
        client.ok("POST", "/api/archive", {"id": "user_profile", "reason": "old"})
        stream.wait_for("memories")
    finally:
        stream.close()


def test_a_new_dream_run_reaches_the_event_stream(dreamy: Path, client: Client) -> None:
    from sage_mem.dream import run_dream

    stream = EventStream(client, client.server.token)
    try:
        stream.next_event()
        with MemoryStore(dreamy) as other_process:
            run_dream(other_process, mode="report")
        stream.wait_for("runs")
    finally:
        stream.close()


def test_the_event_stream_needs_the_token(shared: Client) -> None:
    stream = EventStream(shared, None)
    try:
        assert stream.response.status == 401
    finally:
        stream.close()
    stream = EventStream(shared, "wrong")
    try:
        assert stream.response.status == 401
    finally:
        stream.close()


def test_stopping_the_server_ends_open_event_streams(store: MemoryStore) -> None:
    server = UiServer(store, port=0).start()
    stream = EventStream(Client(server), server.token)
    stream.next_event()
    server.stop()
    with pytest.raises((EOFError, OSError, http.client.HTTPException)):
        while True:
            stream.next_event()
    stream.close()


# the command and the package


def test_the_ui_command_prints_a_tokened_url_and_stops_on_ctrl_c(memory_dir: Path) -> None:
    command = [sys.executable, "-m", "sage_mem", "--dir", str(memory_dir), "ui", "--port", "0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            match = None
            while match is None:
                line = process.stdout.readline()
                assert line, process.stderr.read()
                match = re.search(r"http://127\.0\.0\.1:(\d+)/#token=([\w-]+)", line)
            port, token = int(match.group(1)), match.group(2)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/api/info", headers={"X-Sage-Token": token})
            response = conn.getresponse()
            assert response.status == 200 and json.loads(response.read())["memories"] == 8
            conn.close()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=20) == 0
            assert "stopped" in process.stdout.read()
        finally:
            if process.poll() is None:
                process.kill()


def test_the_ui_command_refuses_a_busy_port(memory_dir: Path) -> None:
    from sage_mem.cli import main

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        err = io.StringIO()
        code = main(["--dir", str(memory_dir), "ui", "--port", str(busy.getsockname()[1])],
                    out=io.StringIO(), err=err)
        assert code == 1 and "in use" in err.getvalue()
    finally:
        busy.close()


def test_the_ui_command_refuses_a_port_out_of_range(memory_dir: Path) -> None:
    from sage_mem.cli import main

    err = io.StringIO()
    arguments = ["--dir", str(memory_dir), "ui", "--port", "70000"]
    assert main(arguments, out=io.StringIO(), err=err) == 1
    assert "--port" in err.getvalue()


def test_the_page_and_its_assets_ship_inside_the_package() -> None:
    static = resources.files("sage_mem.ui") / "static"
    for name in ("index.html", "app.js", "app.css", "starmap.js", "markdown.js", "favicon.svg"):
        assert (static / name).is_file(), name


# issue 18: paging, links, the raw editor, the incremental audit


def test_a_search_gives_its_true_total_and_every_page_of_it(client: Client, folder: Path) -> None:
    for n in range(230):
        write_memory(folder, f"project/bulk/n{n:03d}", memory_file(
            f"Bulk note {n} about tokens 令牌", "x", category="project"))
    client.server.store.reconcile()
    feed = client.server.feed

    def settled() -> bool:  # the watcher may still be telling of what reconcile also saw
        before = feed.generations["memories"]
        time.sleep(0.3)
        return feed.generations["memories"] == before

    wait_until(settled)
    typing = client.ok("GET", "/api/memories?q=" + quote("tokens 令牌") + "&limit=100&count=0")
    assert typing["total"] is None and typing["more"] and len(typing["results"]) == 100
    first = client.ok("GET", "/api/memories?q=" + quote("tokens 令牌") + "&limit=100")
    assert first["total"] >= 231 and len(first["results"]) == 100 and first["more"]
    assert [r["id"] for r in typing["results"]] == [r["id"] for r in first["results"]]
    known = client.ok("GET", "/api/memories?q=" + quote("tokens 令牌") + "&limit=100&count=0")
    assert known["total"] == first["total"]  # counted once: known from then on
    seen = [r["id"] for r in first["results"]]
    offset = 100
    while True:
        page = client.ok("GET", f"/api/memories?q={quote('tokens 令牌')}&limit=100&offset={offset}")
        seen += [r["id"] for r in page["results"]]
        offset += 100
        if not page["more"]:
            break
    assert len(seen) == len(set(seen)) == first["total"]
    listed = client.ok("GET", "/api/memories?limit=50&offset=200")
    assert listed["total"] == listed["all"] == 240 and len(listed["results"]) == 40
    assert not listed["more"]


def test_a_memory_says_where_its_links_go_and_who_links_to_it(client: Client, folder: Path) -> None:
    write_memory(folder, "user_links", memory_file(
        "Links", "[[user_profile]] [[nobody]] [cat](user_cat_zh.md) `[[in_code]]`",
        category="user", supersedes=["user_evil"]))
    client.server.store.reconcile()
    memory = client.ok("GET", "/api/memory?id=user_links")["memory"]
    reach = {(link["kind"], link["written"]): link["id"] for link in memory["links"]}
    assert reach == {("wiki", "user_profile"): "user_profile", ("wiki", "nobody"): None,
                     ("markdown", "user_cat_zh.md"): "user_cat_zh"}
    profile = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    assert {"id": "user_links", "kind": "link", "description": "Links"} in profile["backlinks"]
    evil = client.ok("GET", "/api/memory?id=user_evil")["memory"]
    assert [b["kind"] for b in evil["backlinks"]] == ["supersedes"]
    edges = edges_of(client.ok("GET", "/api/stars"))
    assert {"from": "user_links", "to": "user_profile", "kind": "link"} in edges
    assert {"from": "user_links", "to": "user_evil", "kind": "supersedes"} in edges
    assert not any(e["to"] == "nobody" for e in edges)
    info = client.ok("GET", "/api/info")
    assert info["bytes"] == sum(p.stat().st_size for p in folder.rglob("*.md")
                                if p.name != "MEMORY.md" and ".sage-mem" not in p.parts
                                and "autodream" not in p.parts)


def test_the_raw_editor_writes_exactly_the_text_and_checks_what_it_replaces(
    client: Client, folder: Path
) -> None:
    broken = b"---\ndescription: a: b\n---\n\nbody\n"
    path = write_memory(folder, "user_broken", broken)
    client.server.store.reconcile()
    status, data, _ = client.get("/api/memory?id=user_broken")
    assert status == 400 and data["raw"] is True and data["id"] == "user_broken"
    raw = client.ok("GET", "/api/raw?id=user_broken")
    assert raw["text"] == broken.decode() and raw["problem"]["line"] == 2
    assert raw["sha256"] == hashlib.sha256(broken).hexdigest()
    status, data, _ = client.post("/api/raw", {"id": "user_broken", "text": "---\nx: [\n---\n",
                                               "expectedSha256": raw["sha256"]})
    assert status == 400 and "not written" in data["error"] and path.read_bytes() == broken
    status, data, _ = client.post("/api/raw", {"id": "user_broken", "text": "---\nx: 1\n---\n",
                                               "expectedSha256": "0" * 64})
    assert status == 409 and path.read_bytes() == broken
    fixed = "---\ndescription: 'a: b'\n---\n\nbody\n"
    saved = client.ok("POST", "/api/raw", {"id": "user_broken", "text": fixed,
                                           "expectedSha256": raw["sha256"]})
    assert saved["memory"]["description"] == "a: b" and path.read_bytes() == fixed.encode()
    write_memory(folder, "user_locked", memory_file("Locked", "x", locked=True))
    locked = client.ok("GET", "/api/raw?id=user_locked")
    status, data, _ = client.post("/api/raw", {
        "id": "user_locked", "text": "---\ndescription: y\n---\n",
        "expectedSha256": locked["sha256"]})
    assert status == 423 and "locked: true" in (folder / "user_locked.md").read_text()


def test_the_audit_rereads_only_the_files_that_changed(
    client: Client, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.checks import audit as audit_module

    read: list[str] = []
    original = audit_module._Audit.check_file

    def counted(self: Any, path: Path, *, archived: bool) -> None:
        read.append(path.name)
        original(self, path, archived=archived)

    monkeypatch.setattr(audit_module._Audit, "check_file", counted)
    first = client.ok("GET", "/api/audit")
    assert len(read) == first["checked"] == 10
    read.clear()
    again = client.ok("GET", "/api/audit?fresh=1")
    assert read == [] and again["findings"] == first["findings"]
    write_memory(folder, "feedback_misfiled", memory_file("Misfiled", category="user"))
    (folder / "user_profile.md").write_text((folder / "user_profile.md").read_text() + "\nmore\n")
    changed = client.ok("GET", "/api/audit?fresh=1")
    assert sorted(read) == ["feedback_misfiled.md", "user_profile.md"]
    assert any(f["path"] == "feedback_misfiled.md" for f in changed["findings"])
    (folder / "feedback_misfiled.md").unlink()
    assert client.ok("GET", "/api/audit?fresh=1")["findings"] == first["findings"]


# the dream's settings (issue 18, item 1)


def test_the_dream_settings_are_every_field_of_dream_config(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses
    from typing import Literal

    from sage_mem.dream import config as dream_config

    data = client.ok("GET", "/api/dream/settings")
    keys = [f["key"] for f in data["fields"]]
    assert keys == [dream_config.key_of(f) for f in dataclasses.fields(dream_config.DreamConfig)]
    kinds = {f["key"]: f["kind"] for f in data["fields"]}
    assert kinds["autoFromHook"] == "bool" and kinds["minSessions"] == "int"
    assert kinds["minHours"] == "number" and kinds["agentCommand"] == "command"
    assert data["exists"] is False and data["sha256"] == ""
    assert data["command"]["configured"] is False
    # A setting added to DreamConfig shows up with no second list (a Literal is a choice).
    extended = dataclasses.make_dataclass(
        "DreamConfig", [("report_language", Literal["en", "zh"], "en")],
        bases=(dream_config.DreamConfig,), frozen=True)
    monkeypatch.setattr(dream_config, "DreamConfig", extended)
    added = client.ok("GET", "/api/dream/settings")["fields"][-1]
    assert added["key"] == "reportLanguage" and added["kind"] == "choice"
    assert added["choices"] == ["en", "zh"] and added["value"] == "en"


def test_saving_dream_settings_writes_only_what_changed_and_checks_it(
    client: Client, folder: Path
) -> None:
    from sage_mem.dream.paths import DreamPaths

    path = DreamPaths(client.server.store.folder).config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"keepSnapshots": 4, "minHours": 12}\n')
    shown = client.ok("GET", "/api/dream/settings")
    status, data, _ = client.post("/api/dream/settings", {
        "values": {"keepSnapshots": 0}, "expectedSha256": shown["sha256"]})
    assert status == 400 and "keepSnapshots" in data["error"]
    assert path.read_text() == '{"keepSnapshots": 4, "minHours": 12}\n'
    saved = client.ok("POST", "/api/dream/settings", {
        "values": {"minHours": 6, "minSessions": 5, "agentCommand": ["no-such-agent-x", "-p"]},
        "expectedSha256": shown["sha256"]})
    written = json.loads(path.read_text())
    # minSessions 5 is the default and was not in the file: not written out.
    assert list(written) == ["keepSnapshots", "minHours", "agentCommand"]
    assert written["minHours"] == 6 and written["agentCommand"] == ["no-such-agent-x", "-p"]
    assert saved["command"]["problem"] and "no-such-agent-x" in saved["command"]["problem"]
    path.write_text(path.read_text().replace("6", "7"))  # an edit by hand meanwhile
    status, data, _ = client.post("/api/dream/settings", {
        "values": {"minHours": 1}, "expectedSha256": saved["sha256"]})
    assert status == 409 and json.loads(path.read_text())["minHours"] == 7


def test_a_dream_with_a_missing_agent_command_is_refused_before_it_runs(
    client: Client, folder: Path
) -> None:
    from sage_mem.dream import list_runs
    from sage_mem.dream.paths import DreamPaths

    path = DreamPaths(client.server.store.folder).config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"agentCommand": ["no-such-agent-x"]}\n')
    status, data, _ = client.post("/api/dream", {"mode": "report"})
    assert status == 400 and data["error"].startswith("not started: the agent command")
    assert list_runs(client.server.store) == []
    result = client.ok("POST", "/api/dream", {"mode": "report", "rulesOnly": True})
    assert result["runId"] and len(list_runs(client.server.store)) == 1


def test_only_an_archived_memory_can_be_deleted_and_only_the_version_shown(
    client: Client, folder: Path
) -> None:
    live = client.ok("GET", "/api/memory?id=user_profile")["memory"]
    status, data, _ = client.post("/api/delete", {"id": "user_profile",
                                                  "expectedSha256": live["sha256"]})
    assert status == 400 and "archive it first" in data["error"]
    assert (folder / "user_profile.md").exists()
    client.ok("POST", "/api/archive", {"id": "user_profile", "reason": "old"})
    row = client.ok("GET", "/api/archived")["results"][0]
    status, data, _ = client.post("/api/delete", {"id": row["id"], "expectedSha256": "0" * 64})
    assert status == 409 and (folder / "archive/user_profile.md").exists()
    status, data, _ = client.post("/api/delete", {"id": row["id"]})
    assert status == 400 and (folder / "archive/user_profile.md").exists()
    client.ok("POST", "/api/delete", {"id": row["id"], "expectedSha256": row["sha256"]})
    assert not (folder / "archive/user_profile.md").exists()


def fake_agent(bin_dir: Path, name: str) -> Path:
    """An executable named like an agent CLI, for what the page finds on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    program = bin_dir / name
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def test_the_agents_found_on_path_are_offered_for_the_agent_command(
    tmp_path: Path, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_real_dream_agents import documented_command

    from sage_mem.ui.settings import settings_data

    bin_dir = tmp_path / "bin"
    claude = fake_agent(bin_dir, "claude")
    monkeypatch.setenv("PATH", str(bin_dir))
    with MemoryStore(memory_dir) as store:
        offered = settings_data(store)["agents"]
        assert [(a["name"], a["found"]) for a in offered] == [("claude", str(claude))]
        assert offered[0]["argv"][:3] == ["claude", "-p", "{prompt}"]
        codex = fake_agent(bin_dir, "codex")
        offered = settings_data(store)["agents"]
        assert [(a["name"], a["found"]) for a in offered] == [
            ("claude", str(claude)), ("codex", str(codex))]
        # Each with the command line docs/dream.md gives for it (run for real elsewhere).
        for agent in offered:
            assert agent["argv"] == documented_command(agent["name"])


def test_the_link_graph_is_ready_before_the_first_memory_page_and_after_a_change(
    store: MemoryStore, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sage_mem.ui import links

    built: list[int] = []
    resolvers: list[int] = []
    original_build, original_init = links.build_graph, links.Resolver.__init__
    original_update = links.updated_graph

    def counted_build(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return original_build(*args, **kwargs)

    def counted_update(*args: Any, **kwargs: Any) -> Any:  # after a change: made or updated
        built.append(1)
        return original_update(*args, **kwargs)

    def counted_init(self: Any, *args: Any, **kwargs: Any) -> None:
        resolvers.append(1)
        original_init(self, *args, **kwargs)

    def settled() -> bool:
        seen = len(built)
        time.sleep(0.3)
        return bool(built) and len(built) == seen

    monkeypatch.setattr(links, "build_graph", counted_build)
    monkeypatch.setattr(links, "updated_graph", counted_update)
    monkeypatch.setattr(links.Resolver, "__init__", counted_init)
    with UiServer(store, port=0).start() as running:
        client = Client(running)
        wait_until(settled)  # made ahead of any view, at start-up
        built.clear()
        resolvers.clear()
        page = client.ok("GET", "/api/memory?id=feedback_tests_first")["memory"]
        assert built == [] and resolvers == []  # the first memory page builds nothing
        assert [link["id"] for link in page["links"]] == ["reference_test_command"]
        write_memory(folder, "user_fan", memory_file("Fan", "See [[feedback_tests_first]].",
                                                     category="user"))
        wait_until(settled)  # the change is made ahead too, with no request
        built.clear()
        resolvers.clear()
        page = client.ok("GET", "/api/memory?id=feedback_tests_first")["memory"]
        assert built == [] and resolvers == []
        assert [b["id"] for b in page["backlinks"]] == ["user_fan"]


def test_a_run_page_gives_its_changes_a_page_at_a_time_and_by_kind(
    client: Client, store: MemoryStore, folder: Path
) -> None:
    from sage_mem.dream import run_dream

    for n in range(70):
        write_memory(folder, f"project_note_{n:02d}", memory_file(
            f"Note {n}", f"Yesterday we moved deploy {n} to Fridays.", category="project",
            created="2026-01-10", updated="2026-01-10T09:00:00Z"))
    write_memory(folder, "user_old_editor", memory_file("Old editor: vim", "vim", category="user"))
    write_memory(folder, "user_new_editor", memory_file(
        "New editor: helix", "helix", category="user", supersedes=["user_old_editor"]))
    store.reconcile()
    run = run_dream(store, mode="rewrite").run_id
    first = client.ok("GET", f"/api/runs/{run}")
    kinds = {k["kind"]: k["count"] for k in first["kinds"]}
    assert kinds["relative-dates"] == 70 and kinds["supersedes"] == 1
    assert first["changesAll"] == first["changesTotal"] == sum(kinds.values())
    assert len(first["run"]["changes"]) == 50 and all(c["diff"] for c in first["run"]["changes"])
    rest = client.ok("GET", f"/api/runs/{run}?offset=50")["run"]["changes"]
    assert len(rest) == first["changesAll"] - 50
    every = [c["file"] for c in first["run"]["changes"] + rest]
    assert len(set(every)) == len(every)
    only = client.ok("GET", f"/api/runs/{run}?kind=supersedes")
    assert only["changesTotal"] == 1 and only["changesAll"] == first["changesAll"]
    assert [c["file"] for c in only["run"]["changes"]] == ["user_old_editor.md"]
    assert only["run"]["changes"][0]["kind"] == "supersedes"
    assert next(k["title"] for k in only["kinds"] if k["kind"] == "supersedes") == (
        "Superseded memories archived")
    status, data, _ = client.request("GET", f"/api/runs/{run}?offset=x")
    assert status == 400


def test_the_list_comes_newest_oldest_or_by_id_first(client: Client, folder: Path) -> None:
    newest = [r["id"] for r in client.ok("GET", "/api/memories?limit=1000")["results"]]
    oldest = [r["id"] for r in client.ok("GET", "/api/memories?limit=1000&sort=oldest")["results"]]
    by_id = [r["id"] for r in client.ok("GET", "/api/memories?limit=1000&sort=id")["results"]]
    assert oldest == newest[::-1] and len(newest) == 10
    assert by_id == sorted(newest, key=str.casefold)
    page = client.ok("GET", "/api/memories?limit=3&offset=3&sort=oldest")
    assert [r["id"] for r in page["results"]] == oldest[3:6] and page["total"] == 10
    users = client.ok("GET", "/api/memories?category=user&sort=id")["results"]
    assert [r["id"] for r in users] == [i for i in by_id if i.startswith("user_")]
    status, data, _ = client.request("GET", "/api/memories?sort=sideways")
    assert status == 400 and "sort must be one of" in data["error"]
