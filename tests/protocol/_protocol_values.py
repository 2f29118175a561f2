"""Seeded random message values for any kafkalab schema at any version (test helper)."""

from __future__ import annotations

import random
import string
import uuid
from typing import Any

from kafkalab.protocol.schema import Field, Struct

_INT_BOUNDS = {
    "int8": 7, "int16": 15, "int32": 31, "int64": 63,
}


def random_struct(struct: Struct, version: int, flexible: bool, rng: random.Random) -> Any:
    values = {}
    for fld in struct.fields:
        if not fld.in_version(version) or (fld.tag is not None and not flexible):
            continue
        values[fld.name] = random_field(fld, version, flexible, rng)
    return struct.cls(**values)


def random_field(fld: Field, version: int, flexible: bool, rng: random.Random) -> Any:
    nullable = fld.nullable_in(version)
    if nullable and rng.random() < 0.2:
        return None
    if fld.is_array:
        return tuple(_random_element(fld, version, flexible, rng) for _ in range(rng.randint(0, 2)))
    return _random_element(fld, version, flexible, rng)


def _random_element(fld: Field, version: int, flexible: bool, rng: random.Random) -> Any:
    if fld.struct is not None:
        return random_struct(fld.struct, version, flexible, rng)
    kind = fld.element_type
    if kind in _INT_BOUNDS:
        bits = _INT_BOUNDS[kind]
        return rng.choice([0, -1, 1, 2**bits - 1, -(2**bits), rng.randint(-(2**bits), 2**bits - 1)])
    if kind == "uint16":
        return rng.randint(0, 65535)
    if kind == "float64":
        return rng.uniform(-1e6, 1e6)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "string":
        return "".join(rng.choice(string.ascii_letters + "é-._") for _ in range(rng.randint(0, 12)))
    if kind in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 40))
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(f"no generator for {kind}")
