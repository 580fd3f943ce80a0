"""The real-client tier's one rule for a missing client (`stand_in_api.client`).

Locally a test that needs Claude Code or Codex skips and says how to install
them; under `CI=true` it fails, since CI installed them (`.ci/clients-setup`)
and a broken setup must not pass as a row of skips.
"""

from __future__ import annotations

import pytest
import stand_in_api


@pytest.fixture
def no_clients(tmp_path, monkeypatch):
    monkeypatch.setattr(stand_in_api, "_BIN", str(tmp_path / "empty"))


def test_a_missing_client_skips_locally_saying_how_to_install_it(no_clients, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises((pytest.fail.Exception, pytest.skip.Exception)) as raised:
        stand_in_api.client("claude")
    assert raised.type is pytest.skip.Exception
    assert "claude is not installed" in str(raised.value) and "clients-setup" in str(raised.value)


@pytest.mark.parametrize("value", ["true", "TRUE"])
def test_a_missing_client_fails_under_ci(no_clients, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises((pytest.fail.Exception, pytest.skip.Exception)) as raised:
        stand_in_api.client("codex")
    assert raised.type is pytest.fail.Exception, "a skip under CI=true hides a broken setup"
    assert "CI=true: codex is not installed" in str(raised.value)


def test_a_present_client_is_its_path(tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "true")
    folder = tmp_path / "bin"
    folder.mkdir()
    claude = folder / "claude"
    claude.write_text("#!/bin/sh\n", encoding="utf-8")
    claude.chmod(0o755)
    monkeypatch.setattr(stand_in_api, "_BIN", str(folder))
    assert stand_in_api.client("claude") == str(claude)
