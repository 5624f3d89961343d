"""Import paths of the reference Chakra kept for scripts written against it (see
:mod:`chakra.schema.protobuf.et_def_pb2`)."""
