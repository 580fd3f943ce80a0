"""MEMORY.md: Claude Code's index format, deterministic, and within Claude Code's load limits."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sage_mem.memory import catalog
from sage_mem.memory.value import Memory


def memory(
    memory_id: str,
    description: str = "a memory",
    *,
    category: str | None = "user",
    **fields: object,
) -> Memory:
    return Memory(
        id=memory_id, path=Path(memory_id + ".md"), description=description,
        body="", category=category, **fields,  # type: ignore[arg-type]
    )


def entries(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- [")]


def test_the_index_groups_by_category_in_a_fixed_order() -> None:
    text = catalog.render([
        memory("z_ref", "where docs are", category="reference"),
        memory("misc", "odd one", category=None),
        memory("b_user", "who", name="Bee"),
        memory("a_user", "who else"),
        memory("tests_first", "write tests first", category="feedback"),
        memory("weird", "custom category", category="zzz"),
        memory("plan", "the plan", category="project", summary="short plan"),
    ])
    assert text == (
        f"{catalog.HEADER}\n\n{catalog.NOTE}\n\n"
        "## user\n- [a_user](a_user.md) — who else\n- [Bee](b_user.md) — who\n\n"
        "## feedback\n- [tests_first](tests_first.md) — write tests first\n\n"
        "## project\n- [plan](plan.md) — the plan\n\n"
        "## reference\n- [z_ref](z_ref.md) — where docs are\n\n"
        "## zzz\n- [weird](weird.md) — custom category\n\n"
        "## uncategorized\n- [misc](misc.md) — odd one\n"
    )


def test_the_index_has_no_frontmatter_and_no_dates() -> None:
    text = catalog.render([memory("a", updated="2026-11-29T00:00:00Z", created="2026-11-29")])
    assert not text.startswith("---")
    assert "2026" not in text


def test_the_same_memories_give_the_same_bytes_in_any_order() -> None:
    memories = [memory(f"m{i:03}", f"memory number {i}", category=c)
                for i, c in zip(range(60), ["user", "feedback", "project", "reference"] * 15,
                                strict=True)]
    first = catalog.render(memories)
    shuffled = memories[:]
    random.Random(7).shuffle(shuffled)
    assert catalog.render(shuffled) == first


def test_archived_memories_are_not_listed() -> None:
    text = catalog.render([memory("a"), memory("archive/b", archived=True)])
    assert entries(text) == ["- [a](a.md) — a memory"]


def test_an_empty_folder_says_so() -> None:
    assert catalog.render([]).endswith("\nNo memories yet.\n")


@pytest.mark.parametrize(
    ("memory_id", "target"),
    [
        pytest.param("my notes", "<my notes.md>", id="space"),
        pytest.param("a(b)", "<a(b).md>", id="parentheses"),
        pytest.param("project/api/auth", "project/api/auth.md", id="subfolder"),
        pytest.param("用户_猫", "用户_猫.md", id="chinese"),
    ],
)
def test_links_point_at_the_memory_file(memory_id: str, target: str) -> None:
    title = memory_id.rsplit("/")[-1]
    assert catalog.entry_line(memory(memory_id)).startswith(f"- [{title}]({target})")


def test_brackets_in_a_title_cannot_break_the_link() -> None:
    assert catalog.entry_line(memory("a", name="[x] y")) == "- [(x) y](a.md) — a memory"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"description": "word " * 100}, id="long-description"),
        pytest.param({"description": "猫" * 300}, id="long-chinese-description"),
        pytest.param({"name": "a very long name " * 20}, id="long-name"),
        pytest.param({"name": "n" * 400, "description": "d" * 400}, id="long-everything"),
        pytest.param({"description": "line\nbreaks\tand   spaces"}, id="whitespace"),
    ],
)
def test_lines_stay_within_150_characters_and_keep_the_link_whole(fields: dict[str, str]) -> None:
    line = catalog.entry_line(memory("project/some_fairly_long_memory_id", **fields))
    assert len(line) <= catalog.MAX_LINE_CHARS
    assert "(project/some_fairly_long_memory_id.md)" in line
    assert "\n" not in line and "\t" not in line


def test_a_long_title_is_cut_before_the_hook_disappears() -> None:
    line = catalog.entry_line(memory("m", "the hook text", name="t" * 300))
    assert line.endswith(" — the hook text")
    assert "…](m.md)" in line


def test_a_large_folder_is_cut_to_fit_claude_codes_limits_with_a_count_of_the_rest() -> None:
    memories = [memory(f"m{i:04}", f"memory number {i} " + "x" * 60) for i in range(1000)]
    memories[999] = memory("m0999", "a baseline", baseline=True)
    text = catalog.render(memories, {"m0500": 9, "m0700": 3})
    assert text.count("\n") <= catalog.MAX_LINES
    assert len(text.encode()) <= catalog.MAX_BYTES
    listed = len(entries(text))
    assert f"…and {1000 - listed} more memories" in text
    assert "(m0999.md)" in text and "(m0500.md)" in text and "(m0700.md)" in text
    assert all(len(line) <= catalog.MAX_LINE_CHARS for line in text.splitlines())


def test_baselines_are_kept_by_priority_when_cutting() -> None:
    memories = [memory(f"m{i:04}", "x") for i in range(400)]
    memories += [memory(f"base{i}", "b", baseline=True, baseline_priority=i) for i in range(3)]
    text = catalog.render(memories)
    for i in range(3):
        assert f"(base{i}.md)" in text


def test_the_byte_limit_holds_for_chinese_text() -> None:
    memories = [memory(f"记忆{i:03}", "用户的猫叫芝麻，喜欢晒太阳" * 10) for i in range(190)]
    text = catalog.render(memories)
    assert len(text.encode()) <= catalog.MAX_BYTES
    assert text.count("\n") <= catalog.MAX_LINES
    assert "more memories not listed" in text


def test_a_cut_index_is_deterministic() -> None:
    memories = [memory(f"m{i:04}", f"memory {i}") for i in range(500)]
    counts = {f"m{i:04}": i % 7 for i in range(500)}
    assert catalog.render(memories, counts) == catalog.render(list(reversed(memories)), counts)


def ranked_whole(memories: list[Memory], counts: dict[str, int]) -> str:
    """The cut index as the whole ranking gives it: every memory ranked, every cut tried."""
    live = sorted((m for m in memories if not m.archived), key=lambda m: m.id)
    ranked = sorted(live, key=lambda m: (not m.baseline,
                                         -m.baseline_priority if m.baseline else 0,
                                         -counts.get(m.id, 0), m.id))
    for keep in range(min(len(ranked), catalog.MAX_LINES), -1, -1):
        text = catalog._render_groups(sorted(ranked[:keep], key=lambda m: m.id),
                                      len(ranked) - keep)
        if catalog._fits(text):
            return text
    raise AssertionError("nothing fits")


def test_a_cut_index_makes_only_the_lines_it_may_show_and_is_the_whole_rankings_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MEMORY.md is made again after every change: at 50,000 memories it ranked them all and
    made each line of the first 200 again for every cut it tried. Now it ranks only the first
    200 (baselines, the most used, then by id) and makes each line once, and it is the same
    index as the whole ranking's, whatever the order the memories come in."""
    rng = random.Random(30)
    original = catalog.entry_line
    for size in (150, 201, 1200, 5000):
        memories = [memory(f"{rng.choice('abc')}{i:05}", "note " * rng.randrange(1, 30),
                           category=rng.choice(["user", "project", None]),
                           baseline=rng.random() < 0.01, baseline_priority=rng.randrange(3),
                           archived=rng.random() < 0.05)
                    for i in range(size)]
        counts = {m.id: rng.randrange(1, 5) for m in memories if rng.random() < 0.02}
        made: list[str] = []

        def counted(memory: Memory, made: list[str] = made) -> str:
            made.append(memory.id)
            return original(memory)

        monkeypatch.setattr(catalog, "entry_line", counted)
        rng.shuffle(memories)
        text = catalog.render(memories, counts)
        monkeypatch.setattr(catalog, "entry_line", original)
        assert len(made) == len(set(made)) <= catalog.MAX_LINES
        assert text == ranked_whole(memories, counts), size


