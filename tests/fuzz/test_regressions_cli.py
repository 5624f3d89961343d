"""Named regression tests on options and outputs: values an option cannot take, outputs into
missing folders or over the input, archives the integration script cannot open, and runs
that fail part-way (see ``test_regressions.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fuzz import handmade
from tests.fuzz.checks import case, check, convert, out_dir
from tests.fuzz.harness import Case, fork_tool, run_tool

INTEGRATION = "ci_tools/integration_tests.py"


def test_pipeline_max_memory_nan(base: dict[str, Path], tmp_path: Path) -> None:
    out = out_dir(tmp_path)
    run = Case("pipeline", ("--host-trace", str(base["host"]), "--device-trace",
                            str(base["kineto"]), "--output-dir", str(out / "run"), "--no-plot",
                            "--max-memory", "nan"),
               (base["host"], base["kineto"]), (), out, names=("--max-memory",))  # fmt: skip
    check(run)


@pytest.mark.parametrize(
    "plot",
    [
        case("u.xyz", fixed=True),
        case("missing/u.png", fixed=True),
    ],
)  # fmt: skip
def test_sim_plot_path(base: dict[str, Path], tmp_path: Path, plot: str) -> None:
    out = out_dir(tmp_path)
    target = out / plot
    check(Case("sim", (str(base["et"]), "--plot", str(target)), (base["et"],), (target,), out,
               names=("--plot",)))  # fmt: skip


@pytest.mark.parametrize(
    "tool",
    [
        case("converter", fixed=True),
        case("timeline_visualizer", fixed=True),
    ],
)  # fmt: skip
def test_log_filename_in_missing_folder(base: dict[str, Path], tmp_path: Path, tool: str) -> None:
    out = out_dir(tmp_path)
    log = out / "missing" / "log.txt"
    if tool == "converter":
        run = convert(base["et_plus"], out)
        run = Case(run.module, ("--log-filename", str(log), *run.argv), run.inputs, run.outputs,
                   out, names=(str(log),))  # fmt: skip
    else:
        target = out / "timeline.json"
        run = Case(tool, ("--input_filename", str(base["log"]), "--output_filename", str(target),
                          "--num_npus", "2", "--npu_frequency", "1000", "--log_filename",
                          str(log)), (base["log"],), (target,), out, names=(str(log),))  # fmt: skip
    check(run)


def test_visualizer_name_filter_huge_repetition(base: dict[str, Path], tmp_path: Path) -> None:
    out = out_dir(tmp_path)
    target = out / "graph.dot"
    check(Case("visualizer", ("--input_filename", str(base["et"]), "--output_filename",
                              str(target), "--name-filter", "a{4294967296}"),
               (base["et"],), (target,), out, names=("--name-filter",)))  # fmt: skip


@pytest.mark.parametrize(
    ("option", "value"),
    [
        case("--default_runtime", 2**64, id="runtime-2^64", fixed=True),
        case("--default_comm_size", 2**63, id="comm_size-2^63", fixed=True),
        case("--default_tensor_size", 2**70, id="tensor_size-2^70", fixed=True),
    ],
)  # fmt: skip
def test_generator_value_beyond_int64(tmp_path: Path, option: str, value: int) -> None:
    out = out_dir(tmp_path)
    check(Case("generator", ("--num_npus", "2", "--output-dir", str(out), option, str(value)),
               (), (), out, names=(option,)))  # fmt: skip


def test_timeline_visualizer_huge_num_npus(base: dict[str, Path], tmp_path: Path) -> None:
    out = out_dir(tmp_path)
    target = out / "timeline.json"
    run = Case("timeline_visualizer", ("--input_filename", str(base["log"]), "--output_filename",
                                       str(target), "--num_npus", "100000000",
                                       "--npu_frequency", "1000"),
               (base["log"],), (target,), out, timeout_s=10, names=("--num_npus",))  # fmt: skip
    check(run, run_tool)


def test_text_conversion_huge_num_passes(tmp_path: Path) -> None:
    from tests.fuzz.targets import TEXT_WORKLOADS

    out = out_dir(tmp_path)
    workload = TEXT_WORKLOADS / "MICRO.txt"
    run = Case("converter", ("Text", "--input", str(workload), "--output", str(out / "w"),
                             "--num-npus", "2", "--num-passes", "100000000"),
               (workload,), (), out, timeout_s=15, names=("--num-passes",))  # fmt: skip
    check(run, run_tool)


# --- the integration script on damaged archives -------------------------------------------


def _integration(archive: Path, ranks: int) -> Case:
    folder = archive.parent
    return Case(INTEGRATION, ("--tgz_path", str(archive), "--num_ranks", str(ranks),
                              "--tolerance", "0.5", "--expected-from-measured"),
                (archive,), (), folder, names=(archive.stem,))  # fmt: skip


def test_integration_script_truncated_archive(base: dict[str, Path], tmp_path: Path) -> None:
    folder = out_dir(tmp_path)
    kineto1 = base["kineto"].with_name("rank1.kineto.json")
    host1 = base["host"].with_name("rank1.host_et.json")
    data = handmade.bundle(folder / "whole.tgz", [base["host"], base["kineto"], host1, kineto1])
    (folder / "whole.tgz").unlink()
    archive = folder / "cut.tgz"
    archive.write_bytes(data[: len(data) // 2])
    check(_integration(archive, 2), run_tool)


def test_integration_script_pax_header_with_nul(base: dict[str, Path], tmp_path: Path) -> None:
    folder = out_dir(tmp_path)
    archive = handmade.pax_path_with_nul(folder / "pax.tgz", base["host"])
    check(_integration(archive, 1), run_tool)


# --- outputs ------------------------------------------------------------------------------


def test_jsonizer_output_is_its_input(base: dict[str, Path], tmp_path: Path) -> None:
    out = out_dir(tmp_path)
    graph = out / "graph.et"
    shutil.copyfile(base["et"], graph)
    run = Case("jsonizer", ("--input_filename", str(graph), "--output_filename", str(graph)),
               (graph,), (), out)  # fmt: skip
    _, outcome = check(run)
    assert outcome.reason, "status 0 although the output is the input"


def test_generator_failure_leaves_no_files(tmp_path: Path) -> None:
    out = out_dir(tmp_path)
    (out / "REDUCE_SCATTER.1.et").mkdir()  # a later file cannot be written
    check(Case("generator", ("--num_npus", "2", "--output-dir", str(out)), (), (), out))


@pytest.mark.parametrize(
    "how",
    [
        case("jobs-0", fixed=True),
        case("missing-host-dir", fixed=True),
    ],
)  # fmt: skip
def test_link_batch_failure_creates_nothing(
    base: dict[str, Path], tmp_path: Path, how: str
) -> None:
    hosts, devices = tmp_path / "hosts", tmp_path / "devices"
    for folder, source in ((hosts, base["host"]), (devices, base["kineto"])):
        folder.mkdir()
        shutil.copyfile(source, folder / source.name)
    out = out_dir(tmp_path / "work")
    host_dir = hosts if how == "jobs-0" else tmp_path / "missing"
    jobs = "0" if how == "jobs-0" else "1"
    run = Case("trace_link", ("--host-dir", str(host_dir), "--device-dir", str(devices),
                              "--output-dir", str(out / "linked"), "-j", jobs),
               (base["host"], base["kineto"]), (), out, names=("-j", str(host_dir)))  # fmt: skip
    check(run, fork_tool)


def test_converter_validate_failure_leaves_no_output(base: dict[str, Path], tmp_path: Path) -> None:
    check(convert(base["gloo_host"], out_dir(tmp_path), "--validate"))


@pytest.mark.parametrize(
    ("column", "value"),
    [
        case(3, "99999999999999999999", id="compute-time-10^20", fixed=True),
        case(5, "99999999999999999999", id="comm-size-10^20", fixed=True),
    ],
)  # fmt: skip
def test_text_workload_value_beyond_int64(tmp_path: Path, column: int, value: str) -> None:
    from tests.fuzz.targets import TEXT_WORKLOADS

    lines = (TEXT_WORKLOADS / "MODEL.txt").read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if len(line.split()) >= 12)
    tokens = lines[row].split()
    tokens[column - 1] = value
    lines[row] = " ".join(tokens)
    workload = tmp_path / "workload.txt"
    workload.write_text("\n".join(lines) + "\n")
    out = out_dir(tmp_path)
    argv = ("Text", "--input", str(workload), "--output", str(out / "w"), "--num-npus", "2",
            "--num-passes", "1")  # fmt: skip
    check(Case("converter", argv, (workload,), (), out))
