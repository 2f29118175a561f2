"""Config value types and validators: how a string from ``server.properties`` becomes a value.

Kafka describes every config key with a ``ConfigDef.ConfigKey``: a type, a default, an optional
validator and a doc string. Values arrive as text (``server.properties``, ``--add-config``, an
AlterConfigs request) and are parsed by type, then checked by the validator. kafkalab keeps the
same split:

* :class:`ConfigType` -- Kafka's nine types (``INT`` is a Java ``int``, ``LONG`` a ``long``,
  ``SHORT`` a ``short``, so their ranges are checked on parse);
* :func:`parse_value` -- text to value, raising :class:`~kafkalab.errors.ConfigError`;
* validators -- :class:`Range`, :class:`ValidString`, :class:`ValidList` -- each a frozen
  dataclass whose ``check(key, value)`` raises ``ConfigError`` naming the key, value and rule;
* :func:`format_value` -- value back to the text Kafka's tools print (``true``, ``a,b``,
  ``9223372036854775807``).

Worked example::

    >>> parse_value("log.retention.hours", ConfigType.INT, " 168 ")
    168
    >>> parse_value("cleanup.policy", ConfigType.LIST, "compact, delete")
    ['compact', 'delete']
    >>> Range(min_value=1).check("num.partitions", 0)
    Traceback (most recent call last):
    ...
    kafkalab.errors.ConfigError: Invalid value 0 for configuration num.partitions: Value must be at least 1
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Union

from kafkalab.errors import ConfigError

ConfigValue = Union[int, float, bool, str, list[str], None]

INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # Java int
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1  # Java long
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1  # Java short
DOUBLE_MAX = 1.7976931348623157e308  # Java Double.MAX_VALUE
VALUE_CHARS_MAX = 64 * 1024  # a config value longer than this is a mistake, not a setting

_JAVA_CLASS_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


class ConfigType(enum.Enum):
    """Kafka's ``ConfigDef.Type``."""

    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"


def _bad(key: str, raw: object, rule: str) -> ConfigError:
    return ConfigError(f"Invalid value {raw} for configuration {key}: {rule}")


def _parse_integer(key: str, text: str, low: int, high: int, java_type: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise _bad(key, text, f"Not a number of type {java_type.upper()}") from None
    if not low <= value <= high:
        raise _bad(key, text, f"Not a number of type {java_type.upper()} (range {low}..{high})")
    return value


def _parse_boolean(key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise _bad(key, text, "Expected value to be either true or false")
    return lowered == "true"


def _parse_double(key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _bad(key, text, "Not a number of type DOUBLE") from None
    if math.isnan(value):
        raise _bad(key, text, "Not a number of type DOUBLE")
    return value


def _parse_list(key: str, text: str) -> list[str]:
    # Kafka's ConfigDef splits on commas and trims each item; an empty string is an empty list.
    if not text.strip():
        return []
    items = [item.strip() for item in text.split(",")]
    if any(not item for item in items):
        raise _bad(key, text, "List contains an empty item")
    return items


def _parse_class(key: str, text: str) -> str:
    if not _JAVA_CLASS_NAME.match(text):
        raise _bad(key, text, "Not a valid Java class name")
    return text


_PARSERS = {
    ConfigType.INT: lambda k, t: _parse_integer(k, t, INT_MIN, INT_MAX, "int"),
    ConfigType.LONG: lambda k, t: _parse_integer(k, t, LONG_MIN, LONG_MAX, "long"),
    ConfigType.SHORT: lambda k, t: _parse_integer(k, t, SHORT_MIN, SHORT_MAX, "short"),
    ConfigType.DOUBLE: _parse_double,
    ConfigType.BOOLEAN: _parse_boolean,
    ConfigType.STRING: lambda k, t: t,
    ConfigType.PASSWORD: lambda k, t: t,
    ConfigType.LIST: _parse_list,
    ConfigType.CLASS: _parse_class,
}


def parse_value(key: str, config_type: ConfigType, raw: str) -> ConfigValue:
    """Parse ``raw`` as ``config_type``; surrounding whitespace is ignored except for strings."""
    if not isinstance(raw, str):
        raise _bad(key, raw, f"Expected a string to parse as {config_type.value}")
    if len(raw) > VALUE_CHARS_MAX:
        raise _bad(key, raw[:40] + "...", f"Value is {len(raw)} characters, at most {VALUE_CHARS_MAX}")
    keep_spaces = config_type in (ConfigType.STRING, ConfigType.PASSWORD)
    return _PARSERS[config_type](key, raw if keep_spaces else raw.strip())


def format_value(value: ConfigValue) -> str | None:
    """The text Kafka's tools print for a value (Kafka's ``ConfigDef.convertToString``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, float):
        return _java_double(value)
    return str(value)


def _java_double(value: float) -> str:
    # Java prints 0.5 as "0.5", 1.0 as "1.0" and Double.MAX_VALUE as "1.7976931348623157E308".
    if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
        mantissa, exponent = f"{value!r}".lower().replace("e+", "e").split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exponent)}"
    text = repr(value)
    return text if "." in text else text + ".0"


@dataclass(frozen=True, slots=True)
class Range:
    """Kafka's ``ConfigDef.Range``: ``min_value <= value <= max_value`` (either bound optional)."""

    min_value: float | None = None
    max_value: float | None = None

    def check(self, key: str, value: ConfigValue) -> None:
        if value is None:
            return
        assert isinstance(value, (int, float)) and not isinstance(value, bool), value
        if self.min_value is not None and value < self.min_value:
            if self.max_value is None:
                raise _bad(key, format_value(value), f"Value must be at least {_num(self.min_value)}")
            raise _bad(key, format_value(value), f"Value must be in {self.describe()}")
        if self.max_value is not None and value > self.max_value:
            if self.min_value is None:
                raise _bad(key, format_value(value), f"Value must be no more than {_num(self.max_value)}")
            raise _bad(key, format_value(value), f"Value must be in {self.describe()}")

    def describe(self) -> str:
        if self.max_value is None:
            return f"[{_num(self.min_value)},...]"
        if self.min_value is None:
            return f"[...,{_num(self.max_value)}]"
        return f"[{_num(self.min_value)},...,{_num(self.max_value)}]"


def _num(bound: float | None) -> str:
    return format_value(bound) or "" if isinstance(bound, float) else str(bound)


@dataclass(frozen=True, slots=True)
class ValidString:
    """Kafka's ``ConfigDef.ValidString``: one of ``choices`` (case-sensitive, as in Kafka)."""

    choices: tuple[str, ...]

    def check(self, key: str, value: ConfigValue) -> None:
        if value is None:
            return
        if value not in self.choices:
            raise _bad(key, value, f"String must be one of: {', '.join(self.choices)}")

    def describe(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


@dataclass(frozen=True, slots=True)
class ValidList:
    """Kafka's ``ConfigDef.ValidList``: every item is one of ``choices``, no duplicates."""

    choices: tuple[str, ...]
    allow_empty: bool = False

    def check(self, key: str, value: ConfigValue) -> None:
        if value is None:
            return
        assert isinstance(value, list), value
        if not value and not self.allow_empty:
            raise _bad(key, "", "List must not be empty")
        for item in value:
            if item not in self.choices:
                raise _bad(key, ",".join(value), f"Invalid item {item!r}; items must be in {self.describe()}")
        if len(set(value)) != len(value):
            raise _bad(key, ",".join(value), "List contains duplicate items")

    def describe(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


Validator = Union[Range, ValidString, ValidList]