@pytest.mark.parametrize(
    ("line", "target"),
    [
        pytest.param("- [Role](user_role.md) — the user's role", "user_role.md", id="claude-code"),
        pytest.param("* [Role](user_role.md)", "user_role.md", id="star-no-hook"),
        pytest.param("  + [Role](./sub/../user_role.md) - x", "user_role.md", id="normalized"),
        pytest.param("- [My notes](<my notes.md>)", "my notes.md", id="angle-brackets"),
        pytest.param("- [A](a%20b.md#part)", "a b.md", id="encoded-with-anchor"),
        pytest.param("- [A](a.md \"title\")", "a.md", id="link-title"),
        pytest.param("- [猫](用户_猫.md) — 芝麻", "用户_猫.md", id="chinese"),
        pytest.param("- [A](a.md)\r", "a.md", id="crlf"),
        pytest.param("See [A](a.md).", None, id="prose"),
        pytest.param("- see [A](a.md)", None, id="link-not-first"),
        pytest.param("- [A](https://example.com/a.md)", None, id="web"),
        pytest.param("- [A](/abs/a.md)", None, id="absolute"),
        pytest.param("- [A](notes.txt)", None, id="not-markdown"),
        pytest.param("## user", None, id="heading"),
    ],
)
def test_index_target_reads_claude_codes_index_lines(line: str, target: str | None) -> None:
    assert catalog.index_target(line) == target


@pytest.mark.parametrize(
    ("existing", "lines"),
    [
        pytest.param(catalog.render([memory("a")]).encode(), [], id="written-by-sage-mem"),
        pytest.param(b"# Mine\r\n\r\n- [A](a.md)\r\n", ["# Mine", "", "- [A](a.md)"], id="crlf"),
        pytest.param(b"\xef\xbb\xbfNotes\n", ["Notes"], id="bom"),
        pytest.param(
            f"Above\n{catalog.REGION_BEGIN}\n## user\n- [a](a.md) — x\nTyped in\n"
            f"{catalog.REGION_END}\nBelow\n".encode(),
            ["Above", "Typed in", "Below"], id="region",
        ),
        pytest.param(
            (catalog.render([memory("a")]) + "\nMy note\n").encode(), ["My note"],
            id="written-then-noted",
        ),
    ],
)
def test_owner_lines_are_the_lines_sage_mem_did_not_write(
    existing: bytes, lines: list[str]
) -> None:
    assert catalog.owner_lines(existing) == lines
