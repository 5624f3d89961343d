"""What a synthetic job looks like: seed, size, rank count and the trace vintage to imitate."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Optional

from chakra.errors import SynthOptionsError
from chakra.fileio.json_document import JsonDocument
from chakra.synth.option_values import MAX_OPS_PER_STEP, MAX_RANKS, MAX_STEPS, VINTAGES


@dataclasses.dataclass(frozen=True)
class SynthOptions:
    """Everything that determines a synthetic job; equal options give byte-identical files.

    ``ops_per_step`` is the size knob: the approximate number of GPU ops per rank and step
    (at least one transformer layer is always generated, so small values round up).
    ``host_step`` is the 0-based index of the one profiled step the host ET covers
    (``None``: the host ET covers every step). ``rf_id_in_kineto`` False drops Kineto's
    ``Record function id``; ``flows`` False drops ``ac2g`` flows; ``legacy_host_et`` writes
    the host ET in schema ``1.0.1`` with rf_ids that do not match Kineto (it implies no
    ``Record function id`` in Kineto, as PyTorch of that age wrote). ``integer_timestamps``
    writes whole microseconds instead of 3-decimal floats. ``gzip`` compresses every file.
    ``tied_zero_ops`` precedes some host ops with a 0 us sibling (``aten::lift_fresh``)
    that starts at the same instant, which sorting by (start, longest first) puts out of
    program order (real traces have them). ``pageable_async_copy`` adds, after
    ``loss.item()``, a ``tensor.cpu()`` whose ``cudaMemcpyAsync`` copies to pageable memory
    and so blocks the CPU until the copy ends (real traces have them; the linker takes them
    for host syncs). ``worker_threads`` adds two CPU threads per rank: a data-loader thread
    that prepares each step's batch while the main thread waits for it, and a gloo-like
    worker that runs one asynchronous CPU all_reduce per step (``c10d::allreduce_`` on the
    main thread, ``gloo:all_reduce`` on the worker, a later ``c10d::wait`` on the main thread).

    Hazards of real gloo jobs (each off by default): ``cuda_sync_records`` False (vintage
    ``no_cuda_sync``) drops Kineto's ``cuda_sync`` records, as older profilers wrote, so event
    waits and stream/event syncs cannot be resolved from CUPTI records (the runtime calls
    stay). ``blocking_gloo`` adds two blocking (``async_op=False``) CPU collectives per step,
    run on the gloo worker: a ``gloo:broadcast`` directly under ``ProfilerStep#N`` and a
    ``gloo:all_reduce`` inside a ``## log_metrics ##`` annotation; the main thread's
    ``c10d::`` op returns at once and the thread then blocks until the worker's op ends, a
    wait that is no op but self time of the enclosing op (the truth lists it in
    ``host_waits``). ``unrecorded_gloo_ranks`` lists ranks whose gloo worker runs only
    ``gloo:`` ops, so that their host ET has no thread root for it (the ops keep the main
    thread's ``tid`` attr and parent, as everywhere; Kineto has them on the worker's tid);
    it needs a gloo worker (``worker_threads`` or ``blocking_gloo``). ``stale_host_parents``
    adds DDP's copy of two gradient buckets (``copy_bucket_to_grad`` > ``aten::copy_``, a
    device-to-device copy) on the main thread after backward, and files them and
    ``Optimizer.step`` under the step's last autograd ``evaluate_function`` in the host ET,
    an op of the autograd thread that ended before they began (Kineto and rf_ids unchanged;
    the truth gives that parent as ``stale_host_parent_id``).

    The speed factors record the same program at another speed: every random draw is the
    same, only the times it yields are multiplied (then rounded to whole ns).
    ``gpu_factor`` scales the duration of every kernel, memcpy and memset (not NCCL
    kernels, which last as long as their transfer); ``cpu_factor`` every span on the CPU
    clock (host op work and jitter, idle gaps, thread switches, runtime call durations, the
    wake-up after a blocking call); ``network_factor`` a collective's transfer time
    (latency and bandwidth parts). The launch latency (call end to GPU start) is scaled by
    none of them. Each is a finite number above 0; at 1 (the default) the files are
    byte-identical to a generation without the knob, and :meth:`describe` omits them.
    """

    seed: int = 0
    ranks: int = 2
    steps: int = 2
    ops_per_step: int = 200
    rf_id_in_kineto: bool = True
    flows: bool = True
    legacy_host_et: bool = False
    host_step: Optional[int] = None
    integer_timestamps: bool = False
    gzip: bool = False
    tied_zero_ops: bool = False
    gpu_factor: float = 1.0
    cpu_factor: float = 1.0
    network_factor: float = 1.0
    pageable_async_copy: bool = False
    worker_threads: bool = False
    cuda_sync_records: bool = True
    blocking_gloo: bool = False
    unrecorded_gloo_ranks: tuple[int, ...] = ()
    stale_host_parents: bool = False

    def __post_init__(self) -> None:
        _check_range("seed", self.seed, 0, 2**63 - 1)
        _check_range("ranks", self.ranks, 1, MAX_RANKS)
        _check_range("steps", self.steps, 1, MAX_STEPS)
        _check_range("ops_per_step", self.ops_per_step, 1, MAX_OPS_PER_STEP)
        if self.host_step is not None:
            _check_range("host_step", self.host_step, 0, self.steps - 1)
        for name in SPEED_FACTORS:
            object.__setattr__(self, name, _checked_factor(name, getattr(self, name)))
        ranks = _checked_ranks("unrecorded_gloo_ranks", self.unrecorded_gloo_ranks, self.ranks)
        object.__setattr__(self, "unrecorded_gloo_ranks", ranks)
        if ranks and not self.gloo_worker:
            raise SynthOptionsError(
                "unrecorded_gloo_ranks needs a gloo worker (worker_threads or blocking_gloo)"
            )

    @property
    def gloo_worker(self) -> bool:
        """Whether the ranks have a gloo worker thread (and a data-loader thread id)."""
        return self.worker_threads or self.blocking_gloo

    @property
    def kineto_has_rf_id(self) -> bool:
        """Whether Kineto cpu_ops carry ``Record function id`` (never for the legacy vintage)."""
        return self.rf_id_in_kineto and not self.legacy_host_et

    def vintages(self) -> tuple[str, ...]:
        """The vintage names these options correspond to (``("modern",)`` when none apply)."""
        names = [
            name
            for name, on in (
                ("no_rf_id", not self.rf_id_in_kineto),
                ("no_flows", not self.flows),
                ("legacy_1_0_1", self.legacy_host_et),
                ("tied_zero_ops", self.tied_zero_ops),
                ("no_cuda_sync", not self.cuda_sync_records),
            )
            if on
        ]
        return tuple(names) or ("modern",)

    def describe(self) -> JsonDocument:
        """The options as a JSON-ready mapping (written into every truth file).

        The speed factors appear (all three) only when one of them is not 1, and the fields
        of :data:`_DESCRIBED_WHEN_SET` only when not at their default, so that default options
        describe themselves exactly as before these fields existed.
        """
        described = dataclasses.asdict(self)
        if all(described[name] == 1.0 for name in SPEED_FACTORS):
            for name in SPEED_FACTORS:
                del described[name]
        for name, default in _DESCRIBED_WHEN_SET.items():
            if described[name] == default:
                del described[name]
        if self.unrecorded_gloo_ranks:
            described["unrecorded_gloo_ranks"] = list(self.unrecorded_gloo_ranks)
        described["vintages"] = list(self.vintages())
        return described


#: The :class:`SynthOptions` fields that scale one resource's time.
SPEED_FACTORS = ("gpu_factor", "cpu_factor", "network_factor")
#: Fields :meth:`SynthOptions.describe` leaves out at these (default) values.
_DESCRIBED_WHEN_SET = {
    "pageable_async_copy": False,
    "worker_threads": False,
    "cuda_sync_records": True,
    "blocking_gloo": False,
    "unrecorded_gloo_ranks": (),
    "stale_host_parents": False,
}


def scale_ns(duration_ns: int, factor: float) -> int:
    """``duration_ns`` times ``factor`` rounded to the nearest ns; exactly ``duration_ns``
    when ``factor`` is 1."""
    return duration_ns if factor == 1.0 else round(duration_ns * factor)


def _checked_factor(name: str, value: object) -> float:
    """``value`` as a float when it is a finite number above 0, else one-line error."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or value <= 0:
        raise SynthOptionsError(f"{name} must be a finite number above 0, not {value!r}")
    return float(value)


