"""Counting on Dask (subword.distributed): a LocalCluster of 2 worker processes on loopback.

The count must equal the single-process count exactly, also when a worker is killed while it holds
tasks (Dask reruns them on the other worker or on the restarted one).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

import corpora  # noqa: E402
from subword import distributed as sd  # noqa: E402
from subword.counts import count_words  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """~1.5 MB of the built-in corpus, with a last line without its newline (the ranges must keep it)."""
    with open(corpora.builtin_corpus(), "rb") as fh:
        data = fh.read(1_500_000)
    path = tmp_path_factory.mktemp("dask") / "corpus.txt"
    path.write_bytes(data[:data.rindex(b"\n")] + b"\n tail-without-newline")
    return path


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       host="127.0.0.1")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def single(path: Path, like: str):
    with open(path, encoding="utf-8", newline="") as fh:
        return count_words(fh, like=like)


@pytest.mark.parametrize("chunk", [1, 4099, 150_000])
def test_byte_ranges_partition_the_lines(corpus, chunk):
    if chunk == 1:
        path = corpus.with_name("small.txt")
        path.write_bytes(b"ab\n\ncd\r\nlast")  # cut at every byte, empty line included
    else:
        path = corpus
    got = [line for s, e in sd.byte_ranges(path, chunk) for line in sd._range_lines(path, s, e, "strict")]
    with open(path, encoding="utf-8", newline="") as fh:
        assert got == list(fh)


@pytest.mark.parametrize("like", ["byte-bpe", "wordpiece"])
def test_cluster_count_equals_single_process(corpus, client, like):
    got = sd.count_words([corpus], client, like=like, chunk_bytes=200_000)
    want = single(corpus, like)
    assert len(got.inputs) == 8
    assert got.words() == want.words()
    assert (got.lines, got.bytes, got.occurrences) == (want.lines, want.bytes, want.occurrences)


def test_a_worker_killed_mid_task_changes_nothing(corpus, client):
    want = single(corpus, "byte-bpe")
    pids = client.run(os.getpid)
    victim, pid = sorted(pids.items())[0]
    seen: dict[str, list[str]] = {}

    def kill_when_busy() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            busy = client.processing().get(victim)
            if busy:
                seen["tasks"] = list(busy)
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.002)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    got = sd.count_words([corpus], client, like="byte-bpe", chunk_bytes=50_000)
    killer.join()
    assert seen.get("tasks"), "the worker was killed while it held tasks"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert got.words() == want.words()
    assert (got.lines, got.bytes) == (want.lines, want.bytes)


def test_an_unreachable_scheduler_is_a_clear_error_within_the_timeout():
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 2 s"):
        sd.connect("tcp://127.0.0.1:9", timeout=2)
    assert time.monotonic() - started < 15


def test_a_compressed_file_is_one_task_counted_whole(corpus, tmp_path):
    import gzip

    gz = tmp_path / "corpus.txt.gz"
    gz.write_bytes(gzip.compress(corpus.read_bytes()))
    assert sd.byte_ranges(gz, 1000) == [(0, gz.stat().st_size)]
    got = sd.count_range(str(gz), 0, gz.stat().st_size, sd.pipeline_for("bpe"))
    assert got.words() == single(corpus, "bpe").words()


def test_the_cli_counts_on_the_cluster(corpus, client, tmp_path):
    from click.testing import CliRunner

    from cli.main import cli
    from subword.counts import WordCounts

    out = tmp_path / "dask.swc"
    r = CliRunner().invoke(cli, ["count", "--dask", client.scheduler.address, str(corpus), "--for", "bpe",
                                 "--chunk-size", "300k", "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    tasks = -(-corpus.stat().st_size // 300_000)
    assert f"{tasks} tasks on tcp://127.0.0.1" in r.output
    assert WordCounts.load(out).words() == single(corpus, "bpe").words()
