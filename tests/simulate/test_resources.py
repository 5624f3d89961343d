"""``Resource``: the properties code asks, the labels reports print, and the order they are
listed in (that of the tuples they replaced)."""

from __future__ import annotations

import pytest

from chakra.simulate import build_graph
from chakra.simulate.astra_graph import build_astra_graph
from chakra.simulate.resources import Resource, device_count, display_order, gpu_mask
from tests.simulate.test_engine import node

THREAD, STREAM, OTHER_DEVICE = Resource.thread(3), Resource.stream(0, 7), Resource.stream(1, 7)
SERIAL, CPU, GPU, COMM = (
    Resource.stream(0, "all"),
    *(Resource.slot(n) for n in ("cpu", "gpu", "comm")),
)


@pytest.mark.parametrize(
    ("resource", "host", "gpu", "label", "plot", "track_one", "track_two"),
    [(THREAD, True, False, "thread 3", "thread 3", "thread 3", "thread 3"),
     (STREAM, False, True, "device 0 stream 7", "stream 7", "stream 7", "device 0 stream 7"),
     (OTHER_DEVICE, False, True, "device 1 stream 7", "d1 stream 7", "stream 7",
      "device 1 stream 7"),
     (SERIAL, False, True, "device 0 stream all", "stream all", "stream all",
      "device 0 stream all"),
     (CPU, True, False, "cpu slot", "cpu slot", "cpu slot", "cpu slot"),
     (GPU, False, True, "gpu slot", "gpu slot", "gpu slot", "gpu slot"),
     (COMM, False, False, "comm slot", "comm slot", "comm slot", "comm slot")],
)  # fmt: skip
def test_what_a_resource_is_and_how_it_is_named(
    resource: Resource, host: bool, gpu: bool, label: str, plot: str, track_one: str,
    track_two: str,
) -> None:  # fmt: skip
    assert (resource.is_host, resource.is_gpu) == (host, gpu)
    assert resource.is_thread == (resource.kind == "thread")
    assert resource.is_stream == (resource.kind == "stream")
    assert (resource.label, resource.plot_label) == (label, plot)
    assert (resource.track_label(1), resource.track_label(2)) == (track_one, track_two)


def test_resources_sort_as_the_tuples_they_replaced() -> None:
    as_tuple = {THREAD: ("thread", 3), STREAM: ("stream", 0, 7), OTHER_DEVICE: ("stream", 1, 7),
                Resource.thread(12): ("thread", 12), Resource.stream(0, 13): ("stream", 0, 13),
                CPU: ("slot", "cpu"), GPU: ("slot", "gpu"), COMM: ("slot", "comm")}  # fmt: skip
    mixed = list(as_tuple)
    assert sorted(mixed) == sorted(mixed, key=as_tuple.__getitem__)
    # the plots: threads first, then the rest in that order
    shown = [mixed[k] for k in display_order(mixed)]
    assert shown == sorted(mixed, key=lambda r: (as_tuple[r][0] != "thread", as_tuple[r]))
    assert shown[:2] == [THREAD, Resource.thread(12)]


def test_a_resource_is_a_frozen_value() -> None:
    assert Resource.thread(3) == THREAD and hash(Resource.thread(3)) == hash(THREAD)
    assert len({THREAD, Resource.thread(3), STREAM}) == 2
    with pytest.raises(AttributeError):
        THREAD.number = 4  # type: ignore[misc]


def test_graphs_hold_resources_numbered_in_first_use() -> None:
    nodes = [node(1, 5, tid=2), node(2, 5, (1,), stream=7), node(3, 5, (2,), stream=9),
             node(4, 5, (3,), tid=2)]  # fmt: skip
    graph = build_graph(nodes)
    assert graph.resources == [Resource.thread(2), Resource.stream(0, 7), Resource.stream(0, 9)]
    assert list(graph.resource) == [0, 1, 2, 0]
    assert gpu_mask(graph.resources).tolist() == [False, True, True, False]
    assert device_count(graph.resources) == 1
    serial = build_graph(nodes, serialize_gpu=True)
    assert serial.resources == [Resource.thread(2), SERIAL]
    astra = build_astra_graph(nodes)
    assert astra.resources == [CPU, GPU]
