"""Ingest host execution traces (PyTorch ExecutionTraceObserver) and Kineto device traces.

Both loaders return typed, frozen values (:class:`HostTrace`, :class:`DeviceTrace`) built
straight from the JSON by msgspec, for every PyTorch vintage the project knows.
"""

from chakra.ingest.device_loader import load_device_trace
from chakra.ingest.device_model import (
    DeviceTrace,
    DistributedInfo,
    KinetoArgs,
    KinetoEvent,
    ProfilerStep,
)
from chakra.ingest.host_loader import load_host_trace
from chakra.ingest.host_model import (
    CommAttrs,
    HostAttr,
    HostOp,
    HostTrace,
    OpArgs,
    ProcessGroup,
    TensorRef,
)
from chakra.ingest.vocabulary import GpuOpKind, RuntimeKind

__all__ = [
    "CommAttrs",
    "DeviceTrace",
    "DistributedInfo",
    "GpuOpKind",
    "HostAttr",
    "HostOp",
    "HostTrace",
    "KinetoArgs",
    "KinetoEvent",
    "OpArgs",
    "ProcessGroup",
    "ProfilerStep",
    "RuntimeKind",
    "TensorRef",
    "load_device_trace",
    "load_host_trace",
]
