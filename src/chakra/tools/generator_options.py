"""What :func:`chakra.tools.generator.generate` writes: its options, apart from the
generator (which loads the protobuf schema), so that ``chakra_generator --help`` shows
their defaults without loading it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratorOptions:
    """``runtime_us``: duration of compute nodes; ``tensor_size`` bytes of memory and
    send/recv nodes; ``comm_size`` bytes of collectives; ``all_families`` also writes the
    families ASTRA-sim cannot run (see the module docstring)."""

    num_npus: int = 64
    runtime_us: int = 5
    tensor_size: int = 1024
    comm_size: int = 65536
    all_families: bool = False
