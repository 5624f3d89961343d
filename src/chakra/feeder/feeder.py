"""``EtFeeder``: hand out the nodes of an ET file in dependency order, streaming it in windows.

A Python mirror of the C++ ``ETFeeder`` (reference §7.6) with its defects fixed (§10.35-38):
a node is issued once (issued ids are tracked, not only the heap); a node read before a parent
waits in a dict keyed by the missing parent id, so each arriving node resolves its waiters in
O(1) + O(waiters); dependencies on ids that never appear are reported at the end of the file
instead of stalling; unknown ids raise :class:`UnknownNodeError`; removal drops a node from the
issuable set; attributes are read from any integer kind.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterator
from typing import Any, Optional

from chakra.errors import PathLike
from chakra.et.reader import EtReader
from chakra.feeder.errors import FeederError, UnknownNodeError
from chakra.feeder.idset import IdSet
from chakra.feeder.node import FeederNode
from chakra.fileio.scoped import Scoped

logger = logging.getLogger(__name__)

#: Default window, in nodes. The C++ feeder uses 4096 x 256 = 1,048,576; a loaded node costs
#: about 1.5 KiB here (protobuf message and wrapper), so that window would hold ~1.6 GB, with
#: no speed gain (benchmarks/feeder_throughput.py). Pass ``window_size=4096 * 256`` for parity.
DEFAULT_WINDOW_SIZE = 65_536


class EtFeeder(Scoped):
    """Stream an ET file and hand out its nodes once their data dependencies are freed.

    Typical simulator loop::

        with EtFeeder(path) as feeder:
            while feeder.has_nodes_to_issue():
                node = feeder.get_next_issuable_node()
                if node is None:
                    ...  # wait for an issued node to complete
                ...  # on completion of node:
                feeder.free_children_nodes(node.id)
                feeder.remove_node(node.id)

    **Windows.** Only loaded-but-not-removed nodes are held. The feeder reads ahead while
    fewer than ``window_size`` nodes are loaded, and beyond that only when nothing is issuable
    and either a loaded node waits for a parent not read yet, or no loaded node waits at all
    (so progress never needs more than the window plus the nodes up to the next issuable one;
    the C++ feeder's "fewer issuable than the window" rule would load a whole chain at once).
    "Smallest id first" applies among the loaded nodes.

    **Dependencies.** A node is issuable when every distinct id in its ``data_deps`` has been
    freed (:meth:`free_children_nodes`), whether that parent was read before or after it, and
    even if the parent was freed and removed before the child was read (freed ids are kept in
    a bitmap, about one bit per id). ``ctrl_deps`` are not considered, as in the C++ feeder.

    **Missing parents.** When the file ends, dependencies on ids that never appeared (or were
    removed without being freed) are listed by :meth:`unresolved_dependencies`; the nodes
    waiting on them and their descendants can never be issued, and :meth:`has_nodes_to_issue`
    does not count them, so a simulation loop ends instead of stalling. Dependency cycles are
    not detected (validate the file with ``chakra.et.graph_checks`` first).

    Errors: :class:`UnknownNodeError` for ids not loaded, :class:`FeederError` for misuse,
    ``EtFormatError``/``FileAccessError`` from the reader, all naming the file.
    """

    def __init__(self, path: PathLike, window_size: int = DEFAULT_WINDOW_SIZE) -> None:
        if window_size < 1:
            raise FeederError(f"{path}: window_size must be at least 1, not {window_size}")
        self.window_size = window_size
        self._reader = EtReader(path)
        self.path = self._reader.path
        #: The file's GlobalMetadata message.
        self.metadata: Any = self._reader.metadata
        self._source: Optional[Iterator[Any]] = iter(self._reader)
        self._nodes: dict[int, FeederNode] = {}
        self._waiting: dict[int, list[int]] = {}  # unread parent id -> loaded children
        self._heap: list[int] = []  # issuable ids; entries not in _queued are stale
        self._queued: set[int] = set()
        self._issued: set[int] = set()  # loaded ids handed out and not pushed back
        self._blocked = 0  # loaded nodes with unfreed dependencies
        self._seen = IdSet()
        self._freed = IdSet()
        self._stranded: set[int] = set()
        self._unresolved: dict[int, tuple[int, ...]] = {}
        self.nodes_read = 0
        self._fill()

    # -- reading -----------------------------------------------------------------------------

    @property
    def at_end(self) -> bool:
        """Whether the whole file has been read."""
        return self._source is None

    def _wants_more(self) -> bool:
        if len(self._nodes) < self.window_size:
            return True
        return not self._queued and (bool(self._waiting) or self._blocked == 0)

    def _fill(self) -> None:
        source = self._source
        if source is None:
            return
        load = self._load
        wants_more = self._wants_more
        while wants_more():
            message = next(source, None)
            if message is None:
                self._finish()
                return
            load(message)

    def _load(self, message: Any) -> None:
        node_id = int(message.id)
        if node_id in self._seen:
            raise FeederError(f"{self.path}: node id {node_id} appears twice in the file")
        self._seen.add(node_id)
        self.nodes_read += 1
        nodes = self._nodes
        node = FeederNode(message, nodes)
        nodes[node_id] = node
        unmet = 0
        freed = self._freed
        for parent_id in dict.fromkeys(message.data_deps):
            if parent_id in freed:
                continue
            unmet += 1
            parent = nodes.get(parent_id)
            if parent is not None:
                parent._children.append(node_id)
            else:
                self._waiting.setdefault(parent_id, []).append(node_id)
        waiters = self._waiting.pop(node_id, None)
        if waiters is not None:
            node._children.extend(waiters)
        node._unmet = unmet
        if unmet:
            self._blocked += 1
        else:
            self._enqueue(node_id)

    def _finish(self) -> None:
        """End of file: record dependencies that can never be met and the nodes they strand."""
        self._source = None
        self._reader.close()
        if not self._waiting:
            return
        self._unresolved = {parent: tuple(kids) for parent, kids in self._waiting.items()}
        self._waiting = {}
        stack = [kid for kids in self._unresolved.values() for kid in kids]
        stranded = self._stranded
        while stack:
            node_id = stack.pop()
            node = self._nodes.get(node_id)
            if node is None or node_id in stranded:
                continue
            stranded.add(node_id)
            stack.extend(node._children)
        logger.warning(
            "%s: %d dependencies on node ids never read (e.g. %d); %d nodes cannot be issued",
            self.path,
            len(self._unresolved),
            next(iter(self._unresolved)),
            len(stranded),
        )

    # -- queries -----------------------------------------------------------------------------

    def _enqueue(self, node_id: int) -> None:
        if node_id not in self._queued:
            self._queued.add(node_id)
            heapq.heappush(self._heap, node_id)

    def _unknown(self, node_id: int, action: str) -> UnknownNodeError:
        state = "was removed" if node_id in self._seen else "has not been read"
        if node_id not in self._seen and self.at_end:
            state = "is not in the file"
        return UnknownNodeError(
            f"{self.path}: cannot {action} node {node_id}: it {state} (not loaded)", node_id
        )

    def lookup_node(self, node_id: int) -> FeederNode:
        """The loaded node ``node_id``; :class:`UnknownNodeError` if not loaded or removed."""
        node = self._nodes.get(node_id)
        if node is None:
            raise self._unknown(node_id, "look up")
        return node

    def get_next_issuable_node(self) -> Optional[FeederNode]:
        """Hand out the smallest-id loaded node whose dependencies are all freed, or None.

        Each node is handed out once (again only after :meth:`push_back_issuable_node`).
        O(log n) amortised.
        """
        if not self._queued:
            self._fill()
        heap, queued = self._heap, self._queued
        while heap:
            node_id = heapq.heappop(heap)
            if node_id in queued:
                queued.remove(node_id)
                self._issued.add(node_id)
                return self._nodes[node_id]
        return None

    def push_back_issuable_node(self, node_id: int) -> None:
        """Make a handed-out node issuable again (it could not be issued yet).

        A node already issuable is left as it is; a node whose dependencies are not all freed
        raises :class:`FeederError`, an unknown id :class:`UnknownNodeError`.
        """
        node = self._nodes.get(node_id)
        if node is None:
            raise self._unknown(node_id, "push back")
        if node._unmet:
            raise FeederError(
                f"{self.path}: cannot push back node {node_id}: "
                f"{node._unmet} of its dependencies are not freed"
            )
        self._issued.discard(node_id)
        self._enqueue(node_id)

    def free_children_nodes(self, node_id: int) -> None:
        """Mark ``node_id`` complete: each child loses this dependency and becomes issuable
        when it has none left. Children read later see it freed too. A second call for the
        same id does nothing; an id never loaded raises :class:`UnknownNodeError`.
        O(children)."""
        if node_id in self._freed:
            return
        node = self._nodes.get(node_id)
        if node is None:
            raise self._unknown(node_id, "free the children of")
        self._freed.add(node_id)
        nodes = self._nodes
        for child_id in node._children:
            child = nodes.get(child_id)
            if child is None or child._unmet == 0:
                continue
            child._unmet -= 1
            if child._unmet == 0:
                self._blocked -= 1
                self._enqueue(child_id)

    def remove_node(self, node_id: int) -> None:
        """Forget node ``node_id`` (also from the issuable set) and read ahead if the window
        has room. Free its children first: children of a node removed unfreed never become
        issuable. An id not loaded raises :class:`UnknownNodeError`."""
        node = self._nodes.pop(node_id, None)
        if node is None:
            raise self._unknown(node_id, "remove")
        if node._unmet:
            self._blocked -= 1
        self._queued.discard(node_id)
        self._issued.discard(node_id)
        self._stranded.discard(node_id)
        if len(self._heap) > 2 * len(self._queued) + 64:
            self._heap = sorted(self._queued)  # drop stale entries
        self._fill()

    def has_nodes_to_issue(self) -> bool:
        """Whether nodes remain: unread, or loaded and not removed, except nodes that wait
        (directly or not) on a dependency that will never be met."""
        self._fill()
        return not self.at_end or len(self._nodes) > len(self._stranded)

    def unresolved_dependencies(self) -> dict[int, tuple[int, ...]]:
        """After the end of file: ``{missing parent id: ids of the loaded nodes waiting on it}``
        for dependencies never read (or removed without being freed). Empty before the end."""
        return dict(self._unresolved)

    def stranded_nodes(self) -> frozenset[int]:
        """Loaded ids that can never be issued because of :meth:`unresolved_dependencies`."""
        return frozenset(self._stranded)

    @property
    def loaded_count(self) -> int:
        """Nodes loaded and not removed (bounded by the window, see the class docs)."""
        return len(self._nodes)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._reader.close()
        self._source = None

    def finish(self, succeeded: bool) -> None:
        self.close()
