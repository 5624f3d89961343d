"""Reading whole inputs: gzip inflated into one buffer (peak ~1x its size) with the same
results and the same errors as ``gzip``, plain files read once."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from chakra.errors import FileAccessError, TraceFormatError
from chakra.fileio import open_binary_input, read_input
from chakra.fileio.compressed import MIN_INFLATE_BUDGET_BYTES, _ClosingGzipFile, inflate_budget

CONTENT = (
    b'{"traceEvents": [' + b",".join(b'{"ph": "X", "ts": %d}' % i for i in range(5000)) + b"]}"
)


def gzip_error(path: Path) -> str:
    """The message ``read_input`` gave before it inflated into one buffer."""
    with pytest.raises((OSError, EOFError, zlib.error)) as info, gzip.open(path, "rb") as stream:
        stream.read()
    return f"{path}: corrupt or truncated gzip data ({info.value})"


@pytest.mark.parametrize(
    "packed",
    [
        gzip.compress(CONTENT),
        gzip.compress(CONTENT[:1000]) + gzip.compress(CONTENT[1000:]),  # two members
        gzip.compress(CONTENT[:-100]) + gzip.compress(CONTENT[-100:]),  # a short last member
        gzip.compress(CONTENT) + b"\0" * 7,  # zero padding after the member
        gzip.compress(b""),
    ],
    ids=["one-member", "two-members", "short-last-member", "zero-padding", "empty"],
)
def test_gzip_reads_as_gzip_does(tmp_path: Path, packed: bytes) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(packed)
    data = read_input(path)
    assert type(data) is bytes
    assert data == gzip.decompress(packed)
    assert read_input(path, 10) == gzip.decompress(packed)[:10]


def test_plain_file_reads_whole_or_its_start(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(CONTENT)
    assert read_input(path) == CONTENT
    assert read_input(path, 16) == CONTENT[:16]


def _corrupt_crc(packed: bytes) -> bytes:
    return packed[:-8] + bytes([packed[-8] ^ 1]) + packed[-7:]


def _corrupt_size(packed: bytes) -> bytes:
    return packed[:-4] + (len(CONTENT) + 1).to_bytes(4, "little")


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p[:-6],  # truncated trailer
        lambda p: p[: len(p) // 2],  # truncated deflate stream
        _corrupt_crc,
        _corrupt_size,
        lambda p: p + b"garbage!",  # trailing data that is not a gzip member
        lambda p: p[:10] + b"\xff" * 40 + p[50:],  # corrupt deflate data
    ],
    ids=["truncated-trailer", "truncated-stream", "crc", "size", "trailing-garbage", "deflate"],
)
def test_damaged_gzip_gives_the_same_one_line_error(tmp_path: Path, damage) -> None:
    path = tmp_path / "bad.json.gz"
    path.write_bytes(damage(gzip.compress(CONTENT)))
    with pytest.raises(TraceFormatError) as info:
        read_input(path)
    assert str(info.value) == gzip_error(path)
    assert "\n" not in str(info.value)


def test_an_implausible_size_trailer_is_not_believed(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(CONTENT) + gzip.compress(b"x"))  # last ISIZE: 1
    assert read_input(path) == CONTENT + b"x"


PEAK_SCRIPT = """
import sys
from chakra.fileio import read_input
from chakra.fileio.compressed import _ClosingGzipFile

def peak():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) * 1024

before = peak()
data = read_input(sys.argv[1])
print((peak() - before) / len(data))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("packed", [True, False], ids=["gzip", "plain"])
@pytest.mark.slow
def test_reading_peaks_at_about_the_content_size(tmp_path: Path, packed: bool) -> None:
    content = b'{"name": "aten::mm", "ts": 1234567},\n' * (3 << 20)  # 111 MiB
    path = tmp_path / ("big.json.gz" if packed else "big.json")
    path.write_bytes(gzip.compress(content, compresslevel=1) if packed else content)
    del content
    result = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(path)],
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert float(result.stdout) < 1.3, result.stdout  # was ~2.0 (chunks joined)


def test_a_gzip_reader_over_a_url_stream_closes_it() -> None:
    source = io.BytesIO(gzip.compress(b"x"))
    with _ClosingGzipFile(source, "memory://x.gz") as stream:  # type: ignore[arg-type]
        assert stream.read() == b"x"
    assert source.closed


def _bomb(path: Path, inflated_mib: int, byte: bytes = b" ") -> Path:
    """A gzip file of ``inflated_mib`` MiB of one byte (about 1000:1)."""
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(inflated_mib):
            out.write(byte * 2**20)
    return path


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_after_its_budget(tmp_path: Path) -> None:
    path = _bomb(tmp_path / "bomb.json.gz", 256)
    budget = inflate_budget(path.stat().st_size)
    assert budget == MIN_INFLATE_BUDGET_BYTES  # 200x a ~250 KB file is under the floor
    with pytest.raises(TraceFormatError, match="inflates to more than 67,108,864 bytes"):
        read_input(path)
    stream = open_binary_input(path).stream
    with stream, pytest.raises(TraceFormatError, match=str(path.name)):
        while stream.read(2**20):
            pass


def test_the_budget_grows_with_the_compressed_size_and_can_be_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert inflate_budget(10**9) == 200 * 10**9
    assert inflate_budget(None) == MIN_INFLATE_BUDGET_BYTES
    path = _bomb(tmp_path / "bomb.json.gz", 80)
    monkeypatch.setenv("CHAKRA_MAX_INFLATED_BYTES", str(100 * 2**20))
    assert len(read_input(path)) == 80 * 2**20
    monkeypatch.setenv("CHAKRA_MAX_INFLATED_BYTES", "lots")
    with pytest.raises(FileAccessError, match="CHAKRA_MAX_INFLATED_BYTES"):
        read_input(path)
