"""Failure signatures today's code still shows under fuzzing: the TODO list of the fixes.

Each pattern (``fnmatch``, on :attr:`~tests.fuzz.harness.Outcome.signature`, which reads
``<tool>:<kind>[:<exception>@<chakra file>:<function> | :<detail>]``) says what to fix and
where. The mutation tests let a listed failure pass and fail on any other; when a fix lands,
remove its entries (a pattern that no longer matches anything is harmless, but stale).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Optional

_DEEP = ("JSON nested ~1,000+ deep: msgspec/json raise RecursionError; catch it where the "
         "document is decoded and raise TraceFormatError naming the file")  # fmt: skip
_UTF8 = ("invalid UTF-8 inside a host ET string (inputs/outputs values or types) is passed "
         "through undecoded: decode_json's lazy msgspec.Raw fields fail later, or reach the "
         "writers")  # fmt: skip
_SIM_READ = ("chakra/simulate/model.py:_read_nodes (and astra_graph.py) take attribute values "
             "and ids as they come: int() of a string or list, str / float, ids >= 2^63 into "
             "int64 arrays; check kinds and ranges, raise SimulationError naming the "
             "file")  # fmt: skip

KNOWN: dict[str, str] = {
    # --- deep nesting (chakra/ingest, chakra/convert, chakra/tools/timeline.py)
    "*:traceback:RecursionError@*": _DEEP,
    # --- invalid UTF-8 (chakra/ingest/host_model.py, link/et_plus.py, convert writers)
    "*:traceback:DecodeError@chakra/ingest/host_model.py:*": _UTF8,
    "*:traceback:DecodeError@chakra/convert/converter.py:*": _UTF8 + " (ET+ to chakra_sim)",
    "trace_link:invalid-output:JSONDecodeError": _UTF8 + ": link/et_plus.py writes it raw, so "
    "the ET+ is not JSON",
    "converter:invalid-output:EtFormatError": "the .et written does not parse: strings with "
    "invalid UTF-8 (see above) or timestamps of 2^64 and more (convert/nodes.py)",
    "pipeline:invalid-output:*": "what trace_link/converter write (see their entries)",
    "pipeline:output-on-error": "chakra_pipeline makes --output-dir (and writes the ranks "
    "done) before a bad input fails the run (pipeline/run.py)",
    # --- chakra_converter (chakra/convert)
    "*:traceback:OverflowError@chakra/convert/*": "ids >= 2^63 / timestamps of 1e308 in ET+: "
    "convert/segments.py:_own_time and nodes.py:_exact_duration overflow; check ranges",
    "*:traceback:TypeError@chakra/ingest/host_comms.py:parse_process_groups": "the process-"
    "group table input of '## process_group:init ##' is not a list of strings",
    "*:traceback:TypeError@chakra/convert/classify.py:*": "a process group's 'ranks' not a "
    "list of ints (convert/classify.py)",
    "*:traceback:ValueError@chakra/convert/classify.py:process_groups": "a 5,000-digit number "
    "in the process-group table: json.loads hits the int-string limit (ValueError)",
    "trace_info:unnamed-file:attribute-<q>-of-node-N-holds-*": "chakra_trace_info on a .et "
    "with an attribute of another kind: AttributeKindError names the node, not the file "
    "(et/summary.py)",
    "converter:invalid-output:missing_attr": "a send/recv whose peer is unknown (no --rank, or "
    "a broken process-group table) is written without comm_dst/comm_src: chakra_validate "
    "rejects the .et; refuse, or leave it out with a warning",
    "converter:output-on-error": "--validate finds problems after the .et is in place: "
    "status 1 but the .et stays (cli/converter.py: validate before committing, or remove it)",
    "*:traceback:TypeError@chakra/ingest/host_model.py:*": "host ET inputs/outputs fields "
    "(values, shapes, types) of another JSON type: ingest/host_model.py iterates them as "
    "lists; decode them into typed structs or check",
    "*:traceback:OverflowError@chakra/ingest/*": "a process-group table with sizes/ranks of "
    "2^63 and more (ingest/host_comms.py:members builds range(group_size))",
    "*:unnamed-file:cannot-store-*": "a host ET header (start_ts, finish_ts, pid) of "
    "2^64 and more fails when the .et metadata is written: AttributeKindError names the "
    "attribute, not the file; check header ranges on reading (ingest/host_loader.py)",
    "converter:traceback:ValueError@chakra/text/*": "Text: a compute time or size of 2^64 and "
    "more reaches protobuf (text/graph.py:comp); check ranges in text/workload.py",
    "converter:unnamed-file:num_npus-must-be-at-least-*": "Text: --num-npus < 1 is a usage "
    "error: status 2 with the usage line (chakra/text/convert.py, cli/converter.py)",
    "converter:unnamed-file:num_passes-must-be-at-least-*": "Text: --num-passes < 1 is a usage "
    "error: status 2 with the usage line",
    # --- chakra_sim (chakra/simulate)
    "sim:validate-accepts-sim-rejects:*": "chakra_validate (et/validate.py) accepts what "
    "chakra_sim refuses: one of them is wrong",
    "sim:unnamed-file:*": "chakra_sim's SimulationError names 'rank N', not the file",
    # --- chakra_timeline_visualizer (chakra/tools/timeline.py)
    "timeline_visualizer:invalid-output:ValueError": "NaN/Infinity (or 5,000-digit floats) in "
    "a chakra-sim trace are passed through: the output is not JSON; refuse non-finite numbers",
}


def todo_for(signature: str) -> Optional[str]:
    """What to fix for a failure ``signature`` (None: not a known failure)."""
    for pattern, todo in KNOWN.items():
        if fnmatchcase(signature, pattern):
            return todo
    return None
