"""The checks of a pipeline run before any work: every input is there, and no output would
overwrite one (same path, hard or symbolic link)."""

from __future__ import annotations

from chakra.errors import FileAccessError
from chakra.fileio.guard import refuse_overwriting_inputs
from chakra.fileio.location import Location, join, missing
from chakra.link.batch import RankPair
from chakra.pipeline.outputs import PAGE, PLOT, REPORT, TIMELINE, TIMELINE_GZ
from chakra.pipeline.resume import comm_groups_name, rank_outputs


def check_inputs(ranks: list[RankPair]) -> None:
    """Raise FileAccessError naming the first missing input (and how many are missing)."""
    inputs = {files.host: ("host", files.rank) for files in ranks if files.host is not None}
    inputs.update({files.device: ("Kineto", files.rank) for files in ranks})
    absent = missing(list(inputs))
    if absent:
        kind, rank = inputs[absent[0]]
        more = f"; {len(absent) - 1} more inputs are missing" if len(absent) > 1 else ""
        raise FileAccessError(f"{absent[0]}: no such file (the {kind} trace of rank {rank}){more}")


def refuse_overwriting(ranks: list[RankPair], folder: Location, et_prefix: str) -> None:
    """Raise when an output of the run would overwrite one of its inputs."""
    names = [TIMELINE, TIMELINE_GZ, PLOT, REPORT, PAGE, comm_groups_name(et_prefix)]
    outputs = [join(folder, name) for name in names]
    for files in ranks:
        outputs.extend(rank_outputs(folder, files.rank, et_prefix))
    refuse_overwriting_inputs(outputs, [path for r in ranks for path in r.inputs])
