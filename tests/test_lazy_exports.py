"""The packages whose ``__init__`` imports its public names on first use
(:func:`chakra.lazy_exports`, issue 35's start-up): each name in ``__all__`` resolves, to the
object its module defines, whether or not that module was imported before; what the
``__init__`` lists under ``if TYPE_CHECKING:`` (the re-exports type checkers and the house
rules read) is what it imports at run time; a name that is also a module of the package
(``chakra.views.bound``) stays the name once its module is imported."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import chakra

PACKAGE = Path(chakra.__file__).parent
LAZY = ("fileio", "pipeline", "simulate", "synth", "text", "views")


def _type_checking_imports(package: str) -> dict[str, str]:
    tree = ast.parse((PACKAGE / package / "__init__.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.module
                found.update({alias.name: item.module.rsplit(".", 1)[1] for alias in item.names})
    return found


@pytest.mark.parametrize("package", LAZY)
def test_the_type_checking_imports_are_the_lazy_ones(package: str) -> None:
    module = import_module(f"chakra.{package}")
    assert _type_checking_imports(package) == module._MODULE_OF


@pytest.mark.parametrize("package", LAZY)
def test_every_public_name_resolves_fresh(package: str) -> None:
    """In a fresh interpreter: each name of ``__all__``, fetched from the package, is its
    module's object (``from chakra.simulate import build_graph`` as before)."""
    code = (
        "import importlib, sys\n"
        f"package = importlib.import_module('chakra.{package}')\n"
        "for name in package.__all__:\n"
        "    value = getattr(package, name)\n"
        "    where = package._MODULE_OF.get(name)\n"
        "    if where is not None:\n"
        "        module = importlib.import_module(f'{package.__name__}.{where}')\n"
        "        assert getattr(module, name) is value, name\n"
        "        assert getattr(package, name) is value, name\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_name_that_is_also_a_module_stays_the_name() -> None:
    """``bound``, the function, after ``chakra.views.bound``, its module, was imported by
    another module first (the failure of a plain PEP 562 ``__getattr__``)."""
    code = (
        "import chakra.views.bound, chakra.views\n"
        "from chakra.views import bound\n"
        "assert callable(bound) and bound.__module__ == 'chakra.views.bound', bound\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    import chakra.simulate

    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        chakra.simulate.nothing_here  # noqa: B018
