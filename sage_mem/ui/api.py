"""The JSON endpoints for memories: list and search with facets, read, write, merge, archive,
restore (the audit's are in `audit.py`, the star map's and the footer's in `overview.py`).

Each endpoint is a thin shell around one store call, run in a worker thread
(the store takes file locks and reads files).

With several folders (`app.state.folders`, `sage_mem.folders`), the list, the
search and a memory's page read them all: a shared folder's memory has the id
`NAME:ID` and says its `folder` and `readOnly`. The page changes only the
personal folder: any write naming a shared folder's memory is refused in
`json_body`, the one door every write comes through. Ids travel in query strings and
JSON bodies, never in the path: an id holds `/` (`project/api/auth`), which
would make `/api/memories/<id>/archive` ambiguous. Errors become JSON by the
handler in `app.py`.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from ..errors import ConflictError, FolderError, InvalidMemory, MemoryNotFound
from ..folders import check_writable
from ..memory import fields as fields_spec
from ..memory.fields import BY_KEY
from ..memory.merge import MISSING, Clash, Version, differing_fields, merge_memory
from ..memory.value import CATEGORIES, Memory, age_note, moment_order, not_text
from ..store import MemoryStore
from .links import Graph, links_of_memory
from .listing import Difference, Listings, differ, many
from .responses import JSONResponse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..folders import Folders

PAGE_SIZE = 100  # rows per page of the list or a search; the page asks for more
SORTS = ("newest", "oldest", "id")  # the orders of the list (a search is best match first)
# The store's write() keywords, by the names the page sends: every field of the spec.
FIELDS = {field.key: field.name for field in fields_spec.FIELDS} | {"body": "body"}
_KIND = {field.key: field.kind for field in fields_spec.FIELDS}


def store_of(request: Request) -> MemoryStore:
    return request.app.state.store


async def json_body(request: Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ClientDisconnect:  # a tab closed mid-save: whatever is answered reaches no one
        raise InvalidMemory("the request body was cut short: the connection closed") from None
    except ValueError:
        raise InvalidMemory("the request body is not JSON") from None
    except RecursionError:  # `[[[…]]]` 100,000 deep: the parser's stack, not a server fault
        raise InvalidMemory("the request body is nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidMemory("the request body must be a JSON object")
    folders = getattr(request.app.state, "folders", None)
    if folders is not None:
        for key in ("id", "newId"):
            value = data.get(key)
            if isinstance(value, str):
                _refuse_shared(folders, value.strip())
    return data


def _refuse_shared(folders: Folders, memory_id: str) -> None:
    """A write from the page to a shared folder's memory: refused, one line."""
    name, _ = folders.split(memory_id)
    if name == folders.personal_name:
        return
    spec = folders.spec(name)
    check_writable(folders.specs, spec)
    raise FolderError(f"folder {name!r} is shared: this page changes only your own folder "
                      f"({folders.personal_name!r}); change it with "
                      f"`sage-mem --dir {spec.path} ui`", path=spec.path)


def _labelled_row(folders: Folders | None, row: dict[str, Any]) -> dict[str, Any]:
    """A row or a memory of the page, saying its folder (several folders only)."""
    if folders is not None:
        name, _ = folders.split(row["id"])
        row["folder"] = name
        row["readOnly"] = name != folders.personal_name
    return row


def _id_from(data: Mapping[str, Any], key: str = "id") -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidMemory(f"{key} is required")
    return value.strip()


