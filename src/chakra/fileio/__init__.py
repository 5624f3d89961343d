"""File plumbing shared by every stage: atomic outputs and gzip-transparent inputs."""

from chakra.fileio.atomic import AtomicFile, atomic_output
from chakra.fileio.compressed import open_binary_input, read_input

__all__ = ["AtomicFile", "atomic_output", "open_binary_input", "read_input"]
