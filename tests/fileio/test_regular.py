"""open_regular: a regular file opens (blocking reads after the non-blocking open); a FIFO
with no writer, a device and a folder are refused without blocking."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from chakra.errors import FileAccessError
from chakra.fileio.regular import open_regular, open_regular_text


def test_a_regular_file_reads_whole(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\r\nb\n" * 1000)
    with open_regular(path) as stream:
        assert os.get_blocking(stream.fileno())
        assert stream.read() == b"a\r\nb\n" * 1000
    with open_regular_text(path) as text:
        assert text.read() == "a\nb\n" * 1000


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_without_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileAccessError, match=r"p\.fifo: a FIFO \(named pipe\), not a regular"):
        open_regular(fifo)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused() -> None:
    with pytest.raises(FileAccessError, match=r"^/dev/zero: a character device, not a regular"):
        open_regular("/dev/zero")


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises((FileAccessError, OSError)) as info:
            open_regular(path)
    if isinstance(info.value, FileAccessError):  # some systems cannot even open a socket
        assert "a socket, not a regular file" in str(info.value)


def test_a_folder_and_a_missing_file_raise_what_open_raises(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")
