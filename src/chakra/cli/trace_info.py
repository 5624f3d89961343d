"""``chakra_trace_info``: what a trace file holds (host ET, Kineto trace or Chakra ET)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, Optional

from chakra.cli.conventions import ToolArgumentParser
from chakra.cli.runner import add_log_level_option, run_tool
from chakra.errors import ChakraError, InputsFailedError

#: What the work imports, loaded once the arguments parse (:func:`~chakra.cli.runner.run_tool`).
LIBRARIES = (
    "msgspec",
    "chakra.et.summary",
    "chakra.ingest.detect",
    "chakra.ingest.host_model",
    "chakra.ingest.summary",
)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="chakra_trace_info",
        description="Load a trace (host ET, Kineto or Chakra ET; gzip or not) and summarise it.",
    )
    parser.add_argument("paths", nargs="+", metavar="FILE", help="trace files")
    parser.add_argument("--json", action="store_true", help="print one JSON object per file")
    add_log_level_option(parser)
    return parser


def summarize(path: str) -> dict[str, Any]:
    """Summary of one file of any supported kind, detected by content, as JSON values."""
    import msgspec  # the library after the arguments parse (a quick --help)

    from chakra.et.summary import summarize_et
    from chakra.ingest.detect import TraceKind, load_json_trace, sniff_kind
    from chakra.ingest.host_model import HostTrace
    from chakra.ingest.summary import summarize_device_trace, summarize_host_trace

    if sniff_kind(path) is TraceKind.CHAKRA_ET:
        return summarize_et(path)
    trace = load_json_trace(path)
    if isinstance(trace, HostTrace):
        return msgspec.to_builtins(summarize_host_trace(trace))
    return msgspec.to_builtins(summarize_device_trace(trace))


def _print(path: str, summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"path": path, **summary}))
        return
    print(path)
    for key, value in summary.items():
        print(f"  {key}: {value}")


def _info(args: argparse.Namespace) -> None:
    """Summarise every file, in order; a file that cannot be read does not stop the others:
    each is reported in one line at the end, and the status is then 1."""
    failed: list[ChakraError] = []
    for path in args.paths:
        try:
            summary = summarize(path)
        except ChakraError as exc:
            failed.append(exc)
            continue
        _print(path, summary, args.json)
    if failed:
        raise InputsFailedError(f"{len(failed)} of {len(args.paths)} files failed", failed)


def main(argv: Optional[Sequence[str]] = None) -> None:
    sys.exit(run_tool(build_parser(), _info, argv, LIBRARIES))


if __name__ == "__main__":
    main()
