"""File plumbing shared by every stage: atomic outputs and gzip-transparent inputs, at local
paths or at URLs (``s3://...``, through fsspec when installed)."""

from chakra.fileio.atomic import AtomicFile, AtomicGroup, atomic_output, copy_local_to
from chakra.fileio.compressed import open_binary_input, read_input
from chakra.fileio.location import Location, is_url, location

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