def plain(value: Any) -> Any:
    """Frontmatter values as JSON: dates as ISO text, anything unknown as its text."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def summary_row(memory: Memory, *, score: float | None = None) -> dict[str, Any]:
    """What a list row shows: never the body."""
    row: dict[str, Any] = {
        "id": memory.id,
        "description": memory.description,
        "summary": memory.summary,
        "category": memory.category,
        "tags": list(memory.tags),
        "trust": memory.trust,
        "baseline": memory.baseline,
        "locked": memory.locked,
        "project": memory.project,
        "created": memory.created,
        "updated": memory.updated,
        "age": age_note(memory.updated),
    }
    if score is not None:
        row["score"] = round(score, 4)
    return row


def full_memory(memory: Memory) -> dict[str, Any]:
    data = memory.to_dict()
    data["age"] = age_note(memory.updated)
    data["meta"] = plain(dict(memory.meta))
    data["problems"] = list(memory.problems)
    return data


def facets(memories: list[Memory]) -> dict[str, list[dict[str, Any]]]:
    """Category and tag counts over the whole folder (not the current search)."""
    categories: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for memory in memories:
        _count(memory, categories, tags, 1)
    return _facets(categories, tags)


def _count(memory: Memory, categories: Counter[str], tags: Counter[str], step: int) -> None:
    """Count a memory into the facet counts (`step` 1), or out of them (-1)."""
    for counter, keys in ((categories, (memory.category,) if memory.category else ()),
                          (tags, {t.lower() for t in memory.tags})):
        for key in keys:
            counter[key] += step
            if counter[key] <= 0:
                del counter[key]


def _facets(categories: Counter[str], tags: Counter[str]) -> dict[str, list[dict[str, Any]]]:
    ordered = [c for c in CATEGORIES if c in categories] + sorted(
        c for c in categories if c not in CATEGORIES
    )
    return {
        "categories": [{"name": c, "count": categories[c]} for c in ordered],
        "tags": [
            {"name": t, "count": n}
            for t, n in sorted(tags.items(), key=lambda item: (-item[1], item[0]))
        ],
    }


def _newest_key(memory: Memory) -> tuple[float, str]:
    return (moment_order(memory.updated), memory.id)


class FolderSummary:
    """The whole folder newest first, and its facet counts: once per change, not per key, and
    after a change only the memories that changed are taken out and put back in.

    `generation` is the live feed's count of changes to the memories (every
    change to the index is counted), so a summary of the same generation is
    still true. The memories come from `listings`, shared with the other views.
    """

    def __init__(self, listings: Listings | None = None) -> None:
        self._listings = listings or Listings()
        self._lock = threading.Lock()
        self._cached: tuple[int, list[Memory], dict[str, Any]] | None = None
        self._orders: dict[str, list[Memory]] = {}
        self._orders_of: list[Memory] | None = None
        self._live: Mapping[str, Memory] = {}
        self._keys: list[tuple[float, str]] = []  # (updated moment, id) ascending: oldest first
        self._oldest: list[Memory] = []  # the memories in that order
        self._categories: Counter[str] = Counter()
        self._tags: Counter[str] = Counter()
        self.remade = 0  # how many times the whole folder was sorted and counted (tests)

    def ordered(self, newest: list[Memory], sort: str) -> list[Memory]:
        """The same memories in another order (`SORTS`), made once per summary."""
        if sort == "newest":
            return newest
        with self._lock:
            if self._orders_of is not newest:
                self._orders, self._orders_of = {}, newest
            found = self._orders.get(sort)
            if found is None:
                found = list(reversed(newest)) if sort == "oldest" else sorted(
                    newest, key=lambda m: (m.id.casefold(), m.id))
                self._orders[sort] = found
            return found

    def get(self, store: Any, generation: int) -> tuple[list[Memory], dict[str, Any]]:
        # Made under the lock: the list's request and the warming after a change want the same
        # generation at the same moment, and one of them waits for the other's instead of
        # making it twice (on two cores, the second making is what the list would wait for).
        with self._lock:
            if self._cached is not None and self._cached[0] == generation:
                return self._cached[1], self._cached[2]
            live = self._listings.get(store, generation).live
            difference = differ(self._live, live)
            if self._cached is None or many(difference, len(live)):
                self._remake(live)
            else:
                self._update(difference, live)
            self._live = live
            self._cached = (generation, self._oldest[::-1],
                            _facets(self._categories, self._tags))
            return self._cached[1], self._cached[2]

    def _remake(self, live: Mapping[str, Memory]) -> None:
        self.remade += 1
        self._oldest = sorted(live.values(), key=_newest_key)
        self._keys = [_newest_key(m) for m in self._oldest]
        self._categories, self._tags = Counter(), Counter()
        for memory in self._oldest:
            _count(memory, self._categories, self._tags, 1)

    def _update(self, difference: Difference, live: Mapping[str, Memory]) -> None:
        """Take out the old versions of what changed, put the new ones in their place."""
        for memory_id in (*difference.removed, *difference.changed):
            old = self._live[memory_id]
            at = bisect.bisect_left(self._keys, _newest_key(old))
            del self._keys[at], self._oldest[at]
            _count(old, self._categories, self._tags, -1)
        for memory_id in (*difference.added, *difference.changed):
            new = live[memory_id]
            key = _newest_key(new)
            at = bisect.bisect_left(self._keys, key)
            self._keys.insert(at, key)
            self._oldest.insert(at, new)
            _count(new, self._categories, self._tags, 1)


def list_memories(
    store: MemoryStore,
    query: str,
    categories: list[str],
    tags: list[str],
    limit: int,
    summary: tuple[list[Memory], dict[str, Any]] | None = None,
    *,
    offset: int = 0,
    ranked: RankedCache | None = None,
    generation: int = 0,
    count: bool = True,
    sort: str = "newest",
    folder_summary: FolderSummary | None = None,
) -> dict[str, Any]:
    """One page of the list (newest first) or of a search (best first), with the true total.

    To count a search's matches, every match is ranked, once per query,
    filters and generation (`ranked` keeps the last few), so the next page
    costs no second search. That takes a while in a big folder, so a page
    asked for with `count=False` while a person types ranks only what it
    shows, and answers `total: null` unless the count is known already; the
    page asks for the count once typing pauses.
    """
    newest, counts = summary or FolderSummary().get(store, 0)
    filters: dict[str, Any] = {"category": categories or None, "tags": tags or None}
    offset = max(0, offset)
    total: int | None
    if query.strip():
        key = (query, tuple(categories), tuple(tags), generation)
        found = ranked.get(key) if ranked is not None else None
        if found is None and not count:
            hits = store.search(query, limit=offset + limit + 1, **filters)
            found_page = [(hit.id, hit.score) for hit in hits]
            more = len(found_page) > offset + limit
            rows = _rows(store, found_page[offset:offset + limit])
            return {
                "query": query, "results": rows, "total": None, "all": len(newest),
                "offset": offset, "more": more, "facets": counts,
            }
        if found is None:
            hits = store.search(query, limit=max(1, len(newest)), **filters)
            found = [(hit.id, hit.score) for hit in hits]
            if ranked is not None:
                ranked.put(key, found)
        rows = _rows(store, found[offset:offset + limit])
        total = len(found)
    else:
        if sort not in SORTS:
            raise InvalidMemory(f"sort must be one of {', '.join(SORTS)}")
        chosen = (folder_summary or FolderSummary()).ordered(newest, sort)
        if categories or tags:
            wanted = {m.id for m in store.list(**filters)}
            chosen = [m for m in chosen if m.id in wanted]
        total = len(chosen)
        rows = [summary_row(m) for m in chosen[offset:offset + limit]]
    return {
        "query": query, "results": rows, "total": total, "all": len(newest),
        "offset": offset, "more": offset + len(rows) < total, "facets": counts,
    }


def _rows(store: Any, ranked: list[tuple[str, float]]) -> list[dict[str, Any]]:
    rows = []
    for memory_id, score in ranked:
        memory = store.get(memory_id) if hasattr(store, "stores") else store.index.get(memory_id)
        if memory is not None:
            rows.append(summary_row(memory, score=score))
    return rows


class RankedCache:
    """The last few searches' ranked ids, so that the next page of one costs no search."""

    SIZE = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[Any, ...], list[tuple[str, float]]] = {}

    def get(self, key: tuple[Any, ...]) -> list[tuple[str, float]] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: tuple[Any, ...], value: list[tuple[str, float]]) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = value
            while len(self._entries) > self.SIZE:
                self._entries.pop(next(iter(self._entries)))


