"""File plumbing shared by every stage: atomic outputs and gzip-transparent inputs, at local
paths or at URLs (``s3://...``, through fsspec when installed)."""

from typing import TYPE_CHECKING

from chakra import lazy_exports

if TYPE_CHECKING:  # imported on first use (a command's --help loads none of them)
    from chakra.fileio.atomic import AtomicFile, AtomicGroup, atomic_output, copy_local_to
    from chakra.fileio.compressed import open_binary_input, read_input
    from chakra.fileio.location import Location, is_url, location

#: Each public name's module, imported on first use (:func:`chakra.lazy_exports`).
_MODULE_OF = {
    "AtomicFile": "atomic",
    "AtomicGroup": "atomic",
    "atomic_output": "atomic",
    "copy_local_to": "atomic",
    "open_binary_input": "compressed",
    "read_input": "compressed",
    "Location": "location",
    "is_url": "location",
    "location": "location",
}
__getattr__ = lazy_exports(__name__, _MODULE_OF)

__all__ = [
    "AtomicFile",
    "AtomicGroup",
    "Location",
    "atomic_output",
    "copy_local_to",
    "is_url",
    "location",
    "open_binary_input",
    "read_input",
]
