"""``chakra.schema.protobuf``: the reference's home of the generated ``et_def_pb2``."""
