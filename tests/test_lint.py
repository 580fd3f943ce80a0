"""The house style is checked, not hoped for: ruff over the project, mypy over the package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> list[str] | None:
    try:
        import ruff  # noqa: F401
    except ImportError:
        found = shutil.which("ruff")
        return [found] if found else None
    return [sys.executable, "-m", "ruff"]


def test_ruff_finds_nothing() -> None:
    command = _ruff()
    if command is None:
        pytest.skip("ruff is not installed (it comes with the test extra)")
    result = subprocess.run(
        [*command, "check", "sage_mem", "tests", "benchmarks"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed (it comes with the test extra)")
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],  # files and settings: [tool.mypy] in pyproject.toml
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
