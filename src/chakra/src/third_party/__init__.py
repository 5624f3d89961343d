"""``chakra.src.third_party``: see :mod:`chakra.src.third_party.utils.protolib`."""
