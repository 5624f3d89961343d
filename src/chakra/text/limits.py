"""The limits of a text conversion (:mod:`chakra.text.budget`), apart from it (it loads the
protobuf schema), so that ``chakra_converter --help`` shows them without loading it."""

#: The most nodes a file of one NPU may hold. The graph is built in memory as protobuf
#: messages (about 1.6 KB each, so ~1.6 GB and ~6 s here at the cap); far more exhausts the
#: memory, and protobuf's C allocator then crashes the process (SIGSEGV) instead of raising
#: MemoryError: ``--num-passes 100000000`` did.
MAX_NODES_PER_NPU = 1_000_000
#: Default budget of nodes in all files together: 50 million, about 3 GB of ``.et`` at the
#: 55 to 90 bytes a node of the example workloads takes.
DEFAULT_MAX_NODES = 50_000_000
#: Default budget of bytes in all files together: 4 GiB (about a minute and a half of
#: writing at the 50 MB/s this converter writes).
DEFAULT_MAX_OUTPUT_BYTES = 4 << 30
