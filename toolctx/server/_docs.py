"""``/docs``: the API's reference as one self-contained HTML page, built from its OpenAPI schema.

FastAPI's interactive pages load their scripts and styles from a CDN, which a
memory server (often offline, holding an agent's context) should not make a browser
fetch. This page loads nothing: no script, no external style, no image, and its
Content-Security-Policy forbids them. ``/openapi.json`` feeds any OpenAPI viewer.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["DOCS_HEADERS", "render_docs"]

DOCS_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}"
    "code,.path{font-family:ui-monospace,monospace}h2{margin-top:2.5rem;font-size:1.1rem}"
    ".method{display:inline-block;min-width:4.5rem;font-weight:bold}table{border-collapse:collapse;margin:.5rem 0}"
    "td,th{border:1px solid #ccc;padding:.2rem .6rem;text-align:left;vertical-align:top}th{background:#f4f4f4}"
)
_BOUNDS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("pattern", "matching {}"),
)


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _type(schema: dict[str, Any]) -> str:
    """A short reading of a schema: ``integer >= 1``, ``HOT | WARM | COLD``, ``SnapshotIn | null``."""
    name = _ref_name(schema)
    if name is not None:
        return f'<a href="#{escape(name)}">{escape(name)}</a>'
    if "anyOf" in schema:
        return " | ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(escape(str(value)) for value in schema["enum"])
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        keys = schema.get("propertyNames", {})
        return f"object of {_type(keys) if keys else 'string'} → {_type(schema['additionalProperties'])}"
    bounds = [escape(text.format(schema[key])) for key, text in _BOUNDS if key in schema]
    return escape(kind) + (f" ({', '.join(bounds)})" if bounds else "")


def _fields(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    rows = "".join(
        f"<tr><td><code>{escape(name)}</code></td><td>{_type(field)}</td>"
        f"<td>{'yes' if name in required else 'no'}</td><td>{escape(str(field.get('description', '')))}</td></tr>"
        for name, field in schema.get("properties", {}).items()
    )
    return f"<table><tr><th>field</th><th>type</th><th>required</th><th></th></tr>{rows}</table>" if rows else ""


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    parts = [f'<h2><span class="method">{escape(method.upper())}</span> <span class="path">{escape(path)}</span></h2>']
    for key in ("summary", "description"):
        if operation.get(key):
            parts.append(f"<p>{escape(str(operation[key]))}</p>")
    parameters = operation.get("parameters", [])
    if parameters:
        rows = "".join(
            f"<tr><td><code>{escape(p['name'])}</code></td><td>{escape(p['in'])}</td>"
            f"<td>{_type(p.get('schema', {}))}</td><td>{'yes' if p.get('required') else 'no'}</td></tr>"
            for p in parameters
        )
        parts.append(f"<table><tr><th>parameter</th><th>in</th><th>type</th><th>required</th></tr>{rows}</table>")
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        parts.append(f"<p>Body (JSON): {_type(body)}</p>")
    answers = []
    for code, response in operation.get("responses", {}).items():
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        answers.append(
            f"<code>{escape(code)}</code> {_type(schema) if schema else escape(response.get('description', ''))}"
        )
    if answers:
        parts.append(f"<p>Answers: {'; '.join(answers)}</p>")
    return "\n".join(parts)


def render_docs(spec: dict[str, Any], token_required: bool) -> str:
    """The HTML page for an OpenAPI ``spec``."""
    info = spec.get("info", {})
    title = escape(str(info.get("title", "API")))
    auth = (
        "<p>Every request needs the header <code>Authorization: Bearer &lt;token&gt;</code>.</p>"
        if token_required
        else ""
    )
    operations = [
        _operation(method, path, operation)
        for path, methods in spec.get("paths", {}).items()
        for method, operation in methods.items()
    ]
    schemas = [
        f'<h2 id="{escape(name)}">{escape(name)}</h2>{_fields(schema)}'
        for name, schema in spec.get("components", {}).get("schemas", {}).items()
    ]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{title} {escape(str(info.get('version', '')))}</h1>"
        f"<p>{escape(str(info.get('summary', '')))}</p>{auth}"
        '<p>The same description as OpenAPI JSON: <a href="openapi.json"><code>openapi.json</code></a>.</p>'
        + "\n".join(operations)
        + "<h1>Schemas</h1>"
        + "\n".join(schemas)
        + "</body></html>"
    )
