"""The pipeline's default what-if scenarios as text, apart from :mod:`chakra.simulate.scenarios`
(which parses them, and loads numpy), so that ``chakra_pipeline --help`` lists them without
loading it."""

from typing import NamedTuple


class ScenarioText(NamedTuple):
    """A scenario as ``--what-if NAME=RULES`` gives it, and what it means."""

    name: str
    rules: str  # comma-separated, as chakra_sim --scale takes each
    description: str


#: What a performance engineer asks first, in the classes of ``ScaleRule``: ``gpu`` every
#: op on a GPU stream (collective kernels too, hence ``comm=2`` to keep the network's time,
#: as tests/simulate/test_what_if_truth.py checks against a recording), ``comm`` every
#: communication op, ``cpu`` every op off the GPU; ``delay`` and ``idle`` the measured time
#: the graph does not explain.
DEFAULT_SCENARIO_TEXTS = (
    ScenarioText("GPU compute 2x faster", "gpu=0.5,comm=2",
             "GPU kernels, memcpys and memsets take half their time; communication keeps its "
             "own (comm=2 undoes gpu=0.5 on collective kernels)"),
    ScenarioText("communication 2x faster", "comm=0.5",
             "every collective, send and receive takes half its time"),
    ScenarioText("CPU 2x faster", "cpu=0.5",
             "every op off the GPU (host ops, and CPU collectives such as gloo's) takes half "
             "its time"),
    ScenarioText("no unexplained time", "delay=0,idle=0",
             "[delay] and [idle] nodes (measured time the graph does not explain) take none: "
             "the model-only makespan"),
)  # fmt: skip