def _checked_ranks(name: str, value: object, ranks: int) -> tuple[int, ...]:
    """``value`` (an iterable of rank numbers below ``ranks``) as a sorted tuple without
    repeats, else one-line error."""
    try:
        items = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        items = (value,)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < ranks:
            raise SynthOptionsError(f"{name} must list ranks from 0 to {ranks - 1}, not {item!r}")
    return tuple(sorted(set(items)))


def _check_range(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SynthOptionsError(f"{name} must be an integer from {low} to {high}, not {value!r}")


def options_with_vintages(base: SynthOptions, vintages: Iterable[str]) -> SynthOptions:
    """``base`` with the flags of the named vintages switched on (see :data:`VINTAGES`)."""
    changes: dict[str, bool] = {}
    for name in vintages:
        if name not in VINTAGES:
            known = ", ".join(VINTAGES)
            raise SynthOptionsError(f"unknown vintage {name!r}; known vintages: {known}")
        if name == "no_rf_id":
            changes["rf_id_in_kineto"] = False
        elif name == "no_flows":
            changes["flows"] = False
        elif name == "legacy_1_0_1":
            changes["legacy_host_et"] = True
        elif name == "tied_zero_ops":
            changes["tied_zero_ops"] = True
        elif name == "no_cuda_sync":
            changes["cuda_sync_records"] = False
    return dataclasses.replace(base, **changes)
