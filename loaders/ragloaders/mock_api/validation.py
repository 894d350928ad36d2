"""Request bodies checked as the official server's FastAPI models check them (pydantic, lax mode), for the cases
the official client can send: a missing field, or a value of the wrong type. The error body is FastAPI's 422
`{"detail": [{"type", "loc", "msg", "input"}]}`."""

from __future__ import annotations

from typing import Any

from .endpoints import REQUIRED, Endpoint


def _error(kind: str, loc: list, message: str, value: Any) -> dict[str, Any]:
    return {"type": kind, "loc": loc, "msg": message, "input": value}


def _integer(value: Any, loc: list) -> tuple[Any, dict | None]:
    if isinstance(value, bool) or isinstance(value, int):
        return int(value), None
    if isinstance(value, float):
        if value.is_integer():
            return int(value), None
        return None, _error("int_from_float", loc, "Input should be a valid integer, got a number with a "
                            "fractional part", value)
    if isinstance(value, str):
        try:
            return int(value.strip()), None
        except ValueError:
            return None, _error("int_parsing", loc, "Input should be a valid integer, unable to parse string as an "
                                "integer", value)
    return None, _error("int_type", loc, "Input should be a valid integer", value)


def _value(kind: str, value: Any, loc: list) -> tuple[Any, dict | None]:
    if kind == "int":
        return _integer(value, loc)
    if kind == "str | None" and value is None:
        return None, None
    if kind in ("str", "str | None"):
        if isinstance(value, str):
            return value, None
        return None, _error("string_type", loc, "Input should be a valid string", value)
    if kind == "list[str]":
        if not isinstance(value, (list, tuple)):
            return None, _error("list_type", loc, "Input should be a valid list", value)
        items, errors = [], []
        for index, item in enumerate(value):
            checked, error = _value("str", item, [*loc, index])
            items.append(checked)
            if error:
                errors.append(error)
        return items, (errors or None)  # type: ignore[return-value]
    raise ValueError(f"unknown field type {kind!r}")


def validate(endpoint: Endpoint, body: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The body's values in field order, and the errors (empty when the body is valid)."""
    values, errors = [], []
    for field in endpoint.body:
        loc = ["body", field.name]
        if field.name not in body:
            if field.default is REQUIRED:
                errors.append(_error("missing", loc, "Field required", body))
            values.append(None if field.default is REQUIRED else field.default)
            continue
        value, error = _value(field.type, body[field.name], loc)
        if isinstance(error, list):
            errors.extend(error)
        elif error:
            errors.append(error)
        values.append(value)
    return values, errors
