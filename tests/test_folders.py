"""Several folders at once (issue 15, item 5): a personal folder and shared ones.

Real files, the CLI as a subprocess, the hook as a subprocess, the MCP server
over stdio with the official `mcp` client. English and Chinese memories.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support import write_memory

from sage_mem import FolderError, Folders, MemoryNotFound, MemoryStore
from sage_mem.folders import FolderSpec, folders_for, read_config

SECRET_TAIL = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def memory(description: str, body: str = "", **extra: Any) -> str:
    lines = [f"description: {description}"] + [f"{key}: {value}" for key, value in extra.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + (body or description) + "\n"


def cli(*argv: str, stdin: str | None = None, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sage_mem", *argv], input=stdin,
                          capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def personal(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"  # SAGE_MEM_DIR (conftest)
    write_memory(folder, "user_cat", memory("The user's cat is called Sesame", category="user"))
    write_memory(folder, "project_deploy",
                 memory("Deploys of my side project go out on Fridays", category="project"))
    write_memory(folder, "user_tea_zh", memory("用户每天下午喝乌龙茶", "偏好冻顶乌龙，不加糖。",
                                               category="user"))
    return folder


@pytest.fixture
def team(tmp_path: Path) -> Path:
    folder = tmp_path / "team-memory"
    write_memory(folder, "project_deploy",
                 memory("Team deploys go out on Tuesdays after the standup", category="project"))
    write_memory(folder, "reference_runbook_zh",
                 memory("部署手册在共享盘的运维目录里", "回滚步骤见第三节。", category="reference"))
    write_memory(folder, "reference_ci_token",
                 memory("The CI deploy token for the staging pipeline",
                        "token: ghp_" + SECRET_TAIL, category="reference"))
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "app-memory"
    write_memory(folder, "project_api",
                 memory("The app's API is versioned under /v2", category="project"))
    write_memory(folder, "project_deploy",
                 memory("The app deploys with make release", category="project"))
    return folder


def configure(tmp_path: Path, text: str) -> Path:
    """Write the config where sage-mem looks by default: ~/.config/sage-mem/config.toml."""
    file = tmp_path / "home" / ".config" / "sage-mem" / "config.toml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return file


TEAM_READ_ONLY = """\
[personal]
name = "me"

