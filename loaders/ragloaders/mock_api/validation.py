"""The request body models of the 38 endpoints, one pydantic model per endpoint built from `endpoints.ENDPOINTS`
(field names, types and defaults as the official server's models declare them), used both by the HTTP app (FastAPI
validates with it) and by the in-process client (`check`), so the two validate with the very same model.

pydantic is imported on the first model built, not on `import ragloaders`.
"""

from __future__ import annotations

import functools
import math
import typing
from typing import Any

from .endpoints import REQUIRED, Endpoint

MAX_ERRORS = 100
"""A list in a body gets at most this many errors, then one saying how many more there were (FastAPI's were every
one: a body of 260,000 wrong ids was answered with 27 MB, after 300 MB of errors were made)."""


@functools.cache
def body_model(endpoint: Endpoint) -> Any:
    """The pydantic model of `endpoint`'s request body (built once per process), or None for an endpoint that takes
    no body."""
    if not endpoint.body:
        return None
    from pydantic import WrapValidator, create_model

    fields = {field.name: (typing.Annotated[field.type, WrapValidator(_bounded_items)] if typing.get_origin(field.type)
                           is list else field.type, ... if field.default is REQUIRED else field.default)
              for field in endpoint.body}
    return create_model(f"Body_{endpoint.client_method}", **fields)


def _bounded_items(value: Any, validate: Any) -> Any:
    """pydantic's validation of a list (`validate`) with its errors bounded: a list longer than MAX_ERRORS is
    validated MAX_ERRORS items at a time, and only its first MAX_ERRORS errors are kept (the same errors pydantic gives
    them), then one `too_many_errors` saying how many more there were."""
    from pydantic import ValidationError
    from pydantic_core import InitErrorDetails, PydanticCustomError

    if not isinstance(value, list) or len(value) <= MAX_ERRORS:
        return validate(value)
    valid: list[Any] = []
    kept: list[Any] = []
    count = 0
    for start in range(0, len(value), MAX_ERRORS):
        try:
            valid += validate(value[start:start + MAX_ERRORS])
        except ValidationError as e:
            count += e.error_count()
            for error in e.errors(include_url=False)[:MAX_ERRORS - len(kept)]:
                index, *rest = error["loc"]
                kept.append(InitErrorDetails(type=error["type"], loc=(start + index, *rest), input=error["input"],
                                             **({"ctx": error["ctx"]} if "ctx" in error else {})))
    if not count:
        return valid
    if count > len(kept):
        more = f"{count - len(kept):,} more errors not shown (the first {len(kept)} are)"
        kept.append(InitErrorDetails(type=PydanticCustomError("too_many_errors", more), loc=(), input=None))
    raise ValidationError.from_exception_data("list", kept)


def values_of(endpoint: Endpoint, checked: Any) -> list[Any]:
    """The values of a validated body (an instance of `body_model(endpoint)`), in the endpoint's field order."""
    values = dict(checked)
    return [values[field.name] for field in endpoint.body]


def check(endpoint: Endpoint, body: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The body's values in field order and no errors, or no values and the errors ragloaders serve's 422 body lists
    for it (`{"detail": errors}`: pydantic's errors without their URL, each `loc` starting with "body"; `reported`)."""
    model = body_model(endpoint)
    if model is None:
        return [], []
    from pydantic import ValidationError

    try:
        checked = model.model_validate(body)
    except ValidationError as e:
        return [], reported([{**error, "loc": ["body", *error["loc"]]} for error in e.errors(include_url=False)])
    return values_of(endpoint, checked), []


def reported(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `detail` of a 422 for pydantic's `errors`: as FastAPI lists them, but a NaN or infinite number in an
    error's input (Python's JSON parser reads `NaN`, and `1e999999` as infinity) as null, which JSON can write
    (FastAPI's answer was a 500 and a traceback in the log)."""
    return [{**error, "input": _finite(error["input"])} if "input" in error else error for error in errors]


def _finite(value: Any) -> Any:
    """`value`, its lists and dicts copied (at any depth, without recursion: an input may nest a thousand deep) with
    each NaN or infinite float in them as None."""
    copies: dict[int, Any] = {}
    pending: list[Any] = []

    def copied(item: Any) -> Any:
        if isinstance(item, float):
            return item if math.isfinite(item) else None
        if not isinstance(item, (list, dict)):
            return item
        if id(item) not in copies:  # (each container once: a list that holds itself is copied as one)
            copies[id(item)] = list(item) if isinstance(item, list) else dict(item)
            pending.append(copies[id(item)])
        return copies[id(item)]

    root = copied(value)
    while pending:
        container = pending.pop()
        for key in range(len(container)) if isinstance(container, list) else list(container):
            container[key] = copied(container[key])
    return root