def _number(params: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(int(params.get(key, default)), high))
    except ValueError:
        raise InvalidMemory(f"{key} must be a number") from None


async def memories(request: Request) -> JSONResponse:
    params = request.query_params
    limit = _number(params, "limit", PAGE_SIZE, 1, 1000)
    offset = _number(params, "offset", 0, 0, 10**9)
    state = request.app.state
    store: Any = state.folders or store_of(request)  # several folders: all of them

    def answered() -> JSONResponse:
        # Encoded here too: the background work (the audit, `MEMORY.md`, the graph) resumes
        # once the answer is ready to send, not before its JSON is made.
        with state.answering.answering():
            return JSONResponse(work())

    def work() -> dict[str, Any]:
        generation = state.feed.generations["memories"]
        summary = state.summary.get(store, generation)
        found = list_memories(
            store, params.get("q", ""), [c for c in params.getlist("category") if c],
            [t for t in params.getlist("tag") if t], limit, summary,
            offset=offset, ranked=state.ranked, generation=generation,
            count=params.get("count", "1") != "0", sort=params.get("sort", "newest"),
            folder_summary=state.summary,
        )
        for row in found["results"]:
            _labelled_row(state.folders, row)
        return found

    return await run_in_threadpool(answered)


def memory_page(store: MemoryStore, memory_id: str, graph: Graph) -> dict[str, Any]:
    """One memory in full, what its links reach, and the memories that link to it."""
    found = store.read(memory_id)
    data = full_memory(found)
    data["links"] = [link.to_dict() for link in links_of_memory(store, found, graph)]
    data["backlinks"] = [
        {"id": source, "kind": kind, "description": _description(store, source)}
        for source, kind in graph.backlinks.get(found.id, [])
    ]
    return {"memory": data}


