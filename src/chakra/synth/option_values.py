"""The values of ``chakra_synth``'s options that its ``--help`` shows, apart from
:mod:`chakra.synth.options` (which uses them), so that the help loads nothing more."""

MAX_RANKS = 64
MAX_OPS_PER_STEP = 10_000_000
MAX_STEPS = 1_000_000

#: Vintage names accepted by :func:`options_with_vintages` and the CLI, with what they change.
VINTAGES = {
    "modern": "PyTorch 2.x as described (the default; combines with nothing, changes nothing)",
    "no_rf_id": "Kineto cpu_ops have no 'Record function id' (External id still present)",
    "no_flows": "no ac2g flow events in Kineto",
    "legacy_1_0_1": "host ET in schema 1.0.1 layout, host rf_ids unrelated to Kineto ids",
    "tied_zero_ops": "some host ops have a 0 us sibling that starts at the same instant",
    "no_cuda_sync": "Kineto has no cuda_sync records (event waits and syncs unresolvable)",
}
