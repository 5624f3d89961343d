"""The values of the tools' options that their ``--help`` shows, apart from the modules that
use them (they load the protobuf schema, or more), so that the help loads none of those."""

#: The input formats of :func:`chakra.tools.log_timeline.timeline`.
INPUT_FORMATS = ("astra-sim", "chakra-sim")
#: The defaults of :class:`chakra.tools.generator.GeneratorOptions`: NPUs, the duration of
#: compute nodes (µs), the bytes of memory and send/recv nodes, and of collectives.
GENERATOR_NUM_NPUS = 64
GENERATOR_RUNTIME_US = 5
GENERATOR_TENSOR_SIZE = 1024
GENERATOR_COMM_SIZE = 65536
#: Most nodes drawn unless --max-nodes says otherwise: Graphviz's layout time grows fast
#: with size (a training step's first 1,000 nodes take 0.3 s, 1,500 take 3.6 s and 2,000
#: over a minute), so rendered formats get the smaller limit.
DEFAULT_MAX_NODES = 2000
DEFAULT_MAX_RENDERED_NODES = 1000