def shared_memory_page(folders: Folders, memory_id: str) -> dict[str, Any]:
    """A shared folder's memory as the page shows it: read-only, its links within its folder
    (qualified), no backlinks (the link graph is the personal folder's)."""
    name, plain_id = folders.split(memory_id)
    page = memory_page(folders.store(name), plain_id, Graph())
    data = page["memory"]
    data["id"] = folders.qualify(name, data["id"])
    for link in data["links"]:
        if link.get("id"):
            link["id"] = folders.qualify(name, link["id"])
    _labelled_row(folders, data)
    return page


def _description(store: MemoryStore, memory_id: str) -> str:
    memory = store.index.get(memory_id)
    return memory.description if memory is not None else ""


def raw_file(store: MemoryStore, memory_id: str) -> dict[str, Any]:
    """A memory file's text as it is on disk, its sha256, and why it does not parse (if so).

    Read through the folder's one checked read; for the raw editor of a file
    `read` refuses (invalid YAML), and of any other unlocked memory file.
    """
    from ..disk.folder import read_memory
    from ..memory.file_format import memory_text, parse_bytes, sha256_bytes

    canonical = store.folder.normalize_id(memory_id)
    path = store.folder.path_for(canonical)
    try:
        seen = read_memory(store.folder, path)
    except FileNotFoundError:
        raise MemoryNotFound(f"no memory {canonical!r}", path=path) from None
    raw = seen.raw or b""
    text = memory_text(raw, path, canonical, "; fix it in a text editor")
    problem: dict[str, Any] | None = None
    locked = False
    try:
        parsed = parse_bytes(raw, path)
        locked = parsed.meta.get("locked") is True
    except InvalidMemory as exc:
        problem = {"message": _without_path(str(exc), path), "line": exc.line,
                   "column": exc.column}
    return {"id": canonical, "path": str(path), "text": text, "sha256": sha256_bytes(raw),
            "problem": problem, "locked": locked}


def _without_path(message: str, path: Path) -> str:
    for prefix in (str(path) + ":", path.name + ":"):
        if message.startswith(prefix):
            message = message[len(prefix):]
            while message[:1].isdigit() or message[:1] == ":":
                message = message.lstrip("0123456789").removeprefix(":")
            return message.strip()
    return message


