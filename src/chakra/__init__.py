"""chakra: link, convert and simulate ML execution traces (Chakra ET compatible).

The packages, bottom up (each imports only from its own layer or those below; checked by
tests/test_house_rules.py):

- plumbing: :mod:`chakra.errors` (every exception), :mod:`chakra.fileio` (atomic outputs,
  gzip-by-content inputs, URLs, archives), :mod:`chakra.progress`, :mod:`chakra.workers`;
- formats: :mod:`chakra.et` (Chakra ET protobuf: reader, writer, attributes, validation),
  :mod:`chakra.ingest` (host ET and Kineto readers), :mod:`chakra.text` (ASTRA-sim text
  workloads), and the reference's import paths (``chakra.schema``, ``chakra.src``);
- the pipeline's stages, in order: :mod:`chakra.link` (host ET + Kineto -> ET+),
  :mod:`chakra.convert` (ET+ or host ET -> Chakra ET), :mod:`chakra.simulate` (replay);
- results: :mod:`chakra.ranks` (cross-rank agreement), :mod:`chakra.views` (views of a run);
- the whole job and the companions: :mod:`chakra.pipeline`, :mod:`chakra.synth` (synthetic
  traces with ground truth), :mod:`chakra.feeder` (ET feeder API), :mod:`chakra.tools`
  (generator, visualizers, validation across files);
- :mod:`chakra.cli`: the command-line tools, thin.

Each package's ``__init__`` lists its public API (``from chakra.link import link_traces``).
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (20-30 ms): every console script
#: imports this package before its first line can set the signal guard
#: (:mod:`chakra.cli.launch`), so a Ctrl-C during that import was a traceback.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Callable

__version__ = "0.1.0"


class _LazyPackage(ModuleType):
    """A package of :func:`lazy_exports`: the module the import system sets on it once
    loaded does not replace a public name it shares (``chakra.views.bound``, the function,
    as an eager re-export after the import of its module had it)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and name in self.__dict__.get("_MODULE_OF", ()):
            return
        super().__setattr__(name, value)


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's module ``__getattr__`` (PEP 562) that imports each public name from its
    module on first use: ``exports`` (the package's ``_MODULE_OF``) maps a name to its module
    under ``package`` (``{"build_graph": "graph_build"}``). So a command's ``--help`` loads
    none of the package's modules (nor numpy or protobuf behind them), and ``from
    chakra.simulate import build_graph`` works as an eager re-export would."""
    sys.modules[package].__class__ = _LazyPackage

    def attribute(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # the next lookup does not come here
        return value

    return attribute
