"""The rule-file JSON Schema (rule.schema.json, beside this file) and a small validator for it.

The schema is a standard JSON Schema (draft 2020-12): editors and CI can use it with any validator. tflint itself
checks rule files with the validator below, which implements exactly the keywords the schema uses (and refuses a
schema that uses others), so loading a rule pack costs milliseconds and needs no extra dependency;
tests/test_rule_schema.py checks that it agrees with the `jsonschema` package on the shipped rules, the example
pack and a corpus of malformed files.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional

SCHEMA_PATH = Path(__file__).resolve().parent / "rule.schema.json"

# Keywords the validator implements; annotations it ignores.
KEYWORDS = frozenset({
    "$ref", "type", "enum", "pattern", "minLength", "minItems", "uniqueItems", "minimum", "required",
    "properties", "additionalProperties", "items", "oneOf", "anyOf", "dependentRequired",
})
ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description", "x-message"})


@lru_cache(maxsize=None)
def rule_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@dataclass
class SchemaError:
    validator: str  # the keyword that failed: type, enum, required, additionalProperties, oneOf, ...
    path: tuple[Any, ...]  # where in the instance (keys and indices)
    schema: dict[str, Any]  # the (sub)schema holding the keyword
    instance: Any  # the value at `path`
    message: str
    context: list["SchemaError"] = field(default_factory=list)  # oneOf/anyOf: the errors of each alternative
    branch: Optional[int] = None  # for an error in `context`: which alternative
    names: tuple[str, ...] = ()  # required/dependentRequired: the missing key(s); additionalProperties: the extra keys
    key: Optional[str] = None  # dependentRequired: the key that needs `names`


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise ValueError(f"unknown JSON Schema type {name!r}")


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: `true` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) in (int, float) and type(b) in (int, float) and a == b or (type(a) is type(b) and a == b)


class Validator:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        unknown = sorted(self._keywords(schema) - KEYWORDS - ANNOTATIONS)
        if unknown:
            raise ValueError(f"the rule schema uses keywords this validator does not implement: {', '.join(unknown)}")

    def _keywords(self, schema: Any) -> set[str]:
        out: set[str] = set()
        if isinstance(schema, dict):
            for k, v in schema.items():
                out.add(k)
                if k in ("properties", "$defs"):
                    for sub in v.values():
                        out |= self._keywords(sub)
                elif k in ("items", "additionalProperties") and isinstance(v, dict):
                    out |= self._keywords(v)
                elif k in ("oneOf", "anyOf"):
                    for sub in v:
                        out |= self._keywords(sub)
        return out

    def _resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise ValueError(f"only local references are supported, not {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def is_valid(self, instance: Any) -> bool:
        return next(self.iter_errors(instance), None) is None

    def iter_errors(self, instance: Any, schema: Optional[dict[str, Any]] = None,
                    path: tuple[Any, ...] = ()) -> Iterator[SchemaError]:
        schema = self.root if schema is None else schema
        if "$ref" in schema:
            yield from self.iter_errors(instance, self._resolve(schema["$ref"]), path)

        def err(keyword: str, message: str, **kw: Any) -> SchemaError:
            return SchemaError(keyword, path, schema, instance, message, **kw)

        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_is_type(instance, t) for t in types):
                yield err("type", f"{instance!r} is not of type {' or '.join(repr(t) for t in types)}")
                return  # the other keywords describe values of the right type
        if "enum" in schema and not any(_json_equal(instance, v) for v in schema["enum"]):
            yield err("enum", f"{instance!r} is not one of {schema['enum']!r}")
        if isinstance(instance, str):
            if "pattern" in schema and not re.search(schema["pattern"], instance):
                yield err("pattern", f"{instance!r} does not match {schema['pattern']!r}")
            if "minLength" in schema and len(instance) < schema["minLength"]:
                yield err("minLength", f"{instance!r} is too short")
        if isinstance(instance, (int, float)) and not isinstance(instance, bool):
            if "minimum" in schema and instance < schema["minimum"]:
                yield err("minimum", f"{instance!r} is less than the minimum of {schema['minimum']!r}")
        if isinstance(instance, list):
            if "minItems" in schema and len(instance) < schema["minItems"]:
                yield err("minItems", f"{instance!r} should be non-empty" if schema["minItems"] == 1
                          else f"{instance!r} is too short")
            if schema.get("uniqueItems"):
                for i, a in enumerate(instance):
                    if any(_json_equal(a, b) for b in instance[:i]):
                        yield err("uniqueItems", f"{instance!r} has non-unique elements")
                        break
            if isinstance(schema.get("items"), dict):
                for i, item in enumerate(instance):
                    yield from self.iter_errors(item, schema["items"], (*path, i))
        if isinstance(instance, dict):
            for name in schema.get("required", ()):
                if name not in instance:
                    yield err("required", f"{name!r} is a required property", names=(name,))
            props = schema.get("properties", {})
            for name, sub in props.items():
                if name in instance:
                    yield from self.iter_errors(instance[name], sub, (*path, name))
            extra = schema.get("additionalProperties", True)
            others = [k for k in instance if k not in props]
            if extra is False and others:
                yield err("additionalProperties", f"Additional properties are not allowed ({', '.join(map(repr, others))})",
                          names=tuple(map(str, others)))
            elif isinstance(extra, dict):
                for name in others:
                    yield from self.iter_errors(instance[name], extra, (*path, name))
            for key, needs in schema.get("dependentRequired", {}).items():
                if key in instance:
                    for name in needs:
                        if name not in instance:
                            yield err("dependentRequired", f"{name!r} is a dependency of {key!r}",
                                      names=(name,), key=key)
        for keyword in ("oneOf", "anyOf"):
            if keyword not in schema:
                continue
            context: list[SchemaError] = []
            passed = []
            for i, sub in enumerate(schema[keyword]):
                errors = list(self.iter_errors(instance, sub, path))
                for e in errors:
                    e.branch = i
                context += errors
                if not errors:
                    passed.append(i)
            if not passed:
                yield err(keyword, f"{instance!r} is not valid under any of the given schemas", context=context)
            elif keyword == "oneOf" and len(passed) > 1:
                yield err(keyword, f"{instance!r} is valid under each of {passed}")


@lru_cache(maxsize=None)
def validator() -> Validator:
    return Validator(rule_schema())
