"""The streaming input path on tiny data (issue 16): datasets written part by part, a reader with
bounded memory, batches and their order, and every bad input named - in seconds."""

from __future__ import annotations

import errno
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from accel_choice import records
from accel_choice.io import streaming_data as sd
from accel_choice.io.config_checks import ConfigError, _check_scale
from accel_choice.measure import scale, streaming
from accel_choice.records.scale import StreamedDataset

FEATURES, GROUP = 8, 256


def grow(folder: Path, fmt: str, rows: int, part_rows: int = 1024, **kwargs) -> StreamedDataset:
    return sd.grow(folder, fmt, rows, features=FEATURES, row_group_rows=GROUP, part_rows=part_rows, seed=3, **kwargs)


def epoch(folder: Path, workers: int = 0, batch_size: int = 128, seed: int = 1, epoch_index: int = 0, **kwargs):
    data = streaming.StreamedBatches(folder, batch_size, seed=seed, **kwargs)
    data.epoch = epoch_index
    return [(x.clone(), y.clone()) for x, y in streaming.loader(data, workers)]


def rows_of(batches) -> np.ndarray:
    """Every row of an epoch (features and target), sorted: the epoch's contents whatever its order."""
    matrix = torch.cat([torch.cat([x, y[:, None]], 1) for x, y in batches]).numpy()
    return matrix[np.lexsort(matrix.T[::-1])]


# --- writing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_a_dataset_is_written_in_whole_parts_and_grows_without_rewriting_them(tmp_path, fmt) -> None:
    small = grow(tmp_path / fmt, fmt, 1536)
    assert [(p.name, p.rows, p.units) for p in small.parts] == [
        (f"part-00000.{fmt}", 1024, 4),
        (f"part-00001.{fmt}", 512, 2),
    ]
    first = (tmp_path / fmt / small.parts[0].name).read_bytes()
    large = grow(tmp_path / fmt, fmt, 4096)
    assert large.rows == 4096 and [p.rows for p in large.parts] == [1024, 512, 1024, 1024, 512]
    # Grown in steps or written at once: the same rows in the same places.
    at_once = grow(tmp_path / "once", fmt, 4096)
    assert [p.rows for p in at_once.parts] == [1024] * 4
    grown, once = epoch(tmp_path / fmt, shuffle=False), epoch(tmp_path / "once", shuffle=False)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(grown, once))
    # A part is never rewritten, the manifest lists every whole part and no temporary file is left.
    assert (tmp_path / fmt / small.parts[0].name).read_bytes() == first
    assert records.read(StreamedDataset, tmp_path / fmt / sd.MANIFEST) == large
    assert not list((tmp_path / fmt).glob(".*partial"))
    with pytest.raises(ValueError, match="whole row groups"):
        grow(tmp_path / "odd", fmt, 1000)


def test_both_formats_hold_the_same_seeded_rows(tmp_path) -> None:
    grow(tmp_path / "p", "parquet", 2048)
    grow(tmp_path / "n", "npy", 2048)
    parquet, npy = rows_of(epoch(tmp_path / "p")), rows_of(epoch(tmp_path / "n"))
    assert parquet.shape == (2048, FEATURES + 1) and np.array_equal(parquet, npy)
    assert set(np.unique(parquet[:, -1])) == {0.0, 1.0}


def test_sizes_are_whole_row_groups_and_the_disk_is_checked_before_writing(tmp_path, monkeypatch) -> None:
    assert sd.rows_for(0.001, 255, 64) == round(1e6 / 1024 / 64) * 64
    assert sd.rows_for(1e-9, 8, 256) == 256  # at least one row group
    assert sd.free_space_problem(tmp_path / "new" / "folder", 0.001, 8, 256) is None
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(sd.shutil, "disk_usage", lambda path: usage._replace(free=5 * 10**9))
    problem = sd.free_space_problem(tmp_path / "scratch", 48, 255, 65536)
    assert problem is not None and "config key scale.sizes_gb: the largest dataset (48 GB) needs about 49." in problem
    assert "which has 5.0 GB free" in problem and str(tmp_path / "scratch") in problem
    config = {"sizes_gb": [0.1, 48], "row_group_rows": 65536, "batch_size": 512, "enabled": True}
    with pytest.raises(ConfigError, match="which has 5.0 GB free"):
        _check_scale({**config, "scratch": str(tmp_path / "scratch"), "features": 255})
    _check_scale({**config, "enabled": False, "scratch": str(tmp_path), "features": 255})  # off: not checked
    with pytest.raises(ConfigError, match="scale.sizes_gb: \\[0.4, 0.1\\] does not grow"):
        _check_scale({**config, "sizes_gb": [0.4, 0.1], "enabled": False, "scratch": "x", "features": 8})
    with pytest.raises(ConfigError, match="scale.row_group_rows: 1000 is not a multiple of scale.batch_size 512"):
        _check_scale({**config, "row_group_rows": 1000, "enabled": False, "scratch": "x", "features": 8})


