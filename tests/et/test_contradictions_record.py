"""The GlobalMetadata record of dependencies left out as contradicting the measured times."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.errors import EtFormatError
from chakra.et import EtReader, GlobalMetadata, set_attr, write_et
from chakra.et.contradictions import get_contradictions, set_contradictions


def test_counts_round_trip_through_a_file_kinds_sorted_zeros_left_out(tmp_path: Path) -> None:
    metadata = GlobalMetadata()
    set_contradictions(metadata, {"stream_order": 1, "host_sync": 2, "launch": 0})
    path = tmp_path / "a.et"
    write_et(path, metadata, [])
    with EtReader(path) as reader:
        assert get_contradictions(reader.metadata, path) == {"host_sync": 2, "stream_order": 1}
        attr = [a for a in reader.metadata.attr if a.name == "contradictions"]
    assert [a.string_val for a in attr] == ['{"host_sync":2,"stream_order":1}']


def test_none_recorded_is_an_empty_object_and_no_record_is_none() -> None:
    metadata = GlobalMetadata()
    assert get_contradictions(metadata, "a.et") is None
    set_contradictions(metadata, {})
    assert get_contradictions(metadata, "a.et") == {}


@pytest.mark.parametrize("text", ["[1]", '{"host_sync": -1}', '{"host_sync": true}', "{", "3"])
def test_a_malformed_record_is_an_et_format_error(text: str) -> None:
    metadata = GlobalMetadata()
    set_attr(metadata, "contradictions", text, "string_val")
    with pytest.raises(EtFormatError, match=r"^a\.et: the GlobalMetadata's 'contradictions' "):
        get_contradictions(metadata, "a.et")
