"""Import paths of the reference Chakra (``chakra.src...``) kept for scripts written against
it; only :mod:`chakra.src.third_party.utils.protolib` is provided."""
