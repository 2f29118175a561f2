"""Small, quick measurements of why Kafka is fast, taken on kafkalab on the reader's machine.

Theory of operation
-------------------
Chapter 15 of the book claims that batching, compression, sequential I/O, the page cache,
``sendfile``, sparse indexes and partitions make Kafka fast, and checks each claim with a
stopwatch. Every function here takes one measurement of one claim and returns what it measured
as plain data (a frozen dataclass); :mod:`kafkalab.viz.fast` draws it. The book picks small
default sizes so the whole chapter runs in seconds on a loaded two-core machine; every size is
a parameter a reader can raise.

Three rules keep the figures honest on a shared machine:

* **Side by side.** The two things compared run in the same call, one right after the other,
  on the same data (the same file, the same records), so a burst of load from elsewhere slows
  both. The book compares *ratios* and only draws conclusions from large ones.
* **Best of a few.** Each timing is the fastest of ``repeats`` runs (:func:`best_seconds`): a
  run can only be slowed down by other jobs, never sped up, so the minimum is the closest to
  the cost of the work itself.
* **Say what was not measured.** Where the operating system decides (is this page cached? did
  ``posix_fadvise`` drop it?), the result carries what happened, e.g.
  :attr:`PageCacheRun.dropped`, instead of assuming it.

Worked example: :func:`batching` appends 10,000 records of 100-byte values to a fresh log,
once as 10,000 batches of one record and once as 10 batches of 1,000. One record alone in a
v2 batch costs 61 bytes of batch header plus its own 109 bytes (170 bytes on disk); in a batch
of 1,000 the header is shared and a record costs about 111 bytes. The time per record falls
far more than the bytes: the per-batch work (a CRC, validation, offset assignment, an index
check, a ``write``) is paid 10,000 times in the first run and 10 times in the second.

Every function writes only under the directory it is given (the caller removes it) and leaves
no file or socket open.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kafkalab.bench.report import alternate
from kafkalab.clock import ManualClock
from kafkalab.records import Compression, Record, build_batch, decode_records
from kafkalab.records.header import HeaderWalker
from kafkalab.storage import Log, LogConfig

KIB = 1024
MIB = 1024 * KIB
REPEATS = 3  # best of three: enough to skip one slowed-down run, cheap enough for a notebook
CACHED_ROUNDS = 7  # reads from the page cache last milliseconds, so one busy moment weighs more
VALUE_BYTES = 100
COPY_CHUNK_BYTES = 64 * KIB  # the read+write loop's buffer; also what each sendfile call asks for
READ_CHUNK_BYTES = 1 * MIB  # a whole-file read, as a consumer catching up reads a segment
PAGE_BYTES = 4 * KIB  # one page: the unit of the page cache, and of a random read here
START_MS = 1_700_000_000_000  # record timestamps; any fixed value makes runs repeatable


def best_seconds(work: Callable[[], object], repeats: int = REPEATS) -> float:
    """The fastest of ``repeats`` runs of ``work``, in seconds (``time.perf_counter``)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def sample_records(count: int, seed: int = 15, value_bytes: int = VALUE_BYTES) -> list[Record]:
    """``count`` records with JSON-like values of about ``value_bytes`` bytes: a few field names
    and values repeat, as in a real event stream, so codecs find something to compress."""
    rng = random.Random(seed)
    users, actions = [f"user-{i:04d}" for i in range(200)], ("view", "click", "buy", "search")
    records = []
    for offset in range(count):
        text = (f'{{"user":"{rng.choice(users)}","action":"{rng.choice(actions)}",'
                f'"item":{rng.randrange(100_000)},"price":{rng.randrange(1, 50_000) / 100:.2f}}}')
        value = text.encode().ljust(value_bytes, b" ")[:value_bytes]
        records.append(Record(offset, START_MS + offset, None, value))
    return records


