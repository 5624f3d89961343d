"""Host execution trace JSON (schema 1.1.1-chakra.0.0.4, or the legacy 1.0.1 layout), streamed.

Nodes are written when they finish (post-order, as PyTorch's observer does); thread roots
when first used; the process root last.
"""

from __future__ import annotations

from typing import IO

from chakra.synth.jsonstream import ArrayWriter
from chakra.synth.options import SynthOptions
from chakra.synth.records import CollectiveCall, EtNode, HostOpRecord, RankIdentity
from chakra.synth.vocabulary import (
    COLLECTIVES,
    LEGACY_PROCESS_ROOT,
    LEGACY_SCHEMA,
    LEGACY_THREAD_ROOT,
    MODERN_PROCESS_ROOT,
    MODERN_SCHEMA,
    MODERN_THREAD_ROOT,
)

_EMPTY = {"values": [], "shapes": [], "types": [], "strides": []}


def _strides(shape: tuple) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


class _Tensors:
    """Hands out tensor and storage ids for the tensor arguments of written nodes."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.next_id = 10

    def tensor(self, shape: tuple, itemsize: int) -> list:
        numel = 1
        for size in shape:
            numel *= size
        tensor_id = self.next_id
        self.next_id += 2
        return [tensor_id, tensor_id + 1, 0, numel, itemsize, self.device]


def _args(tensors: _Tensors, args: tuple) -> tuple[list, list, list, list]:
    """values, shapes, types, strides of an op's arguments (see :data:`transformer.Arg`)."""
    values, shapes, types, strides = [], [], [], []
    for kind, payload in args:
        types.append(kind)
        if kind.startswith("Tensor("):
            values.append(tensors.tensor(payload, 8 if "long" in kind else 4))
            shapes.append(list(payload))
            strides.append(_strides(payload))
        elif kind.startswith("GenericList[Tensor"):
            values.append([tensors.tensor(shape, 4) for shape in payload])
            shapes.append([list(shape) for shape in payload])
            strides.append([_strides(shape) for shape in payload])
        else:
            values.append(payload)
            shapes.append([[] for _ in payload] if isinstance(payload, list) else [])
            strides.append([])
    return values, shapes, types, strides


def _comm_attrs(call: CollectiveCall) -> list[dict]:
    pairs = (
        ("collective_name", "string", COLLECTIVES[call.kind].collective_name),
        ("dtype", "string", "Float"),
        ("in_msg_nelems", "uint64", call.in_nelems),
        ("out_msg_nelems", "uint64", call.out_nelems),
        ("in_split_size", "string", "[]"),
        ("out_split_size", "string", "[]"),
        ("global_rank_start", "uint64", call.ranks[0]),
        ("global_rank_stride", "uint64", 1),
        ("pg_name", "string", call.pg.name),
        ("pg_desc", "string", call.pg.desc),
        ("pg_size", "uint64", len(call.ranks)),
    )
    return [{"name": name, "type": kind, "value": value} for name, kind, value in pairs]


def pg_address(identity: RankIdentity, group_name: str) -> int:
    """The pointer-like number a 1.0.1 host ET records for a process group: PyTorch wrote
    the ProcessGroup object's address, different on every rank (and in every run)."""
    index = next(i for i, g in enumerate(identity.groups) if g.name == group_name)
    return 0x7F00_0000_0000 + (identity.pid << 20) + (identity.rank << 16) + 0x9D40 + index * 0x1A8


def legacy_comm_inputs(call: CollectiveCall, identity: RankIdentity) -> tuple:
    """``record_param_comms`` arguments in the 1.0.1 layout: [tensors, seq, pg address,
    rank in the group, collective name, in splits, out splits, group size]."""
    return (
        ("GenericList[Tensor(float)]", ((call.in_nelems,),)),
        ("Int", call.seq),
        ("Int", pg_address(identity, call.pg.name)),
        ("Int", call.ranks.index(identity.rank)),
        ("String", COLLECTIVES[call.kind].collective_name),
        ("GenericList[Int]", []),
        ("GenericList[Int]", []),
        ("Int", len(call.ranks)),
    )


