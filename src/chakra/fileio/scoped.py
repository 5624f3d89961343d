"""What a ``with`` block does with the readers and writers of the project, said once: the
block gets the object, and its end calls :meth:`Scoped.finish` with whether the block
succeeded (a writer then commits or discards; a reader closes either way)."""

from __future__ import annotations

from types import TracebackType
from typing import Optional, TypeVar

_Self = TypeVar("_Self", bound="Scoped")


class Scoped:
    """Base of the objects used in a ``with`` block; subclasses define :meth:`finish`."""

    def finish(self, succeeded: bool) -> None:
        """End the object's use: ``succeeded`` is False when the block raised."""
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.finish(exc_type is None)
