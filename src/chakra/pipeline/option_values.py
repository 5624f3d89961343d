"""The values of ``chakra_pipeline``'s options that its ``--help`` shows, apart from the
modules that use them (they load numpy, protobuf and msgspec), so that the help loads none
of those."""

#: The default ``PREFIX`` of the ``.et`` files: ASTRA-sim loads ``PREFIX.<rank>.et``.
ET_PREFIX = "workload"
#: The ASTRA-sim profiles (:mod:`chakra.pipeline.astra_profile`): the full graphs, or their
#: fold.
PROFILES = ("full", "fold")
#: ``--timeline-ranks`` (:mod:`chakra.pipeline.timeline_file`): every rank up to
#: ``ALL_RANKS_UP_TO``, else the slowest, median and fastest (a 64-rank timeline of every
#: rank was 349 MB); or every rank
TIMELINE_AUTO, TIMELINE_ALL = "auto", "all"
