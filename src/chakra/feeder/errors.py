"""Errors of the ET feeder, part of the package's :class:`~chakra.errors.ChakraError` tree."""

from __future__ import annotations

from chakra.errors import ChakraError


class FeederError(ChakraError):
    """The feeder was asked something its state cannot answer (unknown id, bad push-back...)."""


class UnknownNodeError(FeederError, KeyError):
    """A node id is not loaded: not read yet, already removed, or absent from the file.

    ``node_id`` is the id asked for. Also a ``KeyError``, as the id is a missing key.
    """

    def __init__(self, message: str, node_id: int) -> None:
        super().__init__(message)
        self.node_id = node_id

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class MissingAttributeError(FeederError):
    """A node has no "other" attribute of the requested name."""
