"""Parsing and validating config values by Kafka's types."""

from __future__ import annotations

import pytest

from kafkalab.config.types import (
    DOUBLE_MAX,
    ConfigType,
    Range,
    ValidList,
    ValidString,
    format_value,
    parse_value,
)
from kafkalab.errors import ConfigError, ErrorCode


@pytest.mark.parametrize(
    ("config_type", "raw", "expected"),
    [
        (ConfigType.INT, " 168 ", 168),
        (ConfigType.INT, "-2147483648", -(2**31)),
        (ConfigType.LONG, "9223372036854775807", 2**63 - 1),
        (ConfigType.SHORT, "3", 3),
        (ConfigType.DOUBLE, "0.5", 0.5),
        (ConfigType.BOOLEAN, "TRUE", True),
        (ConfigType.BOOLEAN, "false", False),
        (ConfigType.LIST, "compact, delete", ["compact", "delete"]),
        (ConfigType.LIST, "", []),
        (ConfigType.STRING, " a b ", " a b "),
        (ConfigType.CLASS, "org.example.My$Inner", "org.example.My$Inner"),
    ],
)
def test_parse_each_type(config_type: ConfigType, raw: str, expected: object) -> None:
    assert parse_value("k", config_type, raw) == expected


@pytest.mark.parametrize(
    ("config_type", "raw", "rule"),
    [
        (ConfigType.INT, "2147483648", "INT"),  # one past Java's int
        (ConfigType.INT, "1.5", "INT"),
        (ConfigType.LONG, "9223372036854775808", "LONG"),
        (ConfigType.SHORT, "40000", "SHORT"),
        (ConfigType.DOUBLE, "nan", "DOUBLE"),
        (ConfigType.DOUBLE, "half", "DOUBLE"),
        (ConfigType.BOOLEAN, "yes", "true or false"),
        (ConfigType.LIST, "a,,b", "empty item"),
        (ConfigType.CLASS, "not a class", "class name"),
    ],
)
def test_parse_rejects_bad_text_naming_key_value_and_rule(config_type: ConfigType, raw: str, rule: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_value("some.key", config_type, raw)
    message = str(info.value)
    assert "some.key" in message and raw in message and rule in message
    assert info.value.error_code is ErrorCode.INVALID_CONFIG


def test_parse_rejects_oversized_value() -> None:
    with pytest.raises(ConfigError, match="at most"):
        parse_value("k", ConfigType.STRING, "x" * 70_000)


def test_range_bounds() -> None:
    Range(min_value=1).check("k", 1)
    with pytest.raises(ConfigError, match="at least 1"):
        Range(min_value=1).check("k", 0)
    with pytest.raises(ConfigError, match=r"in \[0,...,1\]"):
        Range(min_value=0, max_value=1).check("k", 1.5)


def test_valid_string_and_list() -> None:
    ValidString(("CreateTime", "LogAppendTime")).check("k", "CreateTime")
    with pytest.raises(ConfigError, match="one of"):
        ValidString(("CreateTime", "LogAppendTime")).check("k", "createtime")
    ValidList(("compact", "delete")).check("k", ["delete", "compact"])
    with pytest.raises(ConfigError, match="Invalid item 'remove'"):
        ValidList(("compact", "delete")).check("k", ["remove"])
    with pytest.raises(ConfigError, match="duplicate"):
        ValidList(("compact", "delete")).check("k", ["compact", "compact"])
    with pytest.raises(ConfigError, match="not be empty"):
        ValidList(("compact", "delete")).check("k", [])


def test_format_matches_java_text() -> None:
    assert format_value(True) == "true"
    assert format_value(["compact", "delete"]) == "compact,delete"
    assert format_value(0.5) == "0.5"
    assert format_value(1.0) == "1.0"
    assert format_value(DOUBLE_MAX) == "1.7976931348623157E308"
    assert format_value(None) is None