async def raw(request: Request) -> JSONResponse:
    memory_id = _id_from(request.query_params)
    folders = request.app.state.folders
    if folders is not None and folders.split(memory_id)[0] != folders.personal_name:
        name, plain_id = folders.split(memory_id)
        data = await run_in_threadpool(raw_file, folders.store(name), plain_id)
        data["id"] = memory_id
        return JSONResponse(_labelled_row(folders, data))
    return JSONResponse(await run_in_threadpool(raw_file, store_of(request), memory_id))


def _expected_from(data: Mapping[str, Any]) -> str | None:
    """The sha256 of the version the page showed, or None when the request sent none.

    Archive and rename may go without it: they then act on the file as it is,
    like `sage-mem archive` without `--expected-sha256`; with it, a file
    changed since is refused (409, nothing moved). The page always sends it.
    """
    if data.get("expectedSha256") is None:
        return None
    return _required_expected(data, "be the sha256 the page showed")


def _required_expected(data: Mapping[str, Any], doing: str) -> str:
    """The sha256 of the version the page showed, which a request `doing` this must send."""
    expected = data.get("expectedSha256")
    if not isinstance(expected, str) or not expected:
        raise InvalidMemory(f"expectedSha256 is required to {doing}")
    return expected


async def save_raw(request: Request) -> JSONResponse:
    data = await json_body(request)
    memory_id = _id_from(data)
    text = data.get("text")
    if not isinstance(text, str):
        raise InvalidMemory("text is required")
    problem = not_text("text", text)  # `\ud800` in JSON: no UTF-8 file can hold it
    if problem:
        raise InvalidMemory(problem)
    expected = _required_expected(data, "change a file")
    store = store_of(request)
    saved = await run_in_threadpool(
        lambda: store.replace_file(memory_id, text.encode("utf-8"), expected_sha256=expected,
                                   allow_secret=data.get("allowSecret") is True)
    )
    return JSONResponse({"memory": full_memory(saved)})


async def memory(request: Request) -> JSONResponse:
    memory_id = _id_from(request.query_params)
    store = store_of(request)
    state = request.app.state
    folders = state.folders
    if folders is not None and folders.split(memory_id)[0] != folders.personal_name:
        return JSONResponse(await run_in_threadpool(shared_memory_page, folders, memory_id))

    def work() -> JSONResponse:
        with state.answering.answering():
            # Never behind the whole graph being made (a second or more at 20,000 memories,
            # ahead of time by `warm`): what it would say of this memory, made for it alone.
            graph = state.graph.of_one(store, state.feed.generations["memories"], memory_id)
            page = memory_page(store, memory_id, graph)
            _labelled_row(folders, page["memory"])
            # (Encoded here: the background work resumes once the answer is ready to send.)
            return JSONResponse(page)

    try:
        return await run_in_threadpool(work)
    except InvalidMemory as exc:
        # A file that does not parse can still be opened as text and fixed (`/api/raw`).
        path = exc.path
        if path is None or not path.is_file() or store.folder.id_for(path) is None:
            raise
        return JSONResponse({"error": str(exc), "kind": "InvalidMemory", "raw": True,
                             "id": store.folder.id_for(path)}, status_code=400)


def _write_arguments(data: Mapping[str, Any]) -> dict[str, Any]:
    """store.write()'s keywords from what the page sends: the spec's fields by frontmatter key."""
    unknown = sorted(set(data) - set(BY_KEY) - {"body", "id", "expectedSha256", "create",
                                                 "allowSecret"})
    if unknown:
        raise InvalidMemory(f"unknown field {unknown[0]!r}")
    arguments = {BY_KEY[key].name: data[key] for key in BY_KEY if key in data}
    if data.get("body") is not None:
        arguments["body"] = data["body"]
    return arguments


