"""What each MCP tool and resource does, as plain functions over a MemoryStore.

Results are JSON-ready dicts, compact on purpose: an agent pays for every
character of a tool result. Keys that would be empty are left out, so a search
that finds nothing costs less than one that finds something.

Several folders at once (`sage_mem.folders`): `InFolders` routes a tool to
the folder its id names (`team:x`; a bare id: the personal folder) and refuses
a write to a read-only one; search, read and list answer across all of them,
each hit and memory saying its `folder`.

Must not import `mcp` (`mcp_server/server.py` does the MCP wiring); raises only
SageMemError subclasses, which the server turns into tool errors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..agents import context
from ..errors import ConflictError, InvalidMemory, MemoryNotFound, StoreLocked
from ..memory.value import Memory, age_note, parse_moment
from ..search.index import Hit
from ..search.query import NO_FILTERS, Filters
from ..search.tokens import is_unigram, tokenize
from ..store import MemoryStore
from .limits import LIST_LIMIT_MAX, SEARCH_LIMIT_MAX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..folders import Folders
    from ..memory.body_edits import BodyEdit

# Dice overlap of description terms. A new memory is refused unless forced
# when it says nothing an existing description does not (its terms are a
# subset) or nearly the same (DUPLICATE); at or above SIMILAR it is written
# and the look-alikes are reported. One differing term in a short description
# ("Shelf 1 holds volume 7" / "Shelf 7 holds volume 49") is a different fact,
# hence the high bar.
DUPLICATE_SIMILARITY = 0.9
SIMILAR_SIMILARITY = 0.4
FIND_SIMILAR_FLOOR = 0.15


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value not in (None, [], "")}


def hit_dict(hit: Hit, now: datetime | None = None) -> dict[str, Any]:
    """A search hit as the agent sees it: no body, no empty keys."""
    return _compact({
        "id": hit.id,
        "folder": hit.folder,
        # The person's description; a summary only beside it, never instead (DESIGN §7.3a).
        "description": hit.description,
        "summary": hit.summary,
        "category": hit.category,
        "trust": hit.trust,
        "score": hit.score,
        "updated": hit.updated,
        "age": age_note(hit.updated, now, today=False),
    })


def memory_dict(memory: Memory, *, body: bool = True) -> dict[str, Any]:
    """A memory in full (or without its body), without its absolute path or empty keys."""
    data = memory.to_dict(body=body)
    data.pop("path", None)
    data["age"] = age_note(memory.updated, today=False)
    keep = {"id", "description", "trust", "sha256"} | ({"body"} if body else set())
    return {key: value for key, value in data.items()
            if key in keep or value not in (None, [], "", False, 0)}


def _listing(memory: Memory, folder: str | None = None) -> dict[str, Any]:
    return _compact({
        "id": memory.id,
        "folder": folder,
        "description": memory.display,
        "category": memory.category,
        "updated": memory.updated,
    })


def _page(limit: int, maximum: int) -> int:
    return max(1, min(int(limit), maximum))


def _read_from(store: MemoryStore | Folders, folder: str | None) -> MemoryStore:
    """The store whose folder a search or listing must find there: `folder`'s, else the
    personal one (a shared folder left out or gone is said by the folders' own notes)."""
    if isinstance(store, MemoryStore):
        return store
    return store.store(folder or store.personal_name)


def search(
    store: MemoryStore | Folders,
    query: str,
    *,
    limit: int = 5,
    offset: int = 0,
    filters: Filters = NO_FILTERS,
    folder: str | None = None,
    now: str | None = None,
) -> dict[str, Any]:
    """Ranked compact hits; `next_offset` only when there are more. `folder`: only that one
    (`store` being a `Folders`). `now`: the date the question is asked (ISO), against which
    its time words ("last week", 上个月) are read; default the current time.
    `filters`: as the tool's arguments name them (`server.memory_search`)."""
    if not query.strip():
        raise InvalidMemory("query is empty")
    _read_from(store, folder).check_present()
    limit = _page(limit, SEARCH_LIMIT_MAX)
    offset = max(0, int(offset))
    chosen: dict[str, Any] = {"folder": folder} if folder else {}
    if now is not None and now.strip():
        asked = parse_moment(now.strip())
        if asked is None:
            raise InvalidMemory(f"now is not an ISO date: {now!r}")
        chosen["now"] = asked
    hits = store.search(query, limit=limit + 1, offset=offset, **filters._asdict(), refine=True,
                        **chosen)
    # Age notes ("updated 47 days ago") are from the real now, as the model reads them today.
    shown = datetime.now(UTC)
    result: dict[str, Any] = {"hits": [hit_dict(hit, shown) for hit in hits[:limit]]}
    if len(hits) > limit:
        result["next_offset"] = offset + limit
    return result


def read(store: MemoryStore, memory_id: str) -> dict[str, Any]:
    """One memory in full, with the sha256 to pass back as `expected_sha256`."""
    memory = store.read(memory_id)
    try:
        store.note_used([memory.id])
    except StoreLocked:
        pass  # a count another process holds up is not worth failing the read for
    return memory_dict(memory)


def _terms(text: str) -> set[str]:
    # CJK single characters are noise next to bigrams, unless they are all there is.
    terms = set(tokenize(text))
    return {t for t in terms if not is_unigram(t)} or terms


def similarity(a: str, b: str) -> float:
    """Dice overlap of the index terms of two texts, 0..1."""
    left, right = _terms(a), _terms(b)
    if not left or not right:
        return 0.0
    return round(2 * len(left & right) / (len(left) + len(right)), 3)


def repeats(new: str, existing: str) -> bool:
    """True when `new` says nothing `existing` does not, or nearly the same thing."""
    terms = _terms(new)
    if not terms:
        return False
    return terms <= _terms(existing) or similarity(new, existing) >= DUPLICATE_SIMILARITY


def similar_to_text(
    store: MemoryStore,
    text: str,
    *,
    limit: int = 5,
    floor: float = FIND_SIMILAR_FLOOR,
    project: str | None = None,
    exclude: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Memories whose description (or summary) says much the same as `text`, most similar first."""
    if not text.strip():
        return []
    found = []
    for hit in store.search(text, limit=limit + len(exclude) + 10, project=project):
        if hit.id in exclude:
            continue
        score = max(similarity(text, hit.description), similarity(text, hit.summary or ""))
        if score >= floor:
            found.append((score, hit))
    found.sort(key=lambda pair: (-pair[0], -pair[1].score, pair[1].id))
    return [
        _compact({
            "id": hit.id,
            "description": hit.description,
            "category": hit.category,
            "similarity": score,
            "updated": hit.updated,
        })
        for score, hit in found[:limit]
    ]


def find_similar(
    store: MemoryStore, *, query: str | None = None, memory_id: str | None = None, limit: int = 5
) -> dict[str, Any]:
    """Look-alikes of a text, or of an existing memory (itself excluded)."""
    if (query is None) == (memory_id is None):
        raise InvalidMemory("give either query (a text) or id (a memory), not both or neither")
    limit = _page(limit, SEARCH_LIMIT_MAX)
    if memory_id is not None:
        memory = store.read(memory_id)
        return {"similar": similar_to_text(store, memory.description, limit=limit,
                                           project=memory.project, exclude=(memory.id,))}
    assert query is not None
    if not query.strip():
        raise InvalidMemory("query is empty")
    return {"similar": similar_to_text(store, query, limit=limit)}


def _exists(store: MemoryStore, memory_id: str) -> tuple[str, bool]:
    canonical = store.folder.normalize_id(memory_id)
    return canonical, store.folder.path_for(memory_id).is_file()


def write(
    store: MemoryStore,
    memory_id: str,
    *,
    force: bool = False,
    expected_sha256: str | None = None,
    allow_secret: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """Create or update a memory; a new one is checked against near-duplicates first.

    A new memory whose description repeats an existing one (see `repeats`) is
    refused unless `force`: the agent should update that memory instead. Less
    close look-alikes are written and reported under `similar`, so the agent
    can merge or archive.
    """
    canonical, exists = _exists(store, memory_id)
    similar: list[dict[str, Any]] = []
    description = fields.get("description")
    if not exists and isinstance(description, str) and description.strip():
        candidates = similar_to_text(store, description, limit=5, project=fields.get("project"),
                                     exclude=(canonical,))
        similar = [c for c in candidates if c["similarity"] >= SIMILAR_SIMILARITY][:3]
        twin = next((c for c in candidates if repeats(description, c["description"])), None)
        if twin is not None and not force:
            raise InvalidMemory(
                f"not written: {canonical!r} would duplicate {twin['id']!r} "
                f"({twin['description'][:80]!r}); update that memory with id={twin['id']!r}, "
                "or pass force=true if this is a different fact"
            )
    created = not exists
    try:
        # A write meant to create expects no file ("" in check_expected): one another
        # writer made meanwhile is updated below, and the answer says so.
        memory = store.write(
            canonical, expected_sha256="" if created and expected_sha256 is None
            else expected_sha256, allow_secret=allow_secret, **fields,
        )
    except ConflictError:
        if not created or expected_sha256 is not None:
            raise
        created = False
        memory = store.write(canonical, allow_secret=allow_secret, **fields)
    result: dict[str, Any] = {"created": created, "memory": memory_dict(memory, body=False)}
    if similar:
        result["similar"] = similar
    return result


def edit(
    store: MemoryStore,
    memory_id: str,
    change: BodyEdit,
    *,
    expected_sha256: str | None = None,
    allow_secret: bool = False,
) -> dict[str, Any]:
    """One partial edit of a memory's body (`change`, as the tool's arguments name it:
    `server.memory_edit`); what was stored."""
    memory = store.edit(memory_id, change, expected_sha256=expected_sha256,
                        allow_secret=allow_secret)
    return {"memory": memory_dict(memory, body=False)}


def list_memories(
    store: MemoryStore | Folders,
    *,
    filters: Filters = NO_FILTERS,
    limit: int = 20,
    offset: int = 0,
    folder: str | None = None,
) -> dict[str, Any]:
    """Memories passing `filters`, sorted by id, a page at a time (with several folders:
    the personal folder's, then each shared one's; `folder`: only that one)."""
    limit = _page(limit, LIST_LIMIT_MAX)
    offset = max(0, int(offset))
    _read_from(store, folder).check_present()
    source: Any = store
    if folder and not isinstance(store, MemoryStore):
        source = store.store(folder)
    memories = source.list(**filters._asdict())
    if source is not store and folder:
        memories = [store.labelled(folder, m) for m in memories]  # type: ignore[union-attr]
    if filters.archived:
        memories = [m for m in memories if m.archived]
    page = memories[offset: offset + limit]
    several = None if isinstance(store, MemoryStore) else store
    result: dict[str, Any] = {"total": len(memories), "memories": [
        _listing(m, several.split(m.id)[0] if several is not None else None) for m in page
    ]}
    if offset + limit < len(memories):
        result["next_offset"] = offset + limit
    return result


def feedback(store: MemoryStore, memory_id: str, helpful: bool) -> dict[str, Any]:
    """Move a memory's trust up (helpful) or down, and say where it ended."""
    before = store.read(memory_id)
    after = store.feedback(before.id, helpful)
    return {"id": after.id, "trust": after.trust, "previous_trust": before.trust}


def archive(
    store: MemoryStore, memory_id: str, reason: str, *, expected_sha256: str | None = None
) -> dict[str, Any]:
    """Move a memory to archive/ (never deleted); returns its new id."""
    original = store.folder.normalize_id(memory_id)
    memory = store.archive(original, reason, expected_sha256=expected_sha256)
    return {"id": original, "archived_as": memory.id, "reason": " ".join(reason.split())}


def baseline_block(store: MemoryStore | Folders) -> str:
    """The baseline memories (at most 8, by baselinePriority then id), quoted as data with ids.

    The same text the SessionStart hook injects, for MCP clients without hooks,
    scoped like the hook to the project of the folder the client started us in.
    """
    project = context.project_for(os.getcwd())
    memories = store.baselines(project=project, limit=context.MAX_BASELINES)
    if not memories:
        return "sage-mem: no baseline memories."
    return context.compose(context.BASELINE_HEADER, memories, datetime.now(UTC))[0]


def index_text(store: MemoryStore) -> str:
    """MEMORY.md as it would be written now, from the live index."""
    return store.catalog_text()


def memory_text(store: MemoryStore, memory_id: str) -> str:
    """The memory file's own text (archived ids included), through the store's path checks."""
    from ..disk.folder import read_memory

    memory = store.read(memory_id)
    try:
        return (read_memory(store.folder, memory.path).raw or b"").decode(
            "utf-8", errors="replace"
        )
    except FileNotFoundError:
        raise MemoryNotFound(f"no memory {memory.id!r}", path=memory.path) from None


# several folders


class InFolders:
    """The tools over several folders: each call routed to the folder its id names."""

    def __init__(self, folders: Folders) -> None:
        self.folders = folders

    def _labelled(self, name: str, data: dict[str, Any], key: str = "id") -> dict[str, Any]:
        data[key] = self.folders.qualify(name, data[key])
        return {"folder": name, **data}

    def read(self, memory_id: str) -> dict[str, Any]:
        name, plain = self.folders.split(memory_id)
        return self._labelled(name, read(self.folders.store(name), plain))

    def write(self, memory_id: str, *, folder: str | None = None, **given: Any) -> dict[str, Any]:
        store, plain = self.folders.for_write(memory_id, folder)
        name = folder or self.folders.split(memory_id)[0]
        result = write(store, plain, **given)
        result["memory"] = self._labelled(name, result["memory"])
        return result

    def edit(self, memory_id: str, change: BodyEdit, **given: Any) -> dict[str, Any]:
        store, plain = self.folders.for_write(memory_id)
        result = edit(store, plain, change, **given)
        result["memory"] = self._labelled(self.folders.split(memory_id)[0], result["memory"])
        return result

    def feedback(self, memory_id: str, helpful: bool) -> dict[str, Any]:
        store, plain = self.folders.for_write(memory_id)
        return self._labelled(self.folders.split(memory_id)[0], feedback(store, plain, helpful))

    def archive(self, memory_id: str, reason: str, **given: Any) -> dict[str, Any]:
        store, plain = self.folders.for_write(memory_id)
        name = self.folders.split(memory_id)[0]
        done = archive(store, plain, reason, **given)
        done["archived_as"] = self.folders.qualify(name, done["archived_as"])
        return self._labelled(name, done)

    def memory_text(self, memory_id: str) -> str:
        name, plain = self.folders.split(memory_id)
        return memory_text(self.folders.store(name), plain)
