"""kcat (librdkafka's command-line client) against a kafkalab server.

kcat reads ``key:value`` lines with ``-K:``, attaches headers with ``-H``, compresses with
``-z`` and looks up offsets by timestamp with ``-o s@<ms>``. Skips when kcat is not installed
(``.ci/run`` installs the Debian package as root).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.interop.support import CLIENT_TIMEOUT_MS, create_topic

KCAT = shutil.which("kcat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
RUN_TIMEOUT_S = 30  # kcat's own timeouts are shorter; this only guards against a hang
LINES = [f"key-{i}:value-{i}" for i in range(10)]
FORMAT = "%k|%S|%s|%o|%T|%h\\n"  # key | value length (-1 = null) | value | offset | timestamp | headers


def kcat(bootstrap: str, *args: str, stdin: str = "") -> str:
    assert KCAT is not None
    command = [KCAT, "-b", bootstrap, "-X", f"socket.timeout.ms={CLIENT_TIMEOUT_MS}",
               "-X", f"message.timeout.ms={CLIENT_TIMEOUT_MS}", *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{command} exited {done.returncode}: {done.stderr}"
    return done.stdout


def consume_lines(bootstrap: str, topic: str, offset: str = "beginning") -> list[list[str]]:
    out = kcat(bootstrap, "-C", "-t", topic, "-p", "0", "-o", offset, "-e", "-f", FORMAT)
    return [line.split("|") for line in out.splitlines() if line]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_consume_keys_headers_codecs(bootstrap: str, topic_name: str, codec: str) -> None:
    create_topic(bootstrap, topic_name)
    kcat(bootstrap, "-P", "-t", topic_name, "-p", "0", "-K:", "-z", codec,
         "-H", "source=kcat", "-H", "codec=" + codec, stdin="\n".join(LINES) + "\n")
    rows = consume_lines(bootstrap, topic_name)
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (f"key-{i}", f"value-{i}", str(i)) for i in range(len(LINES))
    ]
    assert all(r[5] == f"source=kcat,codec={codec}" for r in rows)


@pytest.mark.timeout(60)
def test_null_values_with_dash_z(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    # -Z turns an empty value into a null value (a tombstone).
    kcat(bootstrap, "-P", "-t", topic_name, "-p", "0", "-K:", "-Z", stdin="gone:\nkept:v\n")
    rows = consume_lines(bootstrap, topic_name)
    assert [(r[0], r[1]) for r in rows] == [("gone", "-1"), ("kept", "1")]


@pytest.mark.timeout(60)
def test_offset_lookup_by_timestamp(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    # Produce the records one kcat run at a time so that each lands in its own batch with its
    # own timestamp, then ask for the first offset at or after the fourth record's timestamp.
    for i in range(6):
        kcat(bootstrap, "-P", "-t", topic_name, "-p", "0", "-K:", stdin=f"k{i}:v{i}\n")
    rows = consume_lines(bootstrap, topic_name)
    timestamps = [int(r[4]) for r in rows]
    assert timestamps == sorted(timestamps)
    target = timestamps[3]
    first = next(i for i, ts in enumerate(timestamps) if ts >= target)
    found = consume_lines(bootstrap, topic_name, offset=f"s@{target}")
    assert int(found[0][3]) == first and len(found) == len(rows) - first
