"""Cross-rank agreement: the i-th communication of a process group is the same operation on
every rank; fill what one rank could not know from the peers, report every disagreement."""

from chakra.ranks.agree import Agreement, CommRecord, Disagreement, Fill, agree
from chakra.ranks.files import agree_files, comm_records, patched, require_ends, rewrite_files

__all__ = ["Agreement", "CommRecord", "Disagreement", "Fill", "agree", "agree_files",
           "comm_records", "patched", "require_ends", "rewrite_files"]  # fmt: skip