def test_removing_a_dataset_deletes_only_what_this_workflow_wrote(tmp_path) -> None:
    grow(tmp_path / "npy", "npy", 2048)
    (tmp_path / "npy" / "part-00002.npy").write_bytes(b"renamed, not yet listed")
    (tmp_path / "npy" / ".part-00003.npy.partial").write_bytes(b"unfinished")
    (tmp_path / "npy" / "notes.txt").write_text("the user's")
    sd.remove(tmp_path / "npy")
    assert [p.name for p in (tmp_path / "npy").iterdir()] == ["notes.txt"]
    (tmp_path / "npy" / "notes.txt").unlink()
    sd.remove(tmp_path / "npy")
    assert not (tmp_path / "npy").exists()
    # Without this workflow's manifest, parts of the same names are someone else's: only unfinished parts go.
    other = tmp_path / "parquet"
    other.mkdir()
    (other / "part-00000.parquet").write_bytes(b"someone's data")
    (other / ".part-00001.parquet.partial").write_bytes(b"unfinished")
    sd.remove(other)
    assert [p.name for p in other.iterdir()] == ["part-00000.parquet"]
    (other / sd.MANIFEST).write_text("{}")
    with pytest.raises(sd.ScaleDataError, match="not a dataset manifest of this workflow's; .* left as it is"):
        sd.remove(other)
    assert (other / "part-00000.parquet").exists()


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_a_full_disk_while_writing_leaves_only_whole_listed_parts(tmp_path, fmt, monkeypatch) -> None:
    grow(tmp_path, fmt, 1024)
    writer = "_write_parquet" if fmt == "parquet" else "_write_npy"

    def full(path, *args, **kwargs):
        Path(path).write_bytes(b"half a part")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sd, writer, full)
    with pytest.raises(sd.ScaleDataError, match=r"disk full while writing .*part-00001\.(parquet|npy) \(") as caught:
        grow(tmp_path, fmt, 2048)
    assert "1 whole part(s) of 1,024 rows remain" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == [sd.MANIFEST, f"part-00000.{fmt}"]
    assert records.read(StreamedDataset, tmp_path / sd.MANIFEST).rows == 1024


# --- reading: batches, order, memory ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_an_epoch_sees_every_row_once_in_a_seeded_order(tmp_path, fmt) -> None:
    grow(tmp_path, fmt, 2048 + 512)  # 10 row groups in 3 parts
    first = epoch(tmp_path)
    assert [len(x) for x, _ in first] == [128] * 20 and all(x.dtype == torch.float32 for x, _ in first)
    assert np.array_equal(rows_of(first), rows_of(epoch(tmp_path, shuffle=False)))
    again, other_seed, next_epoch = epoch(tmp_path), epoch(tmp_path, seed=2), epoch(tmp_path, epoch_index=1)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(first, again))  # the same seed: the same order
    assert not torch.equal(first[0][0], other_seed[0][0]) and not torch.equal(first[0][0], next_epoch[0][0])
    in_order = epoch(tmp_path, shuffle=False)
    assert torch.equal(torch.cat([x for x, _ in in_order])[:256], _part_rows(tmp_path, fmt)[:256])


def _part_rows(folder: Path, fmt: str) -> torch.Tensor:
    if fmt == "npy":
        return torch.from_numpy(np.load(folder / "part-00000.npy")[:, :FEATURES])
    table = pq.read_table(folder / "part-00000.parquet")
    return torch.from_numpy(np.column_stack([table.column(j).to_numpy() for j in range(FEATURES)]))


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_workers_read_the_same_batches_in_a_fixed_order_for_their_count(tmp_path, fmt) -> None:
    grow(tmp_path, fmt, 2048)
    alone = epoch(tmp_path, workers=0)
    two, two_again = epoch(tmp_path, workers=2), epoch(tmp_path, workers=2)
    key = lambda batches: sorted(x.sum().item() for x, _ in batches)  # noqa: E731
    assert key(alone) == key(two) and np.array_equal(rows_of(alone), rows_of(two))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(two, two_again))
    # One unit's batches stay in one worker: two workers interleave the units of the epoch's order.
    units = GROUP // 128
    assert torch.equal(two[0][0], alone[0][0]) and torch.equal(two[1][0], alone[units][0])


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_a_thread_pool_reads_ahead_in_the_order_without_workers(tmp_path, fmt) -> None:
    grow(tmp_path, fmt, 2048)
    alone = epoch(tmp_path, workers=0)
    data = streaming.StreamedBatches(tmp_path, 128, seed=1)
    pooled = [(x.clone(), y.clone()) for x, y in streaming.threaded(data, 3)]
    assert len(pooled) == len(alone) and all(
        torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(alone, pooled)
    )


