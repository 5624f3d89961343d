"""chakra: link, convert and simulate ML execution traces (Chakra ET compatible).

The packages, bottom up (each imports only from its own layer or those below; checked by
tests/test_house_rules.py):

- plumbing: :mod:`chakra.errors` (every exception), :mod:`chakra.fileio` (atomic outputs,
  gzip-by-content inputs, URLs, archives), :mod:`chakra.progress`, :mod:`chakra.workers`;
- formats: :mod:`chakra.et` (Chakra ET protobuf: reader, writer, attributes, validation),
  :mod:`chakra.ingest` (host ET and Kineto readers), :mod:`chakra.text` (ASTRA-sim text
  workloads), and the reference's import paths (``chakra.schema``, ``chakra.src``);
- the pipeline's stages, in order: :mod:`chakra.link` (host ET + Kineto -> ET+),
  :mod:`chakra.convert` (ET+ or host ET -> Chakra ET), :mod:`chakra.simulate` (replay);
- results: :mod:`chakra.ranks` (cross-rank agreement), :mod:`chakra.views` (views of a run);
- the whole job and the companions: :mod:`chakra.pipeline`, :mod:`chakra.synth` (synthetic
  traces with ground truth), :mod:`chakra.feeder` (ET feeder API), :mod:`chakra.tools`
  (generator, visualizers, validation across files);
- :mod:`chakra.cli`: the command-line tools, thin.

Each package's ``__init__`` lists its public API (``from chakra.link import link_traces``).
"""

__version__ = "0.1.0"