def save_memory(store: MemoryStore, data: Mapping[str, Any]) -> dict[str, Any]:
    memory_id = _id_from(data)
    arguments = _write_arguments(data)
    allow_secret = data.get("allowSecret") is True
    if data.get("create"):
        if store.folder.path_for(memory_id).exists():
            raise ConflictError(
                f"a memory {store.folder.normalize_id(memory_id)!r} exists already: "
                "choose another id, or edit that one",
                path=store.folder.path_for(memory_id),
            )
        saved = store.write(memory_id, expected_sha256="", allow_secret=allow_secret, **arguments)
    else:
        expected = _required_expected(data, "change a memory")
        saved = store.write(
            memory_id, expected_sha256=expected, allow_secret=allow_secret, **arguments
        )
    return {"memory": full_memory(saved)}


def _current(store: MemoryStore, memory_id: str) -> dict[str, Any] | None:
    try:
        return full_memory(store.read(memory_id))
    except (MemoryNotFound, InvalidMemory):
        return None


async def save(request: Request) -> JSONResponse:
    data = await json_body(request)
    store = store_of(request)
    try:
        result = await run_in_threadpool(save_memory, store, data)
    except ConflictError as exc:
        # The version on disk, so that the page can merge its edit with what changed meanwhile.
        current = await run_in_threadpool(_current, store, str(data.get("id", "")))
        fields = list(exc.fields)
        if not fields and current is not None:
            sent = {key: data[key] for key in FIELDS if key in data and data[key] is not None}
            fields = list(differing_fields(page_version(sent, only_given=True),
                                           page_version(current)))
        return JSONResponse({
            "error": str(exc), "kind": "ConflictError", "current": current, "fields": fields,
            "actualSha256": exc.actual_sha256 or (current or {}).get("sha256", ""),
        }, status_code=409)
    return JSONResponse(result)


# merging an edit with a change on disk

def page_version(data: Mapping[str, Any], *, only_given: bool = False) -> dict[str, Any]:
    """One version of a memory in the editor's terms: every field as its form shows it.

    The base the page kept, the page's edit and the disk all pass through
    here, so that a value written differently but shown the same (None and "",
    CRLF and LF, a body's blank first line) is never taken for a change.
    """
    out: dict[str, Any] = {}
    for key in FIELDS:
        if only_given and key not in data:
            continue
        value = data.get(key)
        kind = _KIND.get(key)
        if kind == fields_spec.TEXT:
            out[key] = " ".join(value.split()) if isinstance(value, str) else ""
        elif kind == fields_spec.TEXTS:
            items = value if isinstance(value, (list, tuple)) else []
            out[key] = [" ".join(v.split()) for v in items if isinstance(v, str) and v.strip()]
        elif kind == fields_spec.UNIT:
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            out[key] = float(value) if number and value is not None else None
        elif kind == fields_spec.BOOL:
            out[key] = value is True
        elif kind == fields_spec.INT:
            out[key] = value if isinstance(value, int) and not isinstance(value, bool) else 0
        elif key == "body":
            out[key] = value.replace("\r\n", "\n").strip("\n") if isinstance(value, str) else ""
    return out


def _side(value: Any) -> Any:
    return None if value is MISSING else plain(value)


