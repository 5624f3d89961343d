"""Which Kineto thread each replay thread is: the host ET numbers its threads (``tid`` 1, 2,
...), Kineto records the operating system's thread id and often a name (``pt_autograd_0``).
The ET+ keeps the pairing (``chakra_link.threads``) so that a timeline can name its tracks
as the profile did."""

from __future__ import annotations

from collections import Counter, defaultdict

from chakra.ingest.et_plus_model import RecordedThread
from chakra.link.linked_trace import LinkedTrace


def thread_map(linked: LinkedTrace) -> list[RecordedThread]:
    """Per replay thread (the host ET's ``tid``, or the one a host op was moved to: its
    ``ran_under`` thread), the Kineto thread most of its matched ops ran on, with the name
    Kineto gave it ("" when none); sorted by ``tid``. Threads with no matched op are left
    out."""
    votes: dict[int, Counter] = defaultdict(Counter)
    for op in linked.host.ops:
        match = linked.matches.get(op.id)
        if match is None:
            continue
        moved = linked.ran_under.get(op.id)
        votes[op.tid if moved is None else moved[1]][match.thread] += 1
    names = {(pid, tid): name for pid, tid, name in linked.device.thread_names}
    out = []
    for tid in sorted(votes):
        (pid, os_tid), _ = max(votes[tid].items(), key=lambda item: (item[1], str(item[0])))
        out.append(RecordedThread(tid, pid, os_tid, names.get((pid, os_tid), "")))
    return out