class HostEtWriter:
    """Writes one rank's host ET to ``stream`` (binary). Call :meth:`close` with the end time."""

    def __init__(self, stream: IO[bytes], options: SynthOptions, identity: RankIdentity):
        self._stream = stream
        self._legacy = options.legacy_host_et
        self._identity = identity
        self._tensors = _Tensors(f"cuda:{identity.device}")
        header = (
            f'{{\n  "schema": "{LEGACY_SCHEMA if self._legacy else MODERN_SCHEMA}", '
            f'"pid": {identity.pid}, "time": "2024-05-22 17:15:{options.seed % 60:02d}", '
            f'"start_ts": {identity.start_ns // 1_000_000},\n  "nodes": '
        )
        stream.write(header.encode())
        self._nodes = ArrayWriter(stream)
        self._nodes.open()

    def host_op(self, record: HostOpRecord) -> None:
        if record.host_id is None:
            return
        action = record.action
        seq_id = action.seq if action.fwd_thread == 0 or action.backward_of >= 0 else -1
        fields = {
            "rf_id": record.et_rf_id, "fw_parent": record.fw_parent, "seq_id": seq_id,
            "scope": action.scope, "tid": record.thread + 1,
            "fw_tid": 1 if action.backward_of >= 0 else 0, "op_schema": action.schema,
        }  # fmt: skip
        comm = action.comm if action.name == "record_param_comms" else None
        positional = action.inputs
        if self._legacy and comm is not None:
            positional = legacy_comm_inputs(comm, self._identity)
        inputs = _args(self._tensors, positional)
        first_tensor = next((arg for arg in action.inputs if "Tensor" in arg[0]), None)
        outputs = _args(self._tensors, (first_tensor,) if first_tensor else ())
        self._write(
            record.host_id,
            action.name,
            record.et_parent,
            fields,
            inputs,
            outputs,
            comm,
        )

    def et_node(self, node: EtNode) -> None:
        names = {
            "thread": LEGACY_THREAD_ROOT if self._legacy else MODERN_THREAD_ROOT,
            "process": LEGACY_PROCESS_ROOT if self._legacy else MODERN_PROCESS_ROOT,
        }
        fields = {"rf_id": node.et_rf_id, "fw_parent": 0, "seq_id": -1, "scope": node.scope,
                  "tid": node.et_tid, "fw_tid": 0, "op_schema": ""}  # fmt: skip
        inputs = _args(self._tensors, node.inputs)
        self._write(
            node.host_id,
            names.get(node.name, node.name),
            node.parent,
            fields,
            inputs,
            ([], [], [], []),
            None,
        )

    def _write(self, node_id: int, name: str, parent: int, fields: dict, inputs: tuple,
               outputs: tuple, comm: object) -> None:  # fmt: skip
        if self._legacy:
            node = {"name": name, "id": node_id, "parent": parent, **fields,
                    "inputs": inputs[0], "input_shapes": inputs[1], "input_types": inputs[2],
                    "outputs": outputs[0], "output_shapes": outputs[1],
                    "output_types": outputs[2]}  # fmt: skip
        else:
            attrs = [
                {"name": key, "type": _ATTR_TYPES[key], "value": value}
                for key, value in fields.items()
            ]
            attrs.extend(_PT2_ATTRS)
            if comm is not None:
                attrs.extend(_comm_attrs(comm))
            node = {
                "id": node_id,
                "name": name,
                "ctrl_deps": parent,
                "inputs": dict(zip(_KEYS, inputs)),
                "outputs": dict(zip(_KEYS, outputs)),
                "attrs": attrs,
            }
        self._nodes.write(node)

    def close(self, end_ns: int) -> None:
        self._nodes.close()
        self._stream.write(f',\n  "finish_ts": {end_ns // 1_000_000}\n}}\n'.encode())


_KEYS = ("values", "shapes", "types", "strides")
_ATTR_TYPES = {"rf_id": "uint64", "fw_parent": "uint64", "seq_id": "int64", "scope": "uint64",
               "tid": "uint64", "fw_tid": "uint64", "op_schema": "string"}  # fmt: skip
_PT2_ATTRS = tuple(
    {"name": name, "type": "string", "value": ""}
    for name in ("kernel_backend", "kernel_file", "tensor_range")
)
