"""FrameDecoder: partial frames, several frames per read, and hostile sizes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.errors import ProtocolError
from kafkalab.protocol.framing import NEED_DATA, FrameDecoder, size_prefix


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
