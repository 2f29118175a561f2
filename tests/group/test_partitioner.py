"""Group placement: Java's String.hashCode and Kafka's Utils.abs, against vectors from Java 17.

The hash values were printed by ``"...".hashCode()`` in a JDK 17 ``jshell``; the test below
re-runs Java when ``javac`` is present, so the vectors are checked against the JVM itself.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafkalab.group.partitioner import java_abs, java_string_hash, partition_for

VECTORS = {
    "my-group": -1906497762,
    "polygenelubricants": -2147483648,  # Integer.MIN_VALUE: Utils.abs gives 0
    "héllo😀": 291564465,  # a surrogate pair hashes as two UTF-16 code units
    "": 0,
    "console-consumer-12345": 158455506,
}


@pytest.mark.parametrize("text, expected", VECTORS.items())
def test_java_string_hash(text, expected):
    assert java_string_hash(text) == expected


def test_partition_for_uses_kafkas_abs():
    assert java_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants") == 0
    assert partition_for("my-group") == 1906497762 % 50 == 12
    assert partition_for("my-group", 7) == 1906497762 % 7


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK to compare with")
def test_vectors_against_the_jvm(tmp_path):
    source = tmp_path / "Hash.java"
    names = ", ".join('"' + t.replace("\\", "\\\\") + '"' for t in VECTORS)
    source.write_text("public class Hash { public static void main(String[] a) { for (String s : new String[]{"
                      + names + "}) System.out.println(s.hashCode()); } }", encoding="utf-8")
    subprocess.run(["javac", "-encoding", "UTF-8", str(source)], check=True, cwd=tmp_path, timeout=60)
    out = subprocess.run(["java", "-cp", str(tmp_path), "Hash"], check=True, capture_output=True, text=True,
                         timeout=60).stdout.split()
    assert [int(x) for x in out] == list(VECTORS.values())
