"""FrameDecoder: partial frames, several frames per read, hostile sizes, and receiving in place."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.errors import ProtocolError
from kafkalab.protocol import framing
from kafkalab.protocol.framing import (
    DIRECT_FRAME_BYTES,
    FIRST_BODY_BYTES_MAX,
    NEED_DATA,
    SCRATCH_BYTES,
    FrameDecoder,
    size_prefix,
)


def test_frame_split_across_feeds():
    decoder = FrameDecoder()
    decoder.feed(b"\x00\x00\x00\x05ab")
    assert decoder.next_frame() is NEED_DATA
    decoder.feed(b"cde\x00\x00")
    assert decoder.next_frame() == b"abcde"
    assert decoder.next_frame() is NEED_DATA
    assert decoder.buffered_bytes == 2


def test_two_frames_in_one_feed_and_an_empty_frame():
    decoder = FrameDecoder()
    decoder.feed(size_prefix(1) + b"x" + size_prefix(0) + size_prefix(2) + b"yz")
    assert [decoder.next_frame() for _ in range(4)] == [b"x", b"", b"yz", NEED_DATA]


def test_negative_size_is_refused():
    decoder = FrameDecoder()
    decoder.feed(b"\xff\xff\xff\xfe")
    with pytest.raises(ProtocolError, match="frame size -2"):
        decoder.next_frame()
    with pytest.raises(ProtocolError):
        decoder.next_frame()  # the stream cannot be resynchronised


def test_size_over_socket_request_max_bytes_is_refused_before_buffering():
    decoder = FrameDecoder(frame_bytes_max=1000)
    decoder.feed(size_prefix(1001))
    with pytest.raises(ProtocolError, match="socket.request.max.bytes"):
        decoder.next_frame()


def test_frame_exactly_at_the_limit_is_accepted():
    decoder = FrameDecoder(frame_bytes_max=3)
    decoder.feed(size_prefix(3) + b"abc")
    assert decoder.next_frame() == b"abc"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=30), max_size=8), st.data())
def test_any_split_yields_the_same_frames(frames, data):
    stream = b"".join(size_prefix(len(f)) + f for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    decoder = FrameDecoder()
    out = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        decoder.feed(stream[start:end])
        while (frame := decoder.next_frame()) is not NEED_DATA:
            out.append(frame)
    assert out == frames


# --- receiving in place (get_buffer / buffer_updated, asyncio's BufferedProtocol) -------------


def receive(decoder: FrameDecoder, data: bytes, read_bytes: int) -> None:
    """What a socket read loop does: ``recv_into`` at most ``read_bytes`` into the offered buffer."""
    view = memoryview(data)
    while view:
        target = decoder.get_buffer(-1)
        assert len(target) > 0
        count = min(len(target), len(view), read_bytes)
        target[:count] = view[:count]
        decoder.buffer_updated(count)
        view = view[count:]


def test_a_large_frame_is_received_into_its_own_buffer():
    body = bytes(range(256)) * 400  # 102,400 bytes: above DIRECT_FRAME_BYTES and the scratch
    decoder = FrameDecoder()
    receive(decoder, size_prefix(len(body)) + body[:1000], read_bytes=1 << 20)
    target = decoder.get_buffer(-1)
    assert len(target) == len(body) - 1000  # exactly the rest of this frame, nothing after it
    target[:] = body[1000:]
    decoder.buffer_updated(len(target))
    frame = decoder.next_frame()
    assert isinstance(frame, bytearray) and frame == body
    assert target.obj is frame  # the bytes were written where the frame lives: no copy
    assert decoder.next_frame() is NEED_DATA and decoder.buffered_bytes == 0


def test_frames_before_a_bad_size_come_out_then_the_error():
    decoder = FrameDecoder(frame_bytes_max=100)
    decoder.feed(size_prefix(2) + b"ok" + size_prefix(101) + bytes(50))
    assert decoder.next_frame() == b"ok"
    with pytest.raises(ProtocolError, match="frame size 101"):
        decoder.next_frame()
    decoder.feed(bytes(200_000))  # a client that keeps sending: taken and dropped, no hang
    with pytest.raises(ProtocolError, match="after a framing error"):
        decoder.next_frame()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(DIRECT_FRAME_BYTES - 8, DIRECT_FRAME_BYTES + 8),
                          st.integers(SCRATCH_BYTES - 8, 3 * SCRATCH_BYTES)), max_size=6),
       st.integers(1, 100_000), st.data())
def test_in_place_receiving_yields_the_frames_of_any_stream(sizes, read_bytes, data):
    frames = [bytes([n % 251]) * n for n in sizes]
    stream = b"".join(size_prefix(len(f)) + f for f in frames)
    decoder = FrameDecoder()
    out: list[bytes] = []
    taken_bytes = 0
    position = 0
    while position < len(stream):
        step = data.draw(st.integers(1, len(stream) - position))
        receive(decoder, stream[position : position + step], read_bytes)
        position += step
        assert decoder.buffered_bytes == position - taken_bytes
        if data.draw(st.booleans()):  # sometimes the connection is busy and takes nothing
            while (frame := decoder.next_frame()) is not NEED_DATA:
                out.append(bytes(frame))
                taken_bytes += 4 + len(frame)
    while (frame := decoder.next_frame()) is not NEED_DATA:
        out.append(bytes(frame))
    assert out == frames
    assert decoder.buffered_bytes == 0


def test_an_announced_size_alone_does_not_allocate_the_frame():
    """Four bytes announcing a 30 MiB frame cost FIRST_BODY_BYTES_MAX, not 30 MiB; the buffer
    doubles as the bytes really arrive, and the frame comes out whole."""
    size = 30 * 1024 * 1024
    body = bytes(range(256)) * (size // 256)
    decoder = FrameDecoder()
    receive(decoder, size_prefix(size) + body[:1000], read_bytes=1 << 20)
    assert len(decoder.get_buffer(-1)) == FIRST_BODY_BYTES_MAX - 1000
    receive(decoder, body[1000:], read_bytes=3 << 20)
    frame = decoder.next_frame()
    assert isinstance(frame, bytearray) and len(frame) == size and frame == body


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(DIRECT_FRAME_BYTES, 120_000), min_size=1, max_size=4), st.integers(1, 70_000))
def test_growing_frame_buffers_yield_the_same_frames(sizes, read_bytes):
    frames = [bytes([n % 253]) * n for n in sizes]
    stream = b"".join(size_prefix(len(f)) + f for f in frames)
    original = framing.FIRST_BODY_BYTES_MAX
    framing.FIRST_BODY_BYTES_MAX = 20_000  # small, so that most frames grow several times
    try:
        decoder = FrameDecoder()
        receive(decoder, stream, read_bytes)
        out = []
        while (frame := decoder.next_frame()) is not NEED_DATA:
            out.append(bytes(frame))
    finally:
        framing.FIRST_BODY_BYTES_MAX = original
    assert out == frames
