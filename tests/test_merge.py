"""The three-way merge of a memory (`sage_mem.memory.merge`): fields by key, the body by lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sage_mem.errors import ConflictError
from sage_mem.memory.edits import check_expected
from sage_mem.memory.merge import (
    MISSING,
    Clash,
    FieldConflict,
    differing_fields,
    merge_fields,
    merge_memory,
    merge_sets,
    merge_text,
)

BASE = {"description": "The user's cat is called Sesame", "category": "user", "trust": 0.5,
        "tags": ["pets"], "aliases": ["cat"]}


def changed(**changes: Any) -> dict[str, Any]:
    """BASE with some keys changed; a key given as MISSING is deleted."""
    out = dict(BASE)
    for key, value in changes.items():
        if value is MISSING:
            out.pop(key, None)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(("ours", "theirs", "meta", "conflicts"), [
    pytest.param(
        changed(trust=0.7), changed(tags=["pets", "sesame"]),
        changed(trust=0.7, tags=["pets", "sesame"]), [], id="trust-here-tags-there-both-kept",
    ),
    pytest.param(
        changed(description="The cat is Sesame"), changed(description="Sesame is a cat"),
        changed(description="The cat is Sesame"),
        [FieldConflict("description", BASE["description"], "The cat is Sesame",
                       "Sesame is a cat")],
        id="both-change-description-differently-conflict",
    ),
    pytest.param(
        changed(trust=0.9), changed(trust=0.9), changed(trust=0.9), [],
        id="both-make-the-same-change",
    ),
    pytest.param(
        changed(aliases=MISSING), changed(trust=0.6), changed(trust=0.6, aliases=MISSING), [],
        id="one-side-deletes-a-key",
    ),
    pytest.param(
        changed(aliases=MISSING), changed(aliases=["cat", "Sesame"]), changed(aliases=MISSING),
        [FieldConflict("aliases", ["cat"], MISSING, ["cat", "Sesame"])],
        id="deleted-here-changed-there-conflict",
    ),
    pytest.param(
        changed(tags=["pets", "home"]), changed(tags=["animals"]),
        changed(tags=["home", "animals"]), [], id="tags-merge-as-sets-removals-and-additions",
    ),
    pytest.param(
        changed(summary="猫叫芝麻"), changed(), changed(summary="猫叫芝麻"), [],
        id="a-key-only-ours-adds",
    ),
    pytest.param(
        changed(summary="猫叫芝麻"), changed(summary="芝麻"), changed(summary="猫叫芝麻"),
        [FieldConflict("summary", MISSING, "猫叫芝麻", "芝麻")], id="both-add-a-key-differently",
    ),
    pytest.param(
        changed(baseline=True), changed(baseline=1), changed(baseline=True),
        [FieldConflict("baseline", MISSING, True, 1)], id="true-is-not-one",
    ),
    pytest.param(
        changed(updated="2026-03-01T10:00:00Z"), changed(updated="2026-03-02"),
        changed(updated="2026-03-02"), [], id="updated-takes-the-newest",
    ),
    pytest.param(
        changed(metadata={"type": "user", "x": 1}), changed(metadata={"type": "user", "y": 2}),
        changed(metadata={"type": "user", "x": 1, "y": 2}), [], id="nested-mapping-by-key",
    ),
])
def test_fields_merge_key_by_key(
    ours: dict[str, Any], theirs: dict[str, Any], meta: dict[str, Any],
    conflicts: list[FieldConflict],
) -> None:
    merged = merge_fields(BASE, ours, theirs)
    assert merged.meta == meta
    assert list(merged.conflicts) == conflicts


def test_a_field_merge_says_where_each_value_came_from() -> None:
    merged = merge_fields(BASE, changed(trust=0.7), changed(tags=["x"], category="feedback"))
    assert merged.from_ours == ("trust",)
    assert merged.from_theirs == ("category", "tags")
    assert merged.combined == ()


def test_key_order_follows_ours_and_a_new_key_goes_where_theirs_has_it() -> None:
    base = {"description": "d", "tags": []}
    theirs = {"description": "d", "summary": "s", "tags": []}
    ours = {"tags": ["a"], "description": "d"}
    assert list(merge_fields(base, ours, theirs).meta) == ["tags", "description", "summary"]


def test_sets_keep_ours_order_then_theirs_additions() -> None:
    assert merge_sets(["a", "b", "c"], ["c", "a", "d"], ["a", "b", "e"]) == ["a", "d", "e"]


PARAGRAPHS = "First paragraph.\n\nSecond paragraph.\n\nThird paragraph.\n"


@pytest.mark.parametrize(("base", "ours", "theirs", "merged"), [
    pytest.param(
        PARAGRAPHS,
        PARAGRAPHS.replace("First paragraph.", "First paragraph, edited here."),
        PARAGRAPHS.replace("Third paragraph.", "Third paragraph, edited on disk."),
        "First paragraph, edited here.\n\nSecond paragraph.\n\nThird paragraph, edited on disk.\n",
        id="edits-in-different-paragraphs-both-kept",
    ),
    pytest.param(
        PARAGRAPHS, PARAGRAPHS + "\nAdded here.\n", "Added on top.\n\n" + PARAGRAPHS,
        "Added on top.\n\n" + PARAGRAPHS + "\nAdded here.\n", id="additions-at-both-ends",
    ),
    pytest.param(
        PARAGRAPHS, PARAGRAPHS.replace("Second", "2nd"), PARAGRAPHS.replace("Second", "2nd"),
        PARAGRAPHS.replace("Second", "2nd"), id="the-same-edit-on-both-sides",
    ),
    pytest.param(
        PARAGRAPHS, PARAGRAPHS.replace("Second paragraph.\n\n", ""),
        PARAGRAPHS.replace("Third", "3rd"), "First paragraph.\n\n3rd paragraph.\n",
        id="a-deleted-paragraph-and-an-edit-elsewhere",
    ),
    pytest.param(
        "用户的猫叫芝麻。\n\n它喜欢晒太阳。\n\n住在上海。\n",
        "用户的猫叫芝麻，是一只橘猫。\n\n它喜欢晒太阳。\n\n住在上海。\n",
        "用户的猫叫芝麻。\n\n它喜欢晒太阳。\n\n现在住在北京。\n",
        "用户的猫叫芝麻，是一只橘猫。\n\n它喜欢晒太阳。\n\n现在住在北京。\n",
        id="cjk-bodies",
    ),
    pytest.param(
        PARAGRAPHS.replace("\n", "\r\n"),
        PARAGRAPHS.replace("\n", "\r\n").replace("First", "1st"),
        PARAGRAPHS.replace("\n", "\r\n").replace("Third", "3rd"),
        "1st paragraph.\r\n\r\nSecond paragraph.\r\n\r\n3rd paragraph.\r\n",
        id="crlf-everywhere-stays-crlf",
    ),
    pytest.param(
        PARAGRAPHS.replace("\n", "\r\n"), PARAGRAPHS.replace("First", "1st"),
        PARAGRAPHS.replace("\n", "\r\n").replace("Third", "3rd"),
        "1st paragraph.\n\nSecond paragraph.\n\n3rd paragraph.\n",
        id="crlf-on-disk-lf-from-the-page-merges-by-lines",
    ),
    pytest.param(
        "no newline at the end", "no newline at the end\nours", "theirs\nno newline at the end",
        "theirs\nno newline at the end\nours", id="a-last-line-without-newline",
    ),
])
def test_bodies_merge_by_lines(base: str, ours: str, theirs: str, merged: str) -> None:
    result = merge_text(base, ours, theirs)
    assert result.clean
    assert result.text() == merged


def test_overlapping_body_edits_clash_with_both_versions() -> None:
    ours = PARAGRAPHS.replace("Second paragraph.", "Second paragraph, my way.")
    theirs = PARAGRAPHS.replace("Second paragraph.", "Second paragraph, the disk's way.")
    result = merge_text(PARAGRAPHS, ours, theirs)
    assert not result.clean
    assert result.clashes == (
        Clash(("Second paragraph.",), ("Second paragraph, my way.",),
              ("Second paragraph, the disk's way.",)),
    )
    assert result.text("ours") == ours
    assert result.text("theirs") == theirs
    assert result.text(["both"]) == PARAGRAPHS.replace(
        "Second paragraph.", "Second paragraph, my way.\nSecond paragraph, the disk's way."
    )
    with pytest.raises(ValueError, match="need a choice"):
        result.text()


def test_edits_of_adjacent_lines_clash_as_in_git() -> None:
    result = merge_text("a\nb\n", "A\nb\n", "a\nB\n")
    assert result.clashes == (Clash(("a", "b"), ("A", "b"), ("a", "B")),)


def test_a_cjk_clash_keeps_each_side_whole() -> None:
    result = merge_text("猫叫芝麻\n", "猫叫芝麻糊\n", "猫叫黑芝麻\n")
    assert result.clashes == (Clash(("猫叫芝麻",), ("猫叫芝麻糊",), ("猫叫黑芝麻",)),)


def test_a_whole_memory_merges_fields_and_body_together() -> None:
    merged = merge_memory(
        (BASE, PARAGRAPHS),
        (changed(description="Sesame, the user's cat"), PARAGRAPHS),
        (changed(tags=["pets", "sesame"]), PARAGRAPHS + "\nEdited in vim.\n"),
    )
    assert merged.clean
    assert merged.meta == changed(description="Sesame, the user's cat", tags=["pets", "sesame"])
    assert merged.body.text() == PARAGRAPHS + "\nEdited in vim.\n"


@pytest.mark.parametrize(("intended", "current", "differ"), [
    pytest.param({"tags": ["a"]}, {"tags": ("a",)}, (), id="list-and-tuple-are-the-same"),
    pytest.param({"body": "x\r\ny\n"}, {"body": "\nx\ny\n"}, (), id="body-by-its-lines"),
    pytest.param({"trust": 0.7, "body": "new"}, {"trust": 0.5, "body": "old"}, ("trust", "body"),
                 id="each-differing-key-named"),
    pytest.param({"summary": "s"}, {}, ("summary",), id="a-key-the-disk-lacks"),
])
def test_differing_fields(
    intended: dict[str, Any], current: dict[str, Any], differ: tuple[str, ...]
) -> None:
    assert differing_fields(intended, current) == differ


def test_a_sha_refusal_names_the_fields_that_differ_on_disk(tmp_path: Path) -> None:
    raw = b"---\ndescription: d\ntags: [a]\nbaselinePriority: 3\n---\n\nOn disk.\n"
    path = tmp_path / "user_x.md"
    intended = {"description": "d", "tags": ["a", "b"], "baseline_priority": 4, "body": "Mine."}
    with pytest.raises(ConflictError) as caught:
        check_expected(path, raw, "0" * 64, intended)
    assert caught.value.fields == ("tags", "baselinePriority", "body")
    assert "tags, baselinePriority, body differ" in str(caught.value)
    with pytest.raises(ConflictError) as unnamed:
        check_expected(path, raw, "0" * 64)
    assert unnamed.value.fields == () and "read it again" in str(unnamed.value)


@pytest.mark.parametrize(("base", "ours", "theirs", "merged"), [
    (0.5, 0.6, 0.4, 0.5),          # a helpful here, an unhelpful there: they cancel out
    (0.5, 0.6, 0.6, 0.6),          # the same value on both sides: one change
    (0.5, 0.6, 0.68, 0.78),        # one helpful here, two there: three moves
    (0.9, 1.0, 0.99, 1.0),         # kept within 0..1
    (MISSING, 0.6, 0.4, 0.5),      # a base without it counts from the default trust
])
def test_trust_moved_on_both_sides_adds_both_moves(base: object, ours: float, theirs: float,
                                                   merged: float) -> None:
    result = merge_fields({} if base is MISSING else {"trust": base}, {"trust": ours},
                          {"trust": theirs})
    assert not result.conflicts and result.meta["trust"] == merged
    assert result.combined == (() if ours == theirs else ("trust",))


def test_trust_a_person_wrote_as_text_still_conflicts() -> None:
    result = merge_fields({"trust": 0.5}, {"trust": "high"}, {"trust": 0.4})
    assert [c.key for c in result.conflicts] == ["trust"]


def test_a_trust_key_inside_a_mapping_is_not_a_memorys_trust() -> None:
    result = merge_fields({"metadata": {"trust": 0.5}}, {"metadata": {"trust": 0.6}},
                          {"metadata": {"trust": 0.4}})
    assert [c.key for c in result.conflicts] == ["metadata.trust"]
