"""Fuzzing the command-line tools: does bad input always get one error line naming the file,
exit status 1 (2 for usage) and no output, and never a traceback, signal, hang or partial file?

- ``process``: run a tool in a subprocess (``run_tool``, which can also stop it early
  with SIGINT or SIGTERM: ``EarlyStop``) or a forked copy of this process (``fork_tool``,
  several times faster); ``harness``: the verdict on a run (OK, CLEAN_ERROR, INTERRUPTED,
  FAILURE with a signature) and ``run_case``.
- ``mutators`` (JSON trees), ``stream_mutators`` (bytes, gzip, text lines) and
  ``et_mutators`` (``.et`` wire format): structure-aware mutants of small valid seeds;
  ``targets``: the seeds of each format, the tools that read it (a host or Kineto mutant
  also as rank 0 of a healthy job through ``chakra_pipeline -j 2``), ``fuzz_one`` (one case
  in 10 stopped by a signal); ``known``:
  the failure signatures today's code still shows, with what to fix; ``handmade`` and
  ``checks``: the inputs and helpers of the regression tests.
- ``test_regressions*.py``: one named test per reported failure (strict xfail while it
  fails); ``test_mutations.py``: a few dozen derandomized mutants per format;
  ``test_harness.py``: the harness itself.

Long runs::

    CHAKRA_FUZZ_EXAMPLES=5000 CHAKRA_FUZZ_REPORT=fuzz-report \\
        python -m pytest tests/fuzz/test_mutations.py -s
    python -m tests.fuzz.campaign --examples 5000 --time-limit 1800 \\
        --report fuzz.json --save-dir fuzz-cases

(with this checkout's ``src`` on ``PYTHONPATH`` and the repository root as the current
folder). The first fails on signatures ``known`` does not list; the second prints the
throughput and the catalogue of signatures and keeps one reproducer of each.
"""
