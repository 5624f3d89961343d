"""Every error of the package crosses processes whole (issue 30, finding 1): raised in a
worker of the project's process pool, it reaches the parent as the same type with the same
message (naming the file) and attributes. Errors whose ``__init__`` took several arguments
(``TraceFormatError``, ``TextWorkloadError``, ``UnknownNodeError``...) could not be
unpickled: the pool broke and ``chakra_pipeline -j 2`` named no file. The classes are
found by introspection, so a new one is covered."""

from __future__ import annotations

import copyreg
import inspect
import io
import pickle
import typing
from typing import Any

import pytest

from chakra import errors
from chakra.errors import ChakraError
from chakra.workers import process_pool

FILE = "/jobs/7/rank0.host_et.json"

ERROR_CLASSES = sorted(
    (value for value in vars(errors).values()
     if isinstance(value, type) and issubclass(value, ChakraError)),
    key=lambda kind: kind.__name__,
)  # fmt: skip


def _arguments(kind: type[ChakraError]) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for every parameter of ``kind``'s ``__init__`` (its own or inherited from
    a ChakraError), chosen by name and type: a message naming :data:`FILE`."""
    own = next((c.__dict__["__init__"] for c in kind.__mro__
                if "__init__" in c.__dict__ and issubclass(c, ChakraError)), None)  # fmt: skip
    if own is None:
        return [f"{FILE}: something is wrong at byte offset 3"], {}
    hints = typing.get_type_hints(own, vars(errors))
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for parameter in list(inspect.signature(own).parameters.values())[1:]:
        hint = str(hints.get(parameter.name, ""))
        if parameter.name == "path":
            value: Any = FILE
        elif "bool" in hint:
            value = True
        elif "int" in hint:
            value = 7
        else:
            value = f"{FILE}: something is wrong"
        if parameter.kind is parameter.KEYWORD_ONLY:
            keywords[parameter.name] = value
        else:
            positional.append(value)
    return positional, keywords


def _raise(kind: type[ChakraError], positional: list[Any], keywords: dict[str, Any]) -> None:
    raise kind(*positional, **keywords)


def test_every_error_class_is_found() -> None:
    names = {kind.__name__ for kind in ERROR_CLASSES}
    assert {"TraceFormatError", "EtFormatError", "WrongTraceKindError", "TextWorkloadError",
            "UnknownNodeError", "FileAccessError"} <= names  # fmt: skip


@pytest.mark.parametrize("kind", ERROR_CLASSES, ids=lambda kind: kind.__name__)
def test_every_error_survives_pickling(kind: type[ChakraError]) -> None:
    positional, keywords = _arguments(kind)
    error = kind(*positional, **keywords)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is kind
    assert (str(copy), copy.args, vars(copy)) == (str(error), error.args, vars(error))


@pytest.mark.parametrize("kind", ERROR_CLASSES, ids=lambda kind: kind.__name__)
def test_every_error_survives_tblibs_pickling(kind: type[ChakraError]) -> None:
    """As pickled where dask's distributed is imported (tblib's reducer for exceptions,
    which keeps causes and tracebacks, set for this pickler only)."""
    pickling_support = pytest.importorskip("tblib.pickling_support")
    positional, keywords = _arguments(kind)
    error = kind(*positional, **keywords)
    error.__cause__ = ValueError("the cause")
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer)
    pickler.dispatch_table = {**copyreg.dispatch_table, kind: pickling_support.pickle_exception}
    pickler.dump(error)
    copy = pickle.loads(buffer.getvalue())
    assert type(copy) is kind and str(copy) == str(error) and vars(copy) == vars(error)
    assert str(copy.__cause__) == "the cause"


def test_every_error_raised_in_a_worker_reaches_the_parent_whole() -> None:
    """All classes through one pool of the project's workers: each future's error is of
    the class raised, with its message (one line naming the file) and attributes; the
    pool is not broken (it used to report a dead worker)."""
    with process_pool(2) as pool:
        futures = {kind: pool.submit(_raise, kind, *_arguments(kind)) for kind in ERROR_CLASSES}
        received = {kind: future.exception(timeout=60) for kind, future in futures.items()}
    for kind, error in received.items():
        expected = kind(*_arguments(kind)[0], **_arguments(kind)[1])
        assert type(error) is kind, (kind, error)
        assert str(error) == str(expected) and FILE in str(error) and "\n" not in str(error)
        assert vars(error) == vars(expected), kind
