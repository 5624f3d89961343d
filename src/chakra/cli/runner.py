"""What every command-line tool shares: logging set-up and turning errors into one line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Callable, Optional

from chakra.errors import ChakraError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def add_log_level_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        dest="log_level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="how much to report on stderr (default: INFO)",
    )


def run_tool(
    parser: argparse.ArgumentParser,
    action: Callable[[argparse.Namespace], None],
    argv: Optional[Sequence[str]] = None,
) -> int:
    """Parse ``argv``, configure logging, run ``action``; return the exit status.

    A :class:`ChakraError` becomes one line ``<prog>: error: <message>`` on stderr and status
    1; Ctrl-C gives status 130. Argument errors exit with status 2 (argparse).
    """
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(args, "log_level", "INFO"),
        format=f"{parser.prog}: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        action(args)
    except ChakraError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
    return 0
