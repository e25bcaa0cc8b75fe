"""JSON schemas of the kinds APIs and agents send: function-calling
parameters, pydantic models (with $defs, anyOf-null optionals, enums),
OpenAPI components, configuration files, nested arrays, tuples, formats and
numeric bounds.  Written for these tests; each is what such a tool emits."""

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}


def obj(props, required=None, **extra):
    s = {"type": "object", "properties": props, "required": list(props) if required is None else required}
    s.update(extra)
    return s


def optional(schema):  # pydantic's Optional[X] = None
    return {"anyOf": [schema, {"type": "null"}], "default": None}


SCHEMAS = {
    "weather_call": obj({"location": {"type": "string", "description": "City and country"},
                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["location"]),
    "search_call": obj({"query": STR, "max_results": {"type": "integer", "minimum": 1, "maximum": 50}}, ["query"]),
    "send_email": obj({"to": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1},
                       "subject": {"type": "string", "maxLength": 80}, "body": STR, "cc": {"type": "array",
                       "items": {"type": "string", "format": "email"}}}, ["to", "subject", "body"],
                      additionalProperties=False),
    "calendar_event": obj({"title": STR, "date": {"type": "string", "format": "date"},
                           "start": {"type": "string", "format": "time"},
                           "attendees": {"type": "array", "items": STR, "maxItems": 5}}, ["title", "date"]),
    "create_ticket": obj({"summary": {"type": "string", "minLength": 5, "maxLength": 60},
                          "priority": {"enum": ["low", "medium", "high", "critical"]},
                          "labels": {"type": "array", "items": {"type": "string", "pattern": "^[a-z-]{2,12}$"}}},
                         ["summary", "priority"]),
    "sql_query": obj({"sql": STR, "params": {"type": "array", "items": {"type": ["string", "number", "null"]}}}),
    "pydantic_user": {
        "title": "User", "type": "object",
        "properties": {"id": {"title": "Id", "type": "integer"}, "name": {"title": "Name", "type": "string"},
                       "email": optional({"type": "string"}), "age": optional({"type": "integer", "minimum": 0}),
                       "role": {"$ref": "#/$defs/Role"}},
        "required": ["id", "name", "role"],
        "$defs": {"Role": {"title": "Role", "enum": ["admin", "editor", "viewer"], "type": "string"}}},
    "pydantic_order": {
        "type": "object", "title": "Order",
        "$defs": {
            "Item": {"type": "object", "properties": {"sku": STR, "quantity": {"type": "integer", "exclusiveMinimum": 0},
                                                      "price": {"type": "number", "minimum": 0}},
                     "required": ["sku", "quantity", "price"]},
            "Address": {"type": "object", "properties": {"street": STR, "city": STR,
                                                         "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                        "required": ["street", "city", "zip"]}},
        "properties": {"order_id": {"type": "string", "format": "uuid"},
                       "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 1, "maxItems": 4},
                       "shipping": {"$ref": "#/$defs/Address"}, "billing": optional({"$ref": "#/$defs/Address"})},
        "required": ["order_id", "items", "shipping"]},
    "tree_recursive": {
        "$defs": {"node": {"type": "object", "properties": {"value": INT,
                                                            "children": {"type": "array", "items": {"$ref": "#/$defs/node"},
                                                                         "maxItems": 2}},
                           "required": ["value"]}},
        "$ref": "#/$defs/node"},
    "linked_list_root_ref": {"type": "object", "properties": {"head": INT, "tail": {"anyOf": [{"$ref": "#"},
                                                                                             {"type": "null"}]}},
                             "required": ["head", "tail"]},
    "matrix": obj({"rows": {"type": "array", "items": {"type": "array", "items": NUM, "minItems": 2, "maxItems": 2},
                            "minItems": 2, "maxItems": 3}}),
    "point_tuple": {"type": "array", "prefixItems": [NUM, NUM], "items": False},
    "rgb_tuple_old_style": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                            "items": [{"type": "integer", "minimum": 0, "maximum": 255}] * 3},
    "geo": obj({"lat": {"type": "number", "minimum": -90, "maximum": 90},
                "lon": {"type": "number", "minimum": -180, "maximum": 180}}),
    "percent": obj({"value": {"type": "number", "minimum": 0, "maximum": 100}, "label": STR}),
    "probability": obj({"p": {"type": "number", "minimum": 0, "maximum": 1}}),
    "temperature_range": obj({"min": {"type": "integer", "minimum": -273}, "max": {"type": "integer",
                                                                              "maximum": 1000}}),
    "negative_only": obj({"debt": {"type": "integer", "maximum": -1}}),
    "exclusive_bounds": obj({"x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
                             "n": {"type": "integer", "exclusiveMinimum": -5, "exclusiveMaximum": 5}}),
    "draft4_exclusive": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                         "properties": {"k": {"type": "integer", "minimum": 0, "exclusiveMinimum": True,
                                              "maximum": 9}}, "required": ["k"]},
    "shape_oneof": {"oneOf": [obj({"kind": {"const": "circle"}, "radius": {"type": "number", "minimum": 0}}),
                              obj({"kind": {"const": "square"}, "side": {"type": "number", "minimum": 0}}),
                              obj({"kind": {"const": "rect"}, "w": NUM, "h": NUM})]},
    "union_types": obj({"id": {"type": ["integer", "string"]}, "tags": {"type": ["array", "null"], "items": STR}}),
    "allof_mixin": {"allOf": [{"$ref": "#/$defs/base"}, {"type": "object", "properties": {"extra": BOOL},
                                                          "required": ["extra"]}],
                    "$defs": {"base": {"type": "object", "properties": {"id": INT, "created": {"type": "string",
                                                                                             "format": "date-time"}},
                                       "required": ["id", "created"]}}},
    "enum_mixed": obj({"v": {"enum": [1, "two", None, True, 3.5]}}),
    "const_version": obj({"version": {"const": "1.0"}, "data": {"type": "object"}}),
    "string_map": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 20}, "maxProperties": 3},
    "counts_map": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
    "free_object": {"type": "object"},
    "any_value": {},
    "true_schema": True,
    "bare_string": {"type": "string"},
    "bare_integer_bounded": {"type": "integer", "minimum": 100, "maximum": 12345},
    "bare_array": {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3},
    "nullable_string": {"type": ["string", "null"], "maxLength": 10},
    "ipv4_list": obj({"hosts": {"type": "array", "items": {"type": "string", "format": "ipv4"}, "maxItems": 3}}),
    "uri_link": obj({"url": {"type": "string", "format": "uri"}, "title": STR}),
    "identifiers": obj({"slug": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
                        "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
                        "hex": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"}}),
    "phone": obj({"phone": {"type": "string", "pattern": "^\\+?[0-9]{7,12}$"}}),
    "quoted_pattern": obj({"s": {"type": "string", "pattern": "^\"[a-z]+\"$"}}),
    "nested_config": obj({"server": obj({"host": STR, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                         "tls": obj({"enabled": BOOL, "cert": STR}, ["enabled"])}),
                          "logging": obj({"level": {"enum": ["debug", "info", "warn", "error"]},
                                          "files": {"type": "array", "items": STR}}, ["level"])}),
    "openapi_pet": {"type": "object", "required": ["name", "photoUrls"],
                    "properties": {"id": {"type": "integer", "format": "int64"},
                                   "category": {"$ref": "#/components/schemas/Category"},
                                   "name": {"type": "string", "example": "doggie"},
                                   "photoUrls": {"type": "array", "items": {"type": "string"}},
                                   "status": {"type": "string", "enum": ["available", "pending", "sold"]}},
                    "components": {"schemas": {"Category": {"type": "object", "properties": {
                        "id": {"type": "integer"}, "name": {"type": "string"}}}}}},
    "agent_plan": obj({"thought": STR, "steps": {"type": "array", "minItems": 1, "maxItems": 4, "items": obj({
        "tool": {"enum": ["search", "calculator", "browser"]}, "input": STR})}, "final": BOOL}),
    "extraction": obj({"people": {"type": "array", "items": obj({"name": STR, "age": optional(INT),
                                                                  "email": optional({"type": "string", "format": "email"})},
                                                                 ["name"])}}),
    "classification": obj({"label": {"enum": ["positive", "negative", "neutral"]},
                           "confidence": {"type": "number", "minimum": 0, "maximum": 1}}),
    "review": obj({"rating": {"type": "integer", "minimum": 1, "maximum": 5}, "pros": {"type": "array", "items": STR},
                   "cons": {"type": "array", "items": STR}, "verdict": {"type": "string", "maxLength": 40}}),
    "invoice": {"type": "object", "$defs": {"money": {"type": "object", "properties": {
        "amount": {"type": "number", "minimum": 0}, "currency": {"enum": ["USD", "EUR", "GBP"]}},
        "required": ["amount", "currency"]}},
        "properties": {"number": {"type": "string", "pattern": "^INV-[0-9]{4}$"},
                       "date": {"type": "string", "format": "date"},
                       "lines": {"type": "array", "items": {"type": "object", "properties": {
                           "desc": STR, "total": {"$ref": "#/$defs/money"}}, "required": ["desc", "total"]},
                           "maxItems": 3},
                       "total": {"$ref": "#/$defs/money"}}, "required": ["number", "date", "lines", "total"]},
    "optional_only": {"type": "object", "properties": {"a": INT, "b": STR, "c": BOOL}},
    "no_extra": {"type": "object", "properties": {"a": INT}, "required": ["a"], "additionalProperties": False},
    "deep_nesting": obj({"a": obj({"b": obj({"c": obj({"d": {"type": "array", "items": {"type": "array",
                                                                                       "items": INT, "maxItems": 2},
                                                                             "maxItems": 2}})})})}),
    "description_heavy": {"type": "object", "title": "Query", "description": "A query.", "$comment": "x",
                          "properties": {"q": {"type": "string", "description": "text", "examples": ["a"]},
                                         "page": {"type": "integer", "default": 1, "minimum": 1, "deprecated": False}},
                          "required": ["q"]},
    "unicode_names": obj({"名前": STR, "âge": INT, "emoji \u2603": BOOL}),
    "weird_keys": obj({"a\"b": STR, "back\\slash": INT, "new\nline": BOOL}),
    "enum_with_quotes": obj({"s": {"enum": ["say \"hi\"", "tab\there", "\u00e9t\u00e9"]}}),
    "min_length_only": obj({"code": {"type": "string", "minLength": 3}}),
    "exact_length": obj({"pin": {"type": "string", "minLength": 4, "maxLength": 4}}),
    "anyof_objects_with_siblings": {"type": "object", "anyOf": [
        {"properties": {"email": STR}, "required": ["email"]},
        {"properties": {"phone": STR}, "required": ["phone"]}]},
    "array_of_anyof": {"type": "array", "maxItems": 4, "items": {"anyOf": [INT, STR, obj({"k": STR})]}},
    "array_unbounded_objects": {"type": "array", "items": obj({"id": INT, "ok": BOOL})},
    "time_series": obj({"start": {"type": "string", "format": "date-time"}, "values": {
        "type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 6}}),
    "integer_enum": obj({"level": {"type": "integer", "enum": [1, 2, 3]}}),
    "tool_call_envelope": obj({"name": {"enum": ["get_weather", "search"]}, "arguments": {"type": "object"}}),
    # Schemas that must be refused up front with the keyword named.
    "refuse_unique_items": {"type": "array", "items": INT, "uniqueItems": True},
    "refuse_not": {"not": {"type": "string"}},
    "refuse_if_then": {"type": "object", "if": {"properties": {"a": INT}}, "then": {"required": ["a"]}},
    "refuse_pattern_properties": {"type": "object", "patternProperties": {"^x": INT}},
    "refuse_multiple_of": {"type": "integer", "multipleOf": 5},
    "refuse_format_hostname": {"type": "string", "format": "hostname"},
    "refuse_contains": {"type": "array", "contains": {"const": 1}},
    "refuse_external_ref": {"$ref": "https://example.com/schema.json"},
}

# The keyword each refused schema's 400 must name.
REFUSED = {"refuse_unique_items": "uniqueItems", "refuse_not": "not", "refuse_if_then": "if",
           "refuse_pattern_properties": "patternProperties", "refuse_multiple_of": "multipleOf",
           "refuse_format_hostname": "hostname", "refuse_contains": "contains", "refuse_external_ref": "$ref"}

# Forty more, as other tools write them (pydantic, zod, OpenAI strict mode, OpenAPI, SchemaStore).
from schema_corpus_more import REFUSED_MORE, SCHEMAS_MORE  # noqa: E402

SCHEMAS.update(SCHEMAS_MORE)
REFUSED.update(REFUSED_MORE)