def test_the_pool_threads_never_parse_an_npy_header(tmp_path, monkeypatch) -> None:
    # numpy parses a header with ast.literal_eval, which CPython 3.11 can fail in several threads at
    # once (python/cpython#106905: "AST constructor recursion depth mismatch", seen in this suite):
    # headers are read once, where the dataset is opened
    grow(tmp_path, "npy", 4096)
    readers: list[bool] = []

    def recording(parse):
        def parsed(handle, *args, **kwargs):
            readers.append(threading.current_thread() is threading.main_thread())
            return parse(handle, *args, **kwargs)

        return parsed

    for name in ("read_array_header_1_0", "read_array_header_2_0"):
        monkeypatch.setattr(np.lib.format, name, recording(getattr(np.lib.format, name)))
    data = streaming.StreamedBatches(tmp_path, 128, seed=1)
    opened = len(readers)
    rows = sum(len(x) for x, _ in streaming.threaded(data, 3))
    assert rows == 4096 and opened >= len({path for path, _, _ in data.units}) >= 2
    assert readers == [True] * opened  # every header parsed in this thread, none during the epoch


def test_the_first_rows_of_a_dataset_are_a_smaller_dataset(tmp_path) -> None:
    grow(tmp_path, "parquet", 2048)
    part = streaming.StreamedBatches(tmp_path, 128, seed=1, rows=768)
    assert part.rows == 768 and len(part.units) == 3
    with pytest.raises(sd.ScaleDataError, match="holds 2,048 rows, 4,096 were asked for"):
        streaming.StreamedBatches(tmp_path, 128, seed=1, rows=4096)


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_memory_stays_bounded_while_a_dataset_many_times_a_unit_is_read(tmp_path, fmt) -> None:
    features, group = 255, 1024  # 1 MiB row groups, 48 of them, a part each (a reader that keeps
    # something per part, as one keeping its Parquet files open did, grows with the parts)
    sd.grow(tmp_path, fmt, 48 * group, features=features, row_group_rows=group, part_rows=group, seed=3)
    data = streaming.StreamedBatches(tmp_path, 512, seed=1)
    for _ in streaming.loader(data, 0):  # once, so every import and allocation of a pass is made
        pass
    scale.reset_peak_rss()
    before = scale.peak_rss_bytes()
    seen = sum(len(x) for x, _ in streaming.loader(data, 0))
    grown = scale.peak_rss_bytes() - before
    assert seen == 48 * group
    # The file is 48 MiB; a pass holds one unit (1 MiB decoded, a shuffled copy, its batches), not the file.
    assert grown < 12 * 2**20, f"peak RSS grew by {grown / 2**20:.1f} MiB reading a 48 MiB file"


# --- reading: bad input named ------------------------------------------------------------------------


def test_a_part_written_with_another_schema_is_named(tmp_path) -> None:
    grow(tmp_path, "parquet", 2048)
    other = pa.table(
        {
            **{f"f{i:03d}": pa.array(np.zeros(1024), pa.float64()) for i in range(FEATURES)},
            "target": pa.array(np.zeros(1024, np.int8)),
        }
    )
    part = tmp_path / "part-00001.parquet"
    pq.write_table(other, part, row_group_size=GROUP)
    manifest = json.loads((tmp_path / sd.MANIFEST).read_text())
    manifest["parts"][1]["bytes"] = part.stat().st_size
    (tmp_path / sd.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(
        sd.ScaleDataError,
        match=r"part-00001\.parquet: its row groups have another schema than the "
        r"dataset's: column 0 is f000 \(double\), expected f000 \(float\)",
    ):
        streaming.StreamedBatches(tmp_path, 128, seed=1)
    # The parts before it hold whole rows: reading only them works.
    assert streaming.StreamedBatches(tmp_path, 128, seed=1, rows=1024).rows == 1024


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_a_truncated_or_missing_part_is_named_before_any_read(tmp_path, fmt) -> None:
    grow(tmp_path, fmt, 2048)
    part = tmp_path / f"part-00001.{fmt}"
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    with pytest.raises(
        sd.ScaleDataError,
        match=rf"part-00001\.{fmt}: {len(data) // 2:,} bytes, dataset.json "
        rf"recorded {len(data):,}: truncated since it was written",
    ):
        streaming.StreamedBatches(tmp_path, 128, seed=1)
    part.unlink()
    with pytest.raises(sd.ScaleDataError, match="listed in dataset.json but missing"):
        streaming.StreamedBatches(tmp_path, 128, seed=1)
    (tmp_path / sd.MANIFEST).unlink()
    with pytest.raises(sd.ScaleDataError, match="no dataset.json; not a dataset written by this workflow"):
        streaming.StreamedBatches(tmp_path, 128, seed=1)


def test_a_damaged_parquet_footer_of_the_recorded_size_is_named(tmp_path) -> None:
    grow(tmp_path, "parquet", 1024)
    part = tmp_path / "part-00000.parquet"
    data = bytearray(part.read_bytes())
    data[-8:] = b"\0" * 8  # the footer's length and magic
    part.write_bytes(bytes(data))
    with pytest.raises(sd.ScaleDataError, match=r"part-00000\.parquet: not a readable Parquet file"):
        streaming.StreamedBatches(tmp_path, 128, seed=1)
