"""The request body models of the 38 endpoints, one pydantic model per endpoint built from `endpoints.ENDPOINTS`
(field names, types and defaults as the official server's models declare them), used both by the HTTP app (FastAPI
validates with it) and by the in-process client (`check`), so the two validate with the very same model.

pydantic is imported on the first model built, not on `import ragloaders`.
"""

from __future__ import annotations

import functools
from typing import Any

from .endpoints import REQUIRED, Endpoint


@functools.cache
def body_model(endpoint: Endpoint) -> Any:
    """The pydantic model of `endpoint`'s request body (built once per process), or None for an endpoint that takes
    no body."""
    if not endpoint.body:
        return None
    from pydantic import create_model

    fields = {field.name: (field.type, ... if field.default is REQUIRED else field.default) for field in endpoint.body}
    return create_model(f"Body_{endpoint.client_method}", **fields)


def values_of(endpoint: Endpoint, checked: Any) -> list[Any]:
    """The values of a validated body (an instance of `body_model(endpoint)`), in the endpoint's field order."""
    values = dict(checked)
    return [values[field.name] for field in endpoint.body]


def check(endpoint: Endpoint, body: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The body's values in field order and no errors, or no values and the errors FastAPI's 422 body lists for it
    (`{"detail": errors}`: pydantic's errors without their URL, each `loc` starting with "body")."""
    model = body_model(endpoint)
    if model is None:
        return [], []
    from pydantic import ValidationError

    try:
        checked = model.model_validate(body)
    except ValidationError as e:
        return [], [{**error, "loc": ["body", *error["loc"]]} for error in e.errors(include_url=False)]
    return values_of(endpoint, checked), []
