"""How many nodes :func:`chakra.tools.visualize.visualize` draws by default, apart from
it (it loads the protobuf schema), so that ``chakra_visualizer --help`` shows them without
loading it."""

#: Most nodes drawn unless --max-nodes says otherwise: Graphviz's layout time grows fast
#: with size (a training step's first 1,000 nodes take 0.3 s, 1,500 take 3.6 s and 2,000
#: over a minute), so rendered formats get the smaller limit.
DEFAULT_MAX_NODES = 2000
DEFAULT_MAX_RENDERED_NODES = 1000
