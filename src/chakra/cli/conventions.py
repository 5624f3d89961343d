"""The command-line convention every tool follows, and the option groups several tools share.

* Options are spelled with hyphens (``--num-npus``). ``--help`` and the usage line show each
  option by its first spelling only: the reference's underscore spellings
  (``--input_filename``, ``--num_npus``) and other older names (``--out-dir``,
  ``--pytorch-et-file``) are further spellings of the same option, accepted and not shown.
* No prefix matching (``allow_abbrev=False``): an option is taken only by a spelling it
  declares, so a new option can never change what an abbreviation meant. The reference's
  tools accepted prefixes (``chakra_jsonizer --input X --output Y``, the reference's own
  scripts); those that the reference's documentation and scripts use are declared.
* A bad option value is a usage error: one line after the usage line, status 2
  (:func:`chakra.cli.runner.run_tool`).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, NoReturn, Optional, Union

from chakra.cli import arg_types

OptionContainer = Union[argparse.ArgumentParser, argparse._ArgumentGroup]


class PrimarySpellingFormatter(argparse.HelpFormatter):
    """Shows an option by its short spelling (``-j``) and its first long one (``--jobs``),
    leaving out the other long spellings, which stay accepted."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        shown = shown_spellings(action.option_strings)
        if shown == action.option_strings:
            return super()._format_action_invocation(action)
        import copy  # only when help is shown: start-up

        trimmed = copy.copy(action)
        trimmed.option_strings = shown
        return super()._format_action_invocation(trimmed)


def shown_spellings(option_strings: list[str]) -> list[str]:
    """The spellings ``--help`` shows: every short one and the first long one."""
    short = [s for s in option_strings if not s.startswith("--")]
    long = [s for s in option_strings if s.startswith("--")]
    return short + long[:1]


class ToolArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that follows the convention: no prefix matching, options shown
    by their primary spelling. A subcommand's parser (``add_subparsers().add_parser``) is of
    this class too, with the same defaults."""

    def __init__(self, prog: Optional[str] = None, **options: Any) -> None:
        options.setdefault("allow_abbrev", False)
        options.setdefault("formatter_class", PrimarySpellingFormatter)
        super().__init__(prog, **options)

    def error(self, message: str) -> NoReturn:
        """argparse's error, options named by their shown spellings (argparse names an
        option by all of them: ``--num-npus/--num_npus``)."""
        for action in self._actions:
            if len(action.option_strings) > 1:
                every, shown = action.option_strings, shown_spellings(action.option_strings)
                message = message.replace("/".join(every), "/".join(shown))
        super().error(message)


def add_file_options(container: OptionContainer, input_help: str, output_help: str) -> None:
    """A one-file tool's ``--input`` and ``--output`` (the reference's ``--input_filename``
    and ``--output_filename``), both required."""
    for name, what in (("input", input_help), ("output", output_help)):
        container.add_argument(f"--{name}", f"--{name}_filename", dest=name, required=True,
                               metavar="FILE", help=what)  # fmt: skip


def add_rank_trace_options(
    container: OptionContainer, path_type: Callable[[str], Any] = str
) -> None:
    """One rank's two traces, ``--host-trace`` and ``--device-trace`` (also the reference's
    spellings: ``--chakra-host-trace``/``--chakra-device-trace`` of its newer
    ``chakra_trace_link``, ``--pytorch-et-file``/``--kineto-file`` of its older one)."""
    container.add_argument(
        "--host-trace",
        "--chakra-host-trace",
        "--pytorch-et-file",
        dest="host_trace",
        type=path_type,
        help="one rank: host execution trace (.json or .json.gz; the reference's "
        "--chakra-host-trace); without it, the host side is made from the Kineto trace "
        "alone (its CPU ops; no tensor data dependencies)",
    )
    container.add_argument(
        "--device-trace",
        "--chakra-device-trace",
        "--kineto-file",
        dest="device_trace",
        type=path_type,
        help="one rank: Kineto trace of the same run (.json or .json.gz; the reference's "
        "--chakra-device-trace)",
    )


def check_rank_trace_kinds(host_trace: Any, device_trace: Any, tool: str) -> None:
    """Refuse (one line naming what the file is) a ``--device-trace`` that is not a Kineto
    trace, or a ``--host-trace``, when given, that is not a host ET or ET+."""
    from chakra.ingest.detect import TraceKind, require_kind

    require_kind(device_trace, (TraceKind.KINETO,), tool, "a Kineto trace as --device-trace")
    if host_trace is not None:
        require_kind(host_trace, (TraceKind.HOST_ET, TraceKind.ET_PLUS), tool,
                     "a host execution trace as --host-trace")  # fmt: skip


def add_profiler_step_option(container: OptionContainer) -> None:
    """``--profiler-step N|last|all``: which ``ProfilerStep#N`` to link."""
    container.add_argument(
        "--profiler-step",
        type=arg_types.profiler_step,
        help="link only ProfilerStep#N's window; 'last' the last step, 'all' every step "
        "(default: all with a host trace; the last, the steady state, from a Kineto trace "
        "alone)",
    )