def merge_with_disk(store: MemoryStore, data: Mapping[str, Any]) -> dict[str, Any]:
    """The page's edit (`mine`) merged with the disk, three-way from the `base` it opened.

    Answers with the version on disk (its sha256 is what the merged save must
    expect), the merged fields (`merged`; a conflicting field holds mine until
    the person chooses, a body with clashes is null), the conflicts, the body's
    chunks (merged lines, or a clash with base, mine and disk lines), and which
    fields were taken from which side. Nothing is written.
    """
    memory_id = _id_from(data)
    sides = []
    for key in ("base", "mine"):
        side = data.get(key)
        if not isinstance(side, Mapping):
            raise InvalidMemory(f"{key} must be an object of the memory's fields")
        sides.append(page_version(side))
    disk = full_memory(store.read(memory_id))
    base, mine = sides
    theirs = page_version(disk)

    def split(version: dict[str, Any]) -> Version:
        fields = dict(version)
        return Version(fields, fields.pop("body"))

    # `updated` is not the page's to merge: the store stamps it on the save. A trust the person
    # typed beside one moved on disk is theirs to choose (sync adds two machines' moves).
    result = merge_memory(split(base), split(mine), split(theirs), newest_keys=(),
                          moved_keys=())
    chunks: list[dict[str, Any]] = []
    for chunk in result.body.chunks:
        if isinstance(chunk, Clash):
            chunks.append({"base": list(chunk.base), "mine": list(chunk.ours),
                           "disk": list(chunk.theirs)})
        else:
            chunks.append({"lines": list(chunk)})
    changed_body = [base["body"] != side["body"] for side in (mine, theirs)]
    body_from = {(True, False): "mine", (False, True): "disk", (True, True): "both"}.get(
        (changed_body[0], changed_body[1])
    )
    return {
        "current": disk,
        "merged": {
            **{key: plain(value) for key, value in result.meta.items()},
            "body": result.body.text() if result.body.clean else None,
        },
        "conflicts": [
            {"field": c.key, "base": _side(c.base), "mine": _side(c.ours), "disk": _side(c.theirs)}
            for c in result.conflicts
        ],
        "body": {"clean": result.body.clean, "from": body_from, "chunks": chunks},
        "fromMine": list(result.fields.from_ours),
        "fromDisk": list(result.fields.from_theirs),
        "combined": list(result.fields.combined),
    }


async def merge(request: Request) -> JSONResponse:
    data = await json_body(request)
    return JSONResponse(await run_in_threadpool(merge_with_disk, store_of(request), data))




async def archive(request: Request) -> JSONResponse:
    """{id, reason, expectedSha256}: the memory moved to archive/, unless it changed meanwhile."""
    data = await json_body(request)
    reason = data.get("reason")
    if not isinstance(reason, str):
        raise InvalidMemory("archiving needs a reason")
    memory_id, expected = _id_from(data), _expected_from(data)
    store = store_of(request)
    archived = await run_in_threadpool(
        lambda: store.archive(memory_id, reason, expected_sha256=expected)
    )
    return JSONResponse({"memory": full_memory(archived)})


async def restore(request: Request) -> JSONResponse:
    data = await json_body(request)
    restored = await run_in_threadpool(store_of(request).restore, _id_from(data))
    return JSONResponse({"memory": full_memory(restored)})


async def rename(request: Request) -> JSONResponse:
    """{id, newId, expectedSha256}: the memory under a new id, unless it changed meanwhile;
    the links and supersedes that named it follow."""
    data = await json_body(request)
    new_id = _id_from(data, "newId")
    memory_id, expected = _id_from(data), _expected_from(data)
    store = store_of(request)
    renamed = await run_in_threadpool(
        lambda: store.rename(memory_id, new_id, expected_sha256=expected)
    )
    return JSONResponse(renamed.to_dict())


async def delete(request: Request) -> JSONResponse:
    """{id, expectedSha256}: an archived memory deleted for good, by a person, after confirming.

    Only here and in the CLI: no agent's tool and no dream run can delete. The
    store refuses a memory in service (archive it first) and a file that is no
    longer the one the page showed.
    """
    data = await json_body(request)
    memory_id = _id_from(data)
    expected = _required_expected(data, "delete a memory")
    store = store_of(request)
    gone = await run_in_threadpool(
        lambda: store.delete(memory_id, expected_sha256=expected)
    )
    return JSONResponse({"deleted": gone.id, "path": str(gone.path)})


def archived_rows(store: MemoryStore) -> dict[str, Any]:
    rows = []
    for memory in store.list(archived=True):
        if not memory.archived:
            continue
        row = summary_row(memory)
        row["archived"] = plain(memory.meta.get("archived"))
        row["archiveReason"] = plain(memory.meta.get("archiveReason"))
        row["supersededBy"] = plain(memory.meta.get("supersededBy"))
        row["sha256"] = memory.sha256
        rows.append(row)
    rows.sort(key=lambda r: (str(r["archived"] or ""), r["id"]), reverse=True)
    return {"results": rows, "total": len(rows)}


async def archived(request: Request) -> JSONResponse:
    return JSONResponse(await run_in_threadpool(archived_rows, store_of(request)))