def _fresh_log(directory: Path, name: str, config: LogConfig | None = None) -> Log:
    return Log.open(directory / name, config or LogConfig(), ManualClock(START_MS))


# -- batching ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BatchingPoint:
    """``records`` records in batches of ``records_per_batch``: the seconds to encode the
    batches (the producer's share) and to append them to a log (the leader's share)."""

    records_per_batch: int
    records: int
    encode_seconds: float
    append_seconds: float
    bytes_on_disk: int

    @property
    def bytes_per_record(self) -> float:
        return self.bytes_on_disk / self.records

    def microseconds_per_record(self, share: str = "append") -> float:
        """``share`` is ``"encode"`` or ``"append"``."""
        seconds = self.encode_seconds if share == "encode" else self.append_seconds
        return seconds * 1e6 / self.records


def batching(directory: Path, records_total: int = 10_000, batch_sizes: Sequence[int] = (1, 10, 100, 1000),
             repeats: int = REPEATS) -> list[BatchingPoint]:
    """Per batch size: encode ``records_total`` records into v2 batches, then append them with
    ``Log.append_as_leader`` to a fresh log (validation, offset assignment, the write, the
    index); the best of ``repeats`` runs of each. Opening and closing logs are not timed."""
    records = sample_records(records_total)
    serial = iter(range(1 << 30))
    points = []
    for size in batch_sizes:
        groups = [records[i:i + size] for i in range(0, records_total, size)]
        batches = [build_batch(group) for group in groups]
        encode_seconds = best_seconds(lambda: [build_batch(group) for group in groups], repeats)
        append_seconds, on_disk = float("inf"), 0
        for _ in range(repeats):
            log = _fresh_log(directory, f"batching{size}x-{next(serial)}")
            try:
                start = time.perf_counter()
                for batch in batches:
                    log.append_as_leader(batch, 0)
                append_seconds = min(append_seconds, time.perf_counter() - start)
                on_disk = sum(segment.size_bytes for segment in log.segments)
            finally:
                log.close()
        points.append(BatchingPoint(size, records_total, encode_seconds, append_seconds, on_disk))
    return points


# -- compression ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CodecRun:
    """One codec over the same records: batch bytes, and the seconds to build and to decode."""

    codec: str
    uncompressed_bytes: int
    batch_bytes: int
    build_seconds: float
    decode_seconds: float

    @property
    def ratio(self) -> float:
        """How many times smaller than the uncompressed batches (1.0 for ``none``)."""
        return self.uncompressed_bytes / self.batch_bytes


def compression(records_total: int = 3_000, records_per_batch: int = 500,
                codecs: Sequence[Compression] = tuple(Compression)) -> list[CodecRun]:
    """Build the same records into batches with every codec, then decode them back."""
    records = sample_records(records_total)
    groups = [records[i:i + records_per_batch] for i in range(0, records_total, records_per_batch)]
    plain = sum(len(build_batch(group)) for group in groups)
    runs = []
    for codec in codecs:
        batches = [build_batch(group, compression=codec) for group in groups]
        build = best_seconds(lambda: [build_batch(g, compression=codec) for g in groups])
        decode = best_seconds(lambda: [decode_records(batch) for batch in batches])
        assert all(decode_records(b)[-1].value == g[-1].value for b, g in zip(batches, groups))
        runs.append(CodecRun(codec.name.lower(), plain, sum(map(len, batches)), build, decode))
    return runs


# -- files: the page cache, sequential against random -------------------------------------------

def write_file(path: Path, size_bytes: int, seed: int = 15) -> Path:
    """A file of ``size_bytes`` random bytes, written and fsynced (so its pages are clean and
    the kernel may drop them when asked)."""
    rng = random.Random(seed)
    block = rng.randbytes(MIB)
    with open(path, "wb") as file:
        for start in range(0, size_bytes, MIB):
            file.write(block[: min(MIB, size_bytes - start)])
        file.flush()
        os.fsync(file.fileno())
    return path


