"""Python mirror of the C++ ``ETFeeder``: stream an ET file and issue nodes in dependency order.

See :class:`EtFeeder` for the API, the windowing rule and the fixes relative to the C++ feeder.
"""

from chakra.feeder.errors import FeederError, MissingAttributeError, UnknownNodeError
from chakra.feeder.feeder import DEFAULT_WINDOW_SIZE, EtFeeder
from chakra.feeder.node import RECOGNISED_ATTRS, FeederNode

__all__ = [
    "DEFAULT_WINDOW_SIZE",
    "RECOGNISED_ATTRS",
    "EtFeeder",
    "FeederError",
    "FeederNode",
    "MissingAttributeError",
    "UnknownNodeError",
]
