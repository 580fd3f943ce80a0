"""The star map's answer made ahead of its first look (issue 30, the map's first draw): at
50,000 memories it is some 0.15 s of CPU (the stars, their relations, the JSON) that the first
look waited for. A launch makes it once the rest of its work is done; after a change it is made
again ahead only once the map was looked at in this launch; what it says is what a look made
then would say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import wait_until, write_memory
from test_ui import Client, memory_file
from test_ui_after_a_change import linked_folder

from sage_mem.store import MemoryStore
from sage_mem.ui import UiServer, overview


def _kept(state: Any) -> tuple[int, bytes] | None:
    return state.stars._kept


def test_a_launch_makes_the_star_maps_answer_before_it_is_asked_for(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    original = overview.star_data

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(overview, "star_data", counted)
    folder = linked_folder(memory_dir)
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
        state: Any = server.app.app.state
        wait_until(lambda: _kept(state) is not None)
        assert made == [1] and not state.stars.asked
        client = Client(server)
        stars = client.ok("GET", "/api/stars")
        assert made == [1]  # the look found it made
        # Encoded field by field (pausing between), to the bytes a look would have made.
        assert _kept(state)[1] == overview.StarAnswers().get(0, lambda: original(
            store, state.graph.get(store, 0), list(state.listings.get(store, 0).live.values())))
        assert stars == json.loads(_kept(state)[1])
        assert len(stars["ids"]) >= 40 and stars["links"]


def test_after_a_change_it_is_made_ahead_again_only_once_the_map_was_looked_at(
    memory_dir: Path,
) -> None:
    folder = linked_folder(memory_dir)
    with MemoryStore(folder, watch=True) as store, UiServer(store, port=0).start() as server:
        state: Any = server.app.app.state
        client = Client(server)
        wait_until(lambda: _kept(state) is not None)
        write_memory(folder, "user_00", memory_file("Changed", "See [[project_02]]."))
        wait_until(lambda: state.feed.generations["memories"] > 0 and
                   state.graph.ready(state.feed.generations["memories"]) is not None)
        generation = state.feed.generations["memories"]
        kept = _kept(state)
        assert kept is not None and kept[0] == 0  # not looked at: not made again
        assert client.ok("GET", "/api/stars")["descriptions"].count("Changed") == 1
        write_memory(folder, "user_00", memory_file("Changed again", "See [[project_03]]."))
        wait_until(lambda: state.feed.generations["memories"] > generation)
        wait_until(lambda: (_kept(state) or (0,))[0] == state.feed.generations["memories"])
        stars = json.loads(_kept(state)[1])
        assert stars["descriptions"].count("Changed again") == 1