def drop_from_page_cache(path: Path) -> bool:
    """Ask the kernel to drop ``path``'s clean pages (``POSIX_FADV_DONTNEED``). Returns False
    where the call does not exist; True means *asked* -- whether pages went is the kernel's
    choice (tmpfs, for one, keeps them: its pages are the file)."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def resident_share(path: Path) -> float | None:
    """The share of ``path``'s pages now in the page cache, asked of the kernel with
    ``mincore(2)`` on a mapping of the file (mapping faults nothing in); None where there is no
    ``mincore`` to ask (it is Linux and BSD only) or the file is empty."""
    import ctypes
    import ctypes.util
    import mmap

    size = path.stat().st_size
    libc_name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(libc_name, use_errno=True) if libc_name else None
    if size == 0 or libc is None or not hasattr(libc, "mincore"):
        return None
    mincore = libc.mincore
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vector = (ctypes.c_ubyte * pages)()
    with open(path, "rb") as file, mmap.mmap(file.fileno(), size, access=mmap.ACCESS_COPY) as mapped:
        address = ctypes.addressof(ctypes.c_char.from_buffer(mapped))
        if mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector) != 0:
            raise OSError(ctypes.get_errno(), f"mincore failed on {path}")
        del address  # no pointer into the mapping may outlive it
    return sum(byte & 1 for byte in vector) / pages


def read_sequentially(path: Path, chunk_bytes: int = READ_CHUNK_BYTES) -> int:
    """Read the whole file front to back into one reused buffer; returns the bytes read."""
    buffer = bytearray(chunk_bytes)
    total = 0
    with open(path, "rb", buffering=0) as file:
        while count := file.readinto(buffer):
            total += count
    return total


def read_pages(path: Path, order: Sequence[int], page_bytes: int = PAGE_BYTES) -> int:
    """``os.pread`` one page at each page number in ``order``; returns the bytes read."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(len(os.pread(fd, page_bytes, page * page_bytes)) for page in order)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class PageCacheRun:
    """Reading one freshly written file three times: right after writing it, after asking the
    kernel to drop it (``dropped`` says whether that could be asked), and once more."""

    file_bytes: int
    after_write_seconds: float
    after_drop_seconds: float
    reread_seconds: float
    dropped: bool


def page_cache(directory: Path, file_bytes: int = 64 * MIB) -> PageCacheRun:
    path = write_file(directory / "page-cache.bin", file_bytes)
    try:
        after_write = best_seconds(lambda: read_sequentially(path))
        dropped = drop_from_page_cache(path)
        after_drop = best_seconds(lambda: read_sequentially(path), repeats=1)  # only one can be cold
        reread = best_seconds(lambda: read_sequentially(path))
    finally:
        path.unlink()
    return PageCacheRun(file_bytes, after_write, after_drop, reread, dropped)


@dataclass(frozen=True, slots=True)
class AccessPatternRun:
    """Reading every page of one file once, in order and in a shuffled order, with the file
    cached (``cached``) or dropped from the page cache before each read (``cold``)."""

    file_bytes: int
    page_bytes: int
    sequential_cached_seconds: float
    random_cached_seconds: float
    sequential_cold_seconds: float
    random_cold_seconds: float
    dropped: bool