[shared.team]
path = "{team}"
read-only = true
"""


# the config and which folders


def test_a_config_names_the_personal_folder_and_the_shared_ones(
    tmp_path: Path, personal: Path, team: Path, project: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team)
              + f'\n[shared.app]\npath = "{project}"\n')
    specs = folders_for()
    assert [(s.name, s.path, s.read_only, s.personal) for s in specs] == [
        ("me", personal, False, True), ("team", team, True, False), ("app", project, False, False),
    ]
    # XDG_CONFIG_HOME moves it; SAGE_MEM_CONFIG names the file; SAGE_MEM_CONFIG= reads none.
    os.environ["SAGE_MEM_CONFIG"] = ""
    try:
        assert [s.name for s in folders_for()] == ["personal"]
    finally:
        del os.environ["SAGE_MEM_CONFIG"]


def test_a_config_relative_path_is_relative_to_the_config_file(tmp_path: Path, team: Path) -> None:
    file = tmp_path / "elsewhere" / "config.toml"
    file.parent.mkdir()
    file.write_text('[shared.team]\npath = "../team-memory"\n', encoding="utf-8")
    config = read_config(file)
    assert config is not None and config.shared[0].path == team


def test_the_config_shared_folders_join_only_their_personal_folder(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    other = tmp_path / "other"
    other.mkdir()
    assert [s.name for s in folders_for([str(personal)])] == ["me", "team"]
    # another folder named on its own is that folder alone, as before
    assert [s.path for s in folders_for([str(other)])] == [other]


def test_a_repeated_dir_is_named_by_its_folder_or_by_the_config(
    tmp_path: Path, personal: Path, team: Path, project: Path
) -> None:
    specs = folders_for([str(personal), str(team), str(project)], config=None)
    assert [(s.name, s.read_only) for s in specs] == [
        ("personal", False), ("team-memory", False), ("app-memory", False)]
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    other = tmp_path / "x"
    other.mkdir()
    specs = folders_for([str(other), str(team)])
    assert [(s.name, s.read_only) for s in specs] == [("personal", False), ("team", True)]
    twins = [tmp_path / "a" / "memory", tmp_path / "b" / "memory"]
    specs = folders_for([str(personal), *map(str, twins)], config=None)
    assert [s.name for s in specs] == ["personal", "memory", "memory-2"]


BAD_CONFIGS = [
    pytest.param('[shared.team\npath = "x"\n', "line 1", id="syntax"),
    pytest.param('[shared.team]\npath = 3\n', "shared.team.path", id="path-not-text"),
    pytest.param('[shared.team]\nread-only = true\n', "shared.team.path: missing", id="no-path"),
    pytest.param('[shared.team]\npath = "x"\nread-only = "yes"\n', "shared.team.read-only",
                 id="flag-not-bool"),
    pytest.param('[shared.team]\npath = "x"\nreadonly = true\n', "shared.team.readonly",
                 id="unknown-key"),
    pytest.param('[shared."a:b"]\npath = "x"\n', "shared.a:b", id="colon-in-name"),
    pytest.param('[personal]\nname = "team"\n[shared.team]\npath = "x"\n', "taken",
                 id="name-twice"),
    pytest.param('[personal]\nread-only = true\n', "always writable", id="personal-read-only"),
    pytest.param('folders = ["x"]\n', "folders: unknown key", id="unknown-table"),
    pytest.param('shared = "x"\n', "shared: must be tables", id="shared-not-a-table"),
    pytest.param(b'[shared.team]\npath = "\xff"\n', "not UTF-8", id="not-utf8"),
]


@pytest.mark.parametrize(("text", "said"), BAD_CONFIGS)
def test_a_bad_config_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, personal: Path, text: str | bytes, said: str
) -> None:
    file = configure(tmp_path, "")
    file.write_bytes(text if isinstance(text, bytes) else text.encode())
    result = cli("search", "cat", env={"HOME": str(tmp_path / "home")})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"sage-mem: error: {file}: ") and said in result.stderr


# search across folders: the CLI, the API


def test_search_reads_two_folders_and_each_hit_names_its_folder(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    result = cli("--dir", str(personal), "--dir", str(team), "search", "when do deploys go out",
                 "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["results"]
    found = {(hit["folder"], hit["id"]) for hit in hits}
    # the same id in two folders: two memories, the shared one's id qualified
    assert ("personal", "project_deploy") in found and (
        "team-memory", "team-memory:project_deploy") in found
    text = cli("--dir", str(personal), "--dir", str(team), "search", "deploys")
    assert "team-memory:project_deploy" in text.stdout and "  project_deploy  " in text.stdout
    shown = cli("--dir", str(personal), "--dir", str(team), "show", "team-memory:project_deploy")
    assert shown.returncode == 0 and "Team deploys go out on Tuesdays" in shown.stdout
    assert "My side project" not in shown.stdout


def test_three_folders_in_chinese_and_english(
    tmp_path: Path, personal: Path, team: Path, project: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team) + f'\n[shared.app]\npath = "{project}"\n')
    zh = json.loads(cli("search", "部署手册在哪里", "--json").stdout)["results"]
    assert zh[0]["id"] == "team:reference_runbook_zh" and zh[0]["folder"] == "team"
    tea = json.loads(cli("search", "下午喝什么茶", "--json").stdout)["results"]
    assert tea[0]["id"] == "user_tea_zh" and tea[0]["folder"] == "me"
    en = json.loads(cli("search", "deploy", "--json", "--limit", "10").stdout)["results"]
    assert {hit["folder"] for hit in en} == {"me", "team", "app"}
    listed = cli("list").stdout
    assert "app:project_api" in listed and "team:reference_runbook_zh" in listed
    assert "\nuser_cat " in "\n" + listed


def test_one_folder_answers_exactly_as_before(personal: Path) -> None:
    alone = cli("search", "cat", "--json")
    with MemoryStore(personal, watch=False) as store:
        expected = [hit.to_dict() for hit in store.search("cat")]
    assert "folder" not in alone.stdout
    assert [{k: v for k, v in hit.items() if k != "age"} for hit in
            json.loads(alone.stdout)["results"]] == expected


def test_scores_of_two_folders_are_made_comparable(tmp_path: Path) -> None:
    """Why merged hits are ranked by a score scaled per folder (folders/__init__.py).

    One memory, the same bytes, in a folder of 6 and one of 58: its raw scores
    differ (each folder's idf is its own), and a word every memory of the big
    folder holds gives that folder a near-zero best hit, which a merge by rank
    would put second. Scaled by each folder's idf at df = 1, it falls below the
    small folder's real matches, and the two copies lead a query they both fit.
    """
    topics = ["the database uses postgres 15", "tests run with pytest -x",
              "lunch is at noon", "the printer is on floor two", "logs go to /var/log/app"]
    small, big = tmp_path / "small", tmp_path / "big"
    for number, topic in enumerate(topics):
        write_memory(small, f"project_{number}", memory(topic + f" (note {number})"))
    for number in range(57):
        topic = topics[number % len(topics)]
        write_memory(big, f"project_{number}",
                     memory(f"{topic} #{number}", topic + (" database" if number % 5 else "")))
    same = memory("The database uses postgres 15 in production", "We run postgres 15.")
    write_memory(small, "project_database", same)
    write_memory(big, "project_database", same)
    with MemoryStore(small, watch=False) as one, MemoryStore(big, watch=False) as other:
        raw_small = {hit.id: hit.score for hit in one.search("postgres", limit=100)}
        raw_big = {hit.id: hit.score for hit in other.search("postgres", limit=100)}
        big_best = other.search("database")[0]
    assert round(raw_small["project_database"], 3) != round(raw_big["project_database"], 3)
    assert big_best.score < 0.01  # the big folder's rank 1: every memory there holds the word
    with Folders.open([small, big]) as folders:
        merged = folders.search("database", limit=4)
        both = folders.search("which database do we run in production", limit=4)
    assert [hit.folder for hit in merged[:2]] == ["personal", "personal"]
    assert merged[2].id == "big:" + big_best.id and merged[2].score < 0.01
    assert {hit.id for hit in both[:2]} == {"project_database", "big:project_database"}
    assert [hit.score for hit in merged] == sorted((hit.score for hit in merged), reverse=True)


def test_a_missing_shared_folder_is_reported_and_the_others_answer(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    gone = tmp_path / "gone"
    configure(tmp_path, TEAM_READ_ONLY.format(team=team) + f'\n[shared.gone]\npath = "{gone}"\n')
    result = cli("search", "deploys")
    assert result.returncode == 0
    assert f"sage-mem: note: folder 'gone' left out: {gone}: no such folder" in result.stderr
    assert "team:project_deploy" in result.stdout and "project_deploy" in result.stdout
    with Folders.open() as folders:
        assert [spec.name for spec, _ in folders.missing] == ["gone"]
        with pytest.raises(FolderError, match="'gone' is not available"):
            folders.search("deploys", folder="gone")


def test_a_missing_memory_of_a_shared_folder_is_named_with_its_folder(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    """`show team:x` that is not there names `team:x` (not a bare `x`, which means one's own
    folder); a shared folder gone while a process has it open says it is gone."""
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    result = cli("show", "team:project_deplyo")
    assert result.returncode == 1
    assert result.stderr == ("sage-mem: error: no memory 'team:project_deplyo' "
                             "(did you mean 'team:project_deploy'?)\n")
    with Folders.open() as folders:
        shutil.rmtree(team)
        with pytest.raises(MemoryNotFound) as caught:
            folders.read("team:project_deploy")
    assert caught.value.message == (f"no memory 'team:project_deploy': the folder {team} "
                                    "is gone")


def test_each_folder_keeps_its_own_state_folder(personal: Path, team: Path) -> None:
    with Folders.open([personal, team]) as folders:
        folders.search("deploys")
        states = {name: store.folder.state_dir for name, store in folders.stores.items()}
    assert states["personal"] != states["team-memory"]
    for folder, state in ((personal, states["personal"]), (team, states["team-memory"])):
        assert not str(state).startswith(str(folder) + os.sep)
    assert sorted(p.name for p in team.iterdir()) == [
        "project_deploy.md", "reference_ci_token.md", "reference_runbook_zh.md"]


# writes: the personal folder unless a folder is named; a read-only folder refuses


def test_a_read_only_folder_refuses_writes_through_the_cli(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    before = {p: p.read_bytes() for p in team.rglob("*.md")}
    for argv in (["add", "team:project_new", "--description", "x y z"],
                 ["archive", "team:project_deploy", "--reason", "old"],
                 ["feedback", "team:project_deploy", "helpful"]):
        result = cli(*argv)
        assert result.returncode == 1, argv
        assert result.stderr.count("\n") == 1 and "'team'" in result.stderr
        assert "is read-only" in result.stderr
    assert {p: p.read_bytes() for p in team.rglob("*.md")} == before
    # a bare id goes to the personal folder
    assert cli("add", "project_new", "--description", "A new one of mine").returncode == 0
    assert (personal / "project_new.md").is_file() and not (team / "project_new.md").exists()


def test_a_writable_shared_folder_takes_a_write_named_to_it(
    personal: Path, project: Path
) -> None:
    result = cli("--dir", str(personal), "--dir", str(project), "add", "app-memory:project_db",
                 "--description", "The app stores data in SQLite")
    assert result.returncode == 0, result.stderr
    assert (project / "project_db.md").is_file() and not (personal / "project_db.md").exists()


def test_a_read_only_folder_refuses_writes_through_the_api(personal: Path, team: Path) -> None:
    specs = [FolderSpec("me", personal, personal=True), FolderSpec("team", team, read_only=True)]
    with Folders(specs) as folders:
        with pytest.raises(FolderError, match="'team'.*is read-only"):
            folders.writable("team")
        with pytest.raises(FolderError, match="is read-only"):
            folders.for_write("team:project_deploy")
        store, plain = folders.for_write("user_dog")
        assert store is folders.personal and plain == "user_dog"
        assert folders.read("team:project_deploy").id == "team:project_deploy"
        assert folders.read("project_deploy").description.startswith("Deploys of my side")


# the hooks


def hook(event: str, payload: dict[str, Any], *argv: str) -> subprocess.CompletedProcess[str]:
    return cli(*argv, "hook", event, stdin=json.dumps(payload))


def test_the_prompt_hook_injects_from_every_folder_naming_each(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    result = hook("user-prompt-submit",
                  {"session_id": "s1", "prompt": "when do the deploys go out?"})
    assert result.returncode == 0, result.stderr
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "> id: team:project_deploy" in text and "> id: project_deploy" in text
    assert "Team deploys go out on Tuesdays" in text and "Fridays" in text
    # the session remembers both (one not confused with the other): nothing twice
    again = hook("user-prompt-submit",
                 {"session_id": "s1", "prompt": "when do the deploys go out?"})
    assert again.returncode == 0 and again.stdout == ""
    # Chinese, from the shared folder, and from the repeated --dir too
    zh = hook("user-prompt-submit", {"session_id": "s2", "prompt": "部署手册放在哪里了"},
              "--dir", str(personal), "--dir", str(team))
    assert "> id: team:reference_runbook_zh" in json.loads(zh.stdout)[
        "hookSpecificOutput"]["additionalContext"]


def test_a_secret_in_a_shared_folder_is_never_injected(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    result = hook("user-prompt-submit",
                  {"session_id": "s3", "prompt": "what is the CI deploy token for staging"})
    assert result.returncode == 0
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "team:reference_ci_token" in text
    assert SECRET_TAIL not in text and "ghp_A1b2" not in text


def test_session_start_injects_the_baselines_of_shared_folders(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    write_memory(team, "feedback_style", memory("The team writes commit messages in English",
                                                category="feedback", baseline="true"))
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    result = hook("session-start", {"session_id": "s4", "source": "startup"})
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "> id: team:feedback_style" in text


def test_a_bad_config_never_stops_the_hook(tmp_path: Path, personal: Path) -> None:
    configure(tmp_path, "[shared.team\n")
    result = hook("user-prompt-submit", {"session_id": "s5", "prompt": "what is my cat called"})
    assert result.returncode == 0
    assert "> id: user_cat" in json.loads(result.stdout)["hookSpecificOutput"][
        "additionalContext"]
    assert "shared folders left out" in result.stderr and "line 1" in result.stderr


def test_a_missing_shared_folder_never_stops_the_hook(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team)
              + f'\n[shared.gone]\npath = "{tmp_path / "gone"}"\n')
    result = hook("user-prompt-submit", {"session_id": "s6", "prompt": "when do deploys go out"})
    assert result.returncode == 0
    assert "team:project_deploy" in result.stdout and "folder 'gone' left out" in result.stderr


# the MCP tools, through the official client over stdio


async def _mcp_session(tmp_path: Path, work: Any) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sage_mem", "serve"], cwd=tmp_path,
        env={"SAGE_MEM_DIR": str(tmp_path / "memory"), "HOME": str(tmp_path / "home"),
             "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        return await work(client)


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text
    return False, result.structured_content


def test_the_mcp_tools_read_across_folders_and_write_only_where_allowed(
    tmp_path: Path, personal: Path, team: Path, project: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team) + f'\n[shared.app]\npath = "{project}"\n')
    before = {p: p.read_bytes() for p in team.rglob("*.md")}

    async def work(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        out["write_props"] = set(tools["memory_write"].input_schema["properties"])
        out["search_props"] = set(tools["memory_search"].input_schema["properties"])
        out["search"] = await _call(client, "memory_search", query="when do deploys go out",
                                    limit=10)
        out["zh"] = await _call(client, "memory_search", query="部署手册")
        out["read"] = await _call(client, "memory_read", id="team:project_deploy")
        out["mine"] = await _call(client, "memory_read", id="project_deploy")
        out["only_app"] = await _call(client, "memory_list", folder="app")
        out["refused"] = await _call(client, "memory_write", id="team:project_x",
                                     description="A team fact")
        out["refused_folder"] = await _call(client, "memory_write", id="project_x",
                                            description="A team fact", folder="team")
        out["archive_refused"] = await _call(client, "memory_archive", id="team:project_deploy",
                                             reason="old")
        out["to_app"] = await _call(client, "memory_write", id="project_cache",
                                    description="The app caches in Redis", folder="app")
        out["to_me"] = await _call(client, "memory_write", id="user_dog",
                                   description="The user's dog is called Mochi")
        out["edit_app"] = await _call(client, "memory_edit", id="app:project_api",
                                      append="Rate limit: 100 requests a second")
        out["edit_refused"] = await _call(client, "memory_edit", id="team:project_deploy",
                                          append="and on Fridays")
        out["resource"] = (await client.read_resource("memory://team:project_deploy"))
        return out

    out = anyio.run(_mcp_session, tmp_path, work)
    assert "folder" in out["write_props"] and "folder" in out["search_props"]
    error, found = out["search"]
    assert not error
    ids = {(hit["folder"], hit["id"]) for hit in found["hits"]}
    assert {("me", "project_deploy"), ("team", "team:project_deploy"),
            ("app", "app:project_deploy")} <= ids
    assert out["zh"][1]["hits"][0]["id"] == "team:reference_runbook_zh"
    assert out["read"][1]["id"] == "team:project_deploy" and out["read"][1]["folder"] == "team"
    assert "Tuesdays" in out["read"][1]["body"] and "Fridays" in out["mine"][1]["body"]
    assert {m["id"] for m in out["only_app"][1]["memories"]} == {"app:project_api",
                                                                 "app:project_deploy"}
    for key in ("refused", "refused_folder", "archive_refused", "edit_refused"):
        error, text = out[key]
        assert error and "'team'" in text and "read-only" in text and "\n" not in text, key
    assert out["to_app"][1]["memory"]["id"] == "app:project_cache"
    assert (project / "project_cache.md").is_file()
    assert out["to_me"][1]["memory"]["id"] == "user_dog" and (personal / "user_dog.md").is_file()
    assert out["edit_app"][1]["memory"]["id"] == "app:project_api"
    assert "Rate limit: 100 requests a second" in (project / "project_api.md").read_text("utf-8")
    assert "Tuesdays" in out["resource"].contents[0].text
    assert {p: p.read_bytes() for p in team.rglob("*.md")} == before


def test_with_one_folder_the_mcp_tools_take_no_folder_argument(
    tmp_path: Path, personal: Path
) -> None:
    async def work(client: Client) -> Any:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return {name: set(tool.input_schema["properties"]) for name, tool in tools.items()}

    props = anyio.run(_mcp_session, tmp_path, work)
    assert all("folder" not in names for names in props.values())


# the dream, per folder: never a change in a read-only one


def test_the_dream_never_runs_on_a_read_only_folder(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    write_memory(team, "project_deploy_again",
                 memory("Team deploys go out on Tuesdays after the standup", category="project"))
    before = {p: p.read_bytes() for p in team.rglob("*") if p.is_file()}
    for argv in (["dream", "--mode", "rewrite"], ["dream"], ["dream", "--auto"],
                 ["rollback", "20261129T201500Z-1a2b"]):
        refused = cli("--dir", str(team), *argv)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, argv
        assert "read-only folder 'team'" in refused.stderr
    assert {p: p.read_bytes() for p in team.rglob("*") if p.is_file()} == before
    # the personal folder dreams as before, and the shared ones are left alone
    assert cli("dream", "--mode", "rewrite").returncode == 0
    assert {p: p.read_bytes() for p in team.rglob("*") if p.is_file()} == before


def test_with_shared_folders_the_hook_answers_itself_not_the_folders_server(
    tmp_path: Path, personal: Path, team: Path
) -> None:
    # A server (serve, ui, daemon) answers the hooks of its own folder only: it would
    # leave the shared folders out, so the hook reads them all itself.
    from sage_mem.agents import daemon

    configure(tmp_path, TEAM_READ_ONLY.format(team=team))
    store = MemoryStore(personal, watch=False)
    listener = daemon.listen_for_hooks(store)
    assert listener is not None
    try:
        result = hook("user-prompt-submit",
                      {"session_id": "s7", "prompt": "when do deploys go out"})
        assert result.returncode == 0, result.stderr
        assert "> id: team:project_deploy" in result.stdout and listener.answered == 0
        configure(tmp_path, "")  # no shared folder: the server answers, as before
        alone = hook("user-prompt-submit", {"session_id": "s8", "prompt": "what is my cat called"})
        assert "user_cat" in alone.stdout and listener.answered == 1
    finally:
        listener.stop()


def test_sage_mem_state_dir_is_the_personal_folders_alone(
    tmp_path: Path, personal: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGE_MEM_STATE_DIR", str(tmp_path / "state"))
    with Folders.open([personal, project]) as folders:
        assert folders.personal.folder.state_dir == tmp_path / "state"
        assert folders.stores["app-memory"].folder.state_dir != tmp_path / "state"
    written = cli("--dir", str(personal), "--dir", str(project), "add", "app-memory:project_q",
                  "--description", "A queue of its own")
    assert written.returncode == 0, written.stderr
    with MemoryStore(project, watch=False, state_dir=tmp_path / "elsewhere") as alone:
        assert alone.read("project_q").description == "A queue of its own"
