"""Errors of the ET feeder (defined with every other error in :mod:`chakra.errors`)."""

from chakra.errors import FeederError, MissingAttributeError, UnknownNodeError

__all__ = ["FeederError", "MissingAttributeError", "UnknownNodeError"]
