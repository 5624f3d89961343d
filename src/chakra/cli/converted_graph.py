"""What ``chakra_converter`` does with a graph it has written: ``--validate`` before the file
is committed, ``--simulate`` after."""

from __future__ import annotations

from chakra.errors import ChakraError
from chakra.fileio import AtomicGroup


def validate_before_commit(outputs: AtomicGroup, target: str) -> None:
    """Validate the finished temporary of ``target``; an error discards it."""
    from chakra.et.graph_checks import validate_et

    pending = outputs.hand_over()
    outputs.adopt(pending)
    validation = validate_et(pending[0][0])
    if not validation.ok:
        first = validation.problems[0].message
        count = len(validation.problems)
        raise ChakraError(f"{target}: {count} validation problems ({first})")


def print_simulation(target: str) -> None:
    """``--simulate``: replay ``target`` alone and print its makespan (and the measured one)."""
    from chakra.simulate.analysis import log_reference_lines
    from chakra.simulate.result import rank_results
    from chakra.simulate.run import simulate_files

    engine = simulate_files([target])
    log_reference_lines(engine)
    (result,) = rank_results(engine)
    line = f"simulated makespan {result.simulated_makespan_us:,.0f} us"
    if result.measured_makespan_us is not None:
        line += f", measured {result.measured_makespan_us:,.0f} us, error {result.error_pct:+.2f}%"
    print(line)