def sequential_vs_random(directory: Path, file_bytes: int = 16 * MIB, page_bytes: int = PAGE_BYTES,
                         seed: int = 15) -> AccessPatternRun:
    """The same pages, the same ``pread`` calls, only the order differs. Cached, the two orders
    alternate over ``CACHED_ROUNDS`` rounds and the fastest of each counts; cold, each order
    runs once, right after the file was dropped from the page cache."""
    path = write_file(directory / "access-pattern.bin", file_bytes)
    in_order = list(range(file_bytes // page_bytes))
    shuffled = in_order[:]
    random.Random(seed).shuffle(shuffled)
    try:
        def cold(order: list[int]) -> float:
            drop_from_page_cache(path)
            return best_seconds(lambda: read_pages(path, order, page_bytes), repeats=1)

        read_pages(path, in_order, page_bytes)  # make sure every page is cached
        cached = alternate({"in order": lambda: best_seconds(lambda: read_pages(path, in_order, page_bytes), 1),
                            "shuffled": lambda: best_seconds(lambda: read_pages(path, shuffled, page_bytes), 1)},
                           CACHED_ROUNDS)
        sequential_cached, random_cached = min(cached["in order"]), min(cached["shuffled"])
        sequential_cold, random_cold = cold(in_order), cold(shuffled)
        dropped = hasattr(os, "posix_fadvise")
    finally:
        path.unlink()
    return AccessPatternRun(file_bytes, page_bytes, sequential_cached, random_cached,
                            sequential_cold, random_cold, dropped)


# -- zero copy: sendfile against read + write -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class CopyRun:
    """Sending one cached file into a socket: wall-clock and CPU seconds of the whole process
    (sender and the thread draining the other end), and the bytes that passed through a
    buffer in the sender's own memory."""

    method: str
    file_bytes: int
    seconds: float
    cpu_seconds: float
    user_space_bytes: int


def _drain(sock: socket.socket, expected_bytes: int) -> None:
    buffer = bytearray(COPY_CHUNK_BYTES * 4)
    received = 0
    while received < expected_bytes:
        count = sock.recv_into(buffer)
        if count == 0:
            raise ConnectionError(f"peer closed after {received} of {expected_bytes} bytes")
        received += count


def _send_with_sendfile(path: Path, sock: socket.socket) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        size, offset = os.fstat(fd).st_size, 0
        while offset < size:
            offset += os.sendfile(sock.fileno(), fd, offset, min(COPY_CHUNK_BYTES, size - offset))
    finally:
        os.close(fd)
    return 0  # the bytes went from the page cache to the socket inside the kernel


def _send_with_read_write(path: Path, sock: socket.socket) -> int:
    buffer = bytearray(COPY_CHUNK_BYTES)
    view, through_user_space = memoryview(buffer), 0
    with open(path, "rb", buffering=0) as file:
        while count := file.readinto(buffer):
            sock.sendall(view[:count])
            through_user_space += count
    return through_user_space


SENDERS: dict[str, Callable[[Path, socket.socket], int]] = {
    "sendfile": _send_with_sendfile, "read+write": _send_with_read_write,
}


def _copy_once(path: Path, method: str) -> CopyRun:
    size = path.stat().st_size
    sender, receiver = socket.socketpair()
    drain = threading.Thread(target=_drain, args=(receiver, size), daemon=True)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        drain.start()
        through_user_space = SENDERS[method](path, sender)
        drain.join()
        return CopyRun(method, size, time.perf_counter() - wall, time.process_time() - cpu,
                       through_user_space)
    finally:
        sender.close()
        receiver.close()


def sendfile_vs_read_write(directory: Path, file_bytes: int = 64 * MIB,
                           repeats: int = REPEATS) -> list[CopyRun]:
    """Each method ``repeats`` times, alternating; the fastest run of each. Needs ``os.sendfile``
    (Linux, macOS); elsewhere the sendfile run raises ``AttributeError``."""
    path = write_file(directory / "sendfile.bin", file_bytes)
    try:
        read_sequentially(path)  # cached, as a segment a consumer is catching up on usually is
        runs: dict[str, list[CopyRun]] = {method: [] for method in SENDERS}
        for _ in range(repeats):
            for method in SENDERS:
                runs[method].append(_copy_once(path, method))
    finally:
        path.unlink()
    return [min(method_runs, key=lambda run: run.seconds) for method_runs in runs.values()]


# -- index lookups against a scan -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LookupRun:
    """Finding ``lookups`` random offsets in one segment of ``segment_bytes``: through the
    offset index (``Log.lookup``), and by walking batch headers from the segment's start."""

    segment_bytes: int
    lookups: int
    index_seconds: float
    scan_seconds: float
    index_bytes_scanned: int
    scan_bytes_scanned: int


def scan_for_offset(data: bytes | memoryview, offset: int) -> int:
    """The position of the batch holding ``offset``, walking batch headers from byte 0: what
    a lookup costs without an index. Returns -1 past the last batch."""
    for header in HeaderWalker(data):
        if header.last_offset >= offset:
            return header.position
    return -1


def index_vs_scan(directory: Path, records_total: int = 100_000, records_per_batch: int = 10,
                  lookups: int = 20, seed: int = 15, index_interval_bytes: int | None = None) -> LookupRun:
    """A one-segment log with ``index.interval.bytes`` (Kafka's default 4 KiB unless given),
    then the same random offsets found both ways, which must agree. The bytes scanned count
    from where each search starts reading batch headers (the index's floor entry, or byte 0) to
    the end of the batch holding the offset."""
    batch = build_batch(sample_records(records_per_batch), base_offset=0)
    config = LogConfig() if index_interval_bytes is None else LogConfig(index_interval_bytes=index_interval_bytes)
    log = _fresh_log(Path(tempfile.mkdtemp(prefix="lookups-", dir=directory)), "lookups-0", config)
    try:
        for _ in range(records_total // records_per_batch):
            log.append_as_leader(batch, 0)
        (segment,) = log.segments
        log.flush()
        data = segment.log_path.read_bytes()
        rng = random.Random(seed)
        targets = [rng.randrange(log.log_end_offset) for _ in range(lookups)]
        positions = [scan_for_offset(data, target) for target in targets]
        starts = [segment.offset_index.lookup(target).position for target in targets]
        answers = [log.lookup(target) for target in targets]
        assert [found[1].position for found in answers if found] == positions, "index and scan disagree"
        assert all(start <= position for start, position in zip(starts, positions))
        index_seconds = best_seconds(lambda: [log.lookup(target) for target in targets])
        scan_seconds = best_seconds(lambda: [scan_for_offset(data, target) for target in targets], repeats=1)
    finally:
        log.close()
    return LookupRun(len(data), lookups, index_seconds, scan_seconds,
                     sum(positions) - sum(starts) + lookups * len(batch), sum(positions) + lookups * len(batch))


# -- partitions as parallelism --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ParallelRun:
    """Decoding every record of ``partitions`` partition logs: one after another, one thread
    per partition, and ``processes`` worker processes (started before the clock runs). The
    processes' own CPU time is not counted here (it is spent in other processes)."""

    partitions: int
    records: int
    processes: int
    serial_seconds: float
    threads_seconds: float
    processes_seconds: float
    threads_cpu_seconds: float  # CPU time this process used in the fastest threaded round

    @property
    def threads_cores(self) -> float:
        """How many cores the threads kept busy on average: CPU seconds per wall second."""
        return self.threads_cpu_seconds / self.threads_seconds


def decode_segment_file(path: str) -> int:
    """Read one segment file and decode every record in it; returns the record count. The
    unit of work a consumer does per partition (module-level, so worker processes can run it)."""
    return len(decode_records(Path(path).read_bytes()))


def partitions_in_parallel(directory: Path, partitions: int = 4, records_per_partition: int = 5_000,
                           processes: int | None = None, repeats: int = REPEATS) -> ParallelRun:
    """Write ``partitions`` logs, then decode them three ways, the three side by side in each of
    ``repeats`` rounds (:func:`kafkalab.bench.report.alternate`); the fastest round of each.
    Worker processes are forked where the platform can (spawned elsewhere) and started before
    the clock runs."""
    import multiprocessing

    batch = build_batch(sample_records(100), base_offset=0)
    paths = []
    for partition in range(partitions):
        log = _fresh_log(directory, f"parallel-{partition}")
        for _ in range(records_per_partition // 100):
            log.append_as_leader(batch, 0)
        paths.append(str(log.segments[0].log_path))
        log.close()
    workers = processes or min(partitions, os.cpu_count() or 1)
    total = partitions * (records_per_partition // 100) * 100

    cpu_seconds: dict[str, list[float]] = {"serial": [], "threads": [], "processes": []}

    def timed(name: str, run: Callable[[], list[int]]) -> Callable[[], float]:
        def seconds() -> float:
            start, cpu = time.perf_counter(), time.process_time()
            counts = run()
            elapsed = time.perf_counter() - start
            cpu_seconds[name].append(time.process_time() - cpu)
            assert sum(counts) == total, f"decoded {sum(counts)} of {total} records"
            return elapsed
        return seconds

    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ThreadPoolExecutor(partitions) as threads, ProcessPoolExecutor(workers, mp_context=context) as pool:
        list(pool.map(decode_segment_file, paths))  # start the workers before any clock runs
        seconds = alternate({
            "serial": timed("serial", lambda: [decode_segment_file(path) for path in paths]),
            "threads": timed("threads", lambda: list(threads.map(decode_segment_file, paths))),
            "processes": timed("processes", lambda: list(pool.map(decode_segment_file, paths))),
        }, repeats)
    serial, threaded, in_processes = (min(seconds[name]) for name in ("serial", "threads", "processes"))
    threads_cpu = cpu_seconds["threads"][seconds["threads"].index(threaded)]
    return ParallelRun(partitions, total, workers, serial, threaded, in_processes, threads_cpu)


# -- the broker request path ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RequestPathPoint:
    """Producing ``records`` records to a running server, ``records_per_request`` per
    ProduceRequest (one batch each, acks=1), one request in flight at a time."""

    records_per_request: int
    records: int
    requests: int
    seconds: float

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds

    @property
    def microseconds_per_request(self) -> float:
        return self.seconds * 1e6 / self.requests


def produce_requests(bootstrap_servers: str, topic: str, records_total: int = 1_000,
                     batch_sizes: Sequence[int] = (1, 10, 100, 1000),
                     repeats: int = REPEATS) -> list[RequestPathPoint]:
    """Send ``records_total`` records per batch size through kafkalab's wire client
    (:func:`kafkalab.client.data.send_batch`), each request answered before the next; the
    best of ``repeats`` runs per size (every run appends its records to partition 0)."""
    from kafkalab.client.connection import bootstrap
    from kafkalab.client.data import send_batch

    records = sample_records(records_total)
    points = []
    with bootstrap(bootstrap_servers) as conn:
        send_batch(conn, topic, 0, records[:1])  # warm up: metadata, versions, the leader's log
        for size in batch_sizes:
            groups = [records[i:i + size] for i in range(0, records_total, size)]
            seconds = best_seconds(lambda: [send_batch(conn, topic, 0, group) for group in groups], repeats)
            points.append(RequestPathPoint(size, records_total, len(groups), seconds))
    return points


def bracket(ratio: float, edges: Sequence[float] = (2, 5), unit: str = "x") -> str:
    """The range a ratio falls in, as the book's exercises name it: with the default edges
    ``"under 2x"``, ``"2x to 5x"`` or ``"at least 5x"``. Exercises ask for a range, never for a
    measured number, so a right prediction stays right on a slow or busy machine."""
    if not edges or list(edges) != sorted(edges):
        raise ValueError(f"edges must be a non-empty ascending sequence, got {edges!r}")
    names = [f"under {edges[0]:g}{unit}"]
    names += [f"{low:g}{unit} to {high:g}{unit}" for low, high in zip(edges, edges[1:])]
    names.append(f"at least {edges[-1]:g}{unit}")
    return names[sum(ratio >= edge for edge in edges)]
