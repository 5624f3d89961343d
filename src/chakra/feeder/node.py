"""``FeederNode``: read-only accessors over one ET ``Node``, as the C++ ``ETFeederNode`` has."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

from chakra.et.attributes import attr_value, find_attr, get_bool_attr, get_int_attr, get_str_attr
from chakra.et.schema import NodeType
from chakra.feeder.errors import MissingAttributeError

#: Attributes with an accessor of their own; every other attribute is an "other" attribute
#: (:meth:`FeederNode.has_other_attr`), as in the C++ feeder at HEAD (reference §2.5).
RECOGNISED_ATTRS = frozenset(
    {
        "is_cpu_op",
        "num_ops",
        "tensor_size",
        "comm_type",
        "comm_priority",
        "comm_size",
        "comm_src",
        "comm_dst",
        "comm_tag",
        "pg_name",
    }
)


class FeederNode:
    """One loaded node of an :class:`~chakra.feeder.EtFeeder`.

    Attribute accessors accept any integer kind the writer chose (``int64_val``,
    ``uint64_val``, ...), unlike the C++ feeder which reads one fixed oneof member. Absent
    attributes read as ``False`` (``is_cpu_op``, the C++ HEAD default), ``0`` (numbers) or
    ``""`` (``pg_name`` and the absent inputs/outputs strings). Each accessor scans the node's
    attribute list: O(attributes).
    """

    __slots__ = ("_children", "_loaded", "_unmet", "node")

    def __init__(self, node: Any, loaded: Mapping[int, FeederNode]) -> None:
        #: The underlying ``Node`` message; treat it as read-only (the feeder never mutates it).
        self.node = node
        self._loaded = loaded
        self._children: list[int] = []
        self._unmet = 0  # data dependencies not freed yet

    def __repr__(self) -> str:
        return f"FeederNode(id={self.id}, name={self.name!r})"

    @property
    def id(self) -> int:
        return int(self.node.id)

    @property
    def name(self) -> str:
        return str(self.node.name)

    @property
    def type(self) -> Union[NodeType, int]:
        """The node type as a :class:`NodeType` (a plain int for values the enum lacks)."""
        value = self.node.type
        try:
            return NodeType(value)
        except ValueError:
            return int(value)

    @property
    def runtime(self) -> int:
        """``duration_micros``, in microseconds."""
        return int(self.node.duration_micros)

    @property
    def data_deps(self) -> list[int]:
        return list(self.node.data_deps)

    @property
    def is_cpu_op(self) -> bool:
        return bool(get_bool_attr(self.node, "is_cpu_op", False))

    def _int(self, name: str) -> int:
        return int(get_int_attr(self.node, name, 0))

    @property
    def num_ops(self) -> int:
        return self._int("num_ops")

    @property
    def tensor_size(self) -> int:
        return self._int("tensor_size")

    @property
    def comm_type(self) -> int:
        """The ``comm_type`` attribute (a ``CollectiveCommType`` value), 0 when absent."""
        return self._int("comm_type")

    @property
    def comm_priority(self) -> int:
        return self._int("comm_priority")

    @property
    def comm_size(self) -> int:
        """``comm_size`` in bytes, whichever integer kind it was written with."""
        return self._int("comm_size")

    @property
    def comm_src(self) -> int:
        return self._int("comm_src")

    @property
    def comm_dst(self) -> int:
        return self._int("comm_dst")

    @property
    def comm_tag(self) -> int:
        return self._int("comm_tag")

    @property
    def pg_name(self) -> str:
        return str(get_str_attr(self.node, "pg_name", ""))

    def _io(self, which: str, field: str) -> str:
        node = self.node
        return str(getattr(getattr(node, which), field)) if node.HasField(which) else ""

    @property
    def inputs_values(self) -> str:
        return self._io("inputs", "values")

    @property
    def inputs_shapes(self) -> str:
        return self._io("inputs", "shapes")

    @property
    def inputs_types(self) -> str:
        return self._io("inputs", "types")

    @property
    def outputs_values(self) -> str:
        return self._io("outputs", "values")

    @property
    def outputs_shapes(self) -> str:
        return self._io("outputs", "shapes")

    @property
    def outputs_types(self) -> str:
        return self._io("outputs", "types")

    def has_other_attr(self, name: str) -> bool:
        """Whether the node has attribute ``name`` outside :data:`RECOGNISED_ATTRS`."""
        return name not in RECOGNISED_ATTRS and find_attr(self.node, name) is not None

    def get_other_attr(self, name: str) -> Any:
        """The value of "other" attribute ``name`` (a list for ``*_list`` kinds).

        Raises :class:`MissingAttributeError` naming the attribute and node when absent.
        """
        attr = None if name in RECOGNISED_ATTRS else find_attr(self.node, name)
        if attr is None:
            raise MissingAttributeError(f"node {self.id} has no other attribute {name!r}")
        return attr_value(attr)

    def children(self) -> list[FeederNode]:
        """Loaded nodes with a data dependency on this one, in the order they were linked
        (file order for children read after this node); removed children are left out."""
        loaded = self._loaded
        return [loaded[child] for child in self._children if child in loaded]

    @property
    def children_ids(self) -> list[int]:
        """Ids of every child linked so far, removed or not."""
        return list(self._children)
