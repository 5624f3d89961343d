"""``chakra.src.third_party.utils``: see :mod:`chakra.src.third_party.utils.protolib`."""
