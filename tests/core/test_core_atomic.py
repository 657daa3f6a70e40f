"""write_atomic: files are complete or absent, and an old file survives a failed rewrite."""

from __future__ import annotations

import pytest

from geplug.atomic import write_atomic


def test_the_file_appears_complete(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "out.bin"
    write_atomic(target, lambda fh: fh.write(b"payload"))
    assert target.read_bytes() == b"payload"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def broken(fh) -> None:  # type: ignore[no-untyped-def]
        fh.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, broken)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
