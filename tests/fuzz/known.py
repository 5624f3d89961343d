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

KNOWN: dict[str, str] = {
    # --- deep nesting (chakra/ingest, chakra/convert, chakra/tools/timeline.py)
    "*:traceback:RecursionError@chakra/convert/*": _DEEP + " (convert/classify.py: json.loads; "
    "use chakra.ingest.json_input.decode_or_raise)",
    # --- invalid UTF-8 (chakra/ingest/host_model.py, link/et_plus.py, convert writers)
    "pipeline:invalid-output:*": "what trace_link/converter write (see their entries)",
    # --- chakra_converter (chakra/convert)
    "trace_info:unnamed-file:attribute-<q>-of-node-N-holds-*": "chakra_trace_info on a .et "
    "with an attribute of another kind: AttributeKindError names the node, not the file "
    "(et/summary.py)",
    # --- chakra_sim (chakra/simulate)
    "sim:validate-accepts-sim-rejects:*": "chakra_validate (et/validate.py) accepts what "
    "chakra_sim refuses: one of them is wrong",
    "sim:unnamed-file:*": "chakra_sim's SimulationError names 'rank N', not the file",
}


def todo_for(signature: str) -> Optional[str]:
    """What to fix for a failure ``signature`` (None: not a known failure)."""
    for pattern, todo in KNOWN.items():
        if fnmatchcase(signature, pattern):
            return todo
    return None
