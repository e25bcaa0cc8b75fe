#include "structured/json_schema_grammar.h"

#include <cmath>
#include <map>
#include <set>

#include "base/json.h"
#include "structured/gbnf.h"
#include "structured/regex_grammar.h"

namespace vllm::structured {
namespace {

// Any JSON value, in GBNF.  Runs of whitespace are bounded, and so are the
// digits of a number: a model that drifts into either would otherwise fill
// max_tokens with them and never close the document.  Two exponent digits
// keep every number a finite double (a validator's parser may refuse 1e400).
constexpr std::string_view kJsonValueRules = R"(
json-value  ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" json-ws ( json-member ( "," json-ws json-member )* )? "}"
json-member ::= json-string json-ws ":" json-ws json-value json-ws
json-array  ::= "[" json-ws ( json-value json-ws ( "," json-ws json-value json-ws )* )? "]"
json-string ::= "\"" json-char* "\""
json-char   ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
json-int    ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-ws     ::= [ \t\n\r]{0,20}
)";

// The rules above, and a document's start: `root ::= <root>`.  Without any
// whitespace (vLLM's disable_any_whitespace) json-ws takes nothing.
std::string json_rules(std::string_view root, bool any_whitespace) {
  std::string text = "root ::= " + std::string(root) + "\n" + std::string(kJsonValueRules);
  if (!any_whitespace) {
    const size_t at = text.find("json-ws     ::=");
    text.replace(at, text.find('\n', at) - at, "json-ws     ::= \"\"");
  }
  return text;
}

// The largest magnitude the number rules above write (16 integer digits).
constexpr int64_t kMaxMagnitude = 9999999999999999;
constexpr int kMaxSchemaDepth = 64;

// String formats we can write, as regexes over the string's characters.
const std::map<std::string, std::string, std::less<>> kFormats = {
    {"date", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8]))"},
    {"time", R"(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
    {"date-time",
     R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
    {"uuid", R"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"},
    {"email",
     R"([a-zA-Z0-9_+-]{1,32}(\.[a-zA-Z0-9_+-]{1,32}){0,3}@[a-zA-Z0-9-]{1,32}(\.[a-zA-Z0-9-]{1,32}){0,3}\.[a-zA-Z]{2,8})"},
    {"ipv4", R"(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))"},
    {"uri", R"(https?://[a-zA-Z0-9-]{1,32}(\.[a-zA-Z0-9-]{1,32}){0,4}(/[a-zA-Z0-9._~-]{0,32}){0,8})"},
    // RFC 4291's text forms: eight groups, or fewer around one "::" (no zone, no dotted IPv4 tail).
    {"ipv6",
     R"(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4})"
     R"(|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3})"
     R"(|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5})"
     R"(|[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|:((:[0-9a-fA-F]{1,4}){1,7}|:))"},
    // RFC 3339 appendix A's ISO 8601 durations: P1Y2M3DT4H5M6S and its shorter forms, or weeks.
    {"duration", R"(P(([0-9]{1,4}Y([0-9]{1,4}M([0-9]{1,4}D)?)?|[0-9]{1,4}M([0-9]{1,4}D)?|[0-9]{1,4}D))"
                 R"((T([0-9]{1,4}H([0-9]{1,4}M([0-9]{1,4}S)?)?|[0-9]{1,4}M([0-9]{1,4}S)?|[0-9]{1,4}S))?)"
                 R"(|T([0-9]{1,4}H([0-9]{1,4}M([0-9]{1,4}S)?)?|[0-9]{1,4}M([0-9]{1,4}S)?|[0-9]{1,4}S)|[0-9]{1,4}W))"},
};

// "3 to 12 characters", "at least 1 character".
std::string describe(const MatchLength& length) {
  std::string out = length.max == length.min ? std::to_string(length.min)
                    : length.max             ? std::to_string(length.min) + " to " + std::to_string(*length.max)
                                             : "at least " + std::to_string(length.min);
  out += (length.max ? *length.max : length.min) == 1 ? " character" : " characters";
  return out;
}

// Validation keywords no grammar here enforces: refused by name.
const std::set<std::string, std::less<>> kUnsupported = {"not",
                                                         "if",
                                                         "then",
                                                         "else",
                                                         "dependentRequired",
                                                         "dependentSchemas",
                                                         "dependencies",
                                                         "patternProperties",
                                                         "propertyNames",
                                                         "unevaluatedProperties",
                                                         "unevaluatedItems",
                                                         "contains",
                                                         "minContains",
                                                         "maxContains",
                                                         "multipleOf",
                                                         "$dynamicRef",
                                                         "$recursiveRef"};

// The keywords each kind of value reads; others of a known kind are refused.
const std::set<std::string, std::less<>> kObjectKeywords = {"properties", "required", "additionalProperties",
                                                            "minProperties", "maxProperties"};
const std::set<std::string, std::less<>> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems",
                                                           "uniqueItems"};
const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string, std::less<>> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                                            "exclusiveMaximum", "format"};

// Keywords that constrain a value: those we read, and those we refuse.
// Every other one (annotations such as title or default, definitions,
// OpenAPI's "example", vendor "x-" keywords) constrains nothing, and is
// ignored, as validators ignore it.
bool is_validation_keyword(const std::string& key) {
  return kObjectKeywords.contains(key) || kArrayKeywords.contains(key) || kStringKeywords.contains(key) ||
         kNumberKeywords.contains(key) || kUnsupported.contains(key) || key == "type" || key == "enum" ||
         key == "const" || key == "anyOf" || key == "oneOf" || key == "allOf" || key == "$ref" ||
         key == "additionalItems";
}

// Regex alternatives for the decimal integers a..b of one length (the
// strings are built by appending: GCC 12 misreads chains of + as overlapping copies).
std::string same_length_range(const std::string& a, const std::string& b) {
  std::string out;
  if (a.empty()) return out;
  if (a == b) return a;
  const size_t n = a.size();
  if (a[0] == b[0]) {
    out += a[0];
    out += same_length_range(a.substr(1), b.substr(1));
    return out;
  }
  std::string tail;
  if (n > 1) {
    tail += "[0-9]{";
    tail += std::to_string(n - 1);
    tail += '}';
  }
  const std::string zeros(n - 1, '0');
  const std::string nines(n - 1, '9');
  if (a.compare(1, std::string::npos, zeros) == 0 && b.compare(1, std::string::npos, nines) == 0) {
    out += '[';
    out += a[0];
    out += '-';
    out += b[0];
    out += ']';
    out += tail;
    return out;
  }
  out += '(';
  out += a[0];
  out += same_length_range(a.substr(1), nines);
  if (b[0] - a[0] > 1) {
    out += "|[";
    out += static_cast<char>(a[0] + 1);
    out += '-';
    out += static_cast<char>(b[0] - 1);
    out += ']';
    out += tail;
  }
  out += '|';
  out += b[0];
  out += same_length_range(zeros, b.substr(1));
  out += ')';
  return out;
}

// A regex for the decimal integers first..last (0 <= first <= last), without leading zeros.
std::string magnitude_range(int64_t first, int64_t last) {
  const std::string a = std::to_string(first);
  const std::string b = std::to_string(last);
  std::string out = "(";
  for (size_t len = a.size(); len <= b.size(); ++len) {
    std::string lo = len > a.size() ? std::string(len, '0') : a;
    if (len > a.size()) lo[0] = '1';
    const std::string hi = len == b.size() ? b : std::string(len, '9');
    if (len > a.size()) out += '|';
    out += same_length_range(lo, hi);
  }
  out += ')';
  return out;
}

class SchemaConverter {
 public:
  SchemaConverter(const OrderedJson& root, Grammar& g) : root_(root), g_(g) {}

  // The rules of any JSON value (json-value, json-string, json-ws, ...) that the schema's rules use.
  Status add_json_rules(bool any_whitespace) {
    return parse_gbnf_into(json_rules("json-value", any_whitespace), g_).status();
  }

  Result<Symbol> value(const OrderedJson& s, const std::string& path, int depth) {
    if (depth > kMaxSchemaDepth) return error(path, "the schema is nested too deeply");
    if (s.is_boolean()) {
      if (s.get<bool>()) return rule("json-value");
      return error(path, "the schema false allows no value");
    }
    if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
    for (const auto& [key, v] : s.items()) {
      if (kUnsupported.contains(key)) return unsupported(path, key);
    }
    if (s.contains("$ref")) return ref(s, path);
    if (s.contains("allOf")) return all_of(s, path, depth);
    if (s.contains("anyOf") || s.contains("oneOf")) return any_of(s, path, depth);
    if (s.contains("const")) return Symbol(g_.group({g_.literal(s["const"].dump())}, "const"));
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) return error(path, "enum must be a non-empty array");
      std::vector<Grammar::Sequence> alternatives;
      for (const OrderedJson& e : s["enum"]) alternatives.push_back(g_.literal(e.dump()));
      return g_.group(std::move(alternatives), "enum");
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      if (s["type"].is_string()) {
        types.push_back(s["type"].get<std::string>());
      } else if (s["type"].is_array()) {
        for (const OrderedJson& t : s["type"]) {
          if (!t.is_string()) return error(path, "type must be a string or a list of strings");
          types.push_back(t.get<std::string>());
        }
      } else {
        return error(path, "type must be a string or a list of strings");
      }
    } else {
      types.push_back(implied_type(s));
    }
    std::vector<Grammar::Sequence> alternatives;
    for (const std::string& type : types) {
      VLLM_ASSIGN_OR_RETURN(Symbol t, typed(s, type, path, depth));
      alternatives.push_back({t});
    }
    if (alternatives.size() == 1) return alternatives[0][0];
    return g_.group(std::move(alternatives), "types");
  }

 private:
  static Status error(const std::string& path, const std::string& what) {
    return invalid_argument("JSON schema at " + path + ": " + what);
  }
  static Status unsupported(const std::string& path, const std::string& keyword) {
    return invalid_argument("JSON schema keyword '" + keyword + "' (at " + path + ") is not supported");
  }

  Symbol rule(const std::string& name) { return Grammar::ref(g_.rule(name)); }

  static std::string implied_type(const OrderedJson& s) {
    for (const auto& [key, v] : s.items()) {
      if (kObjectKeywords.contains(key)) return "object";
      if (kArrayKeywords.contains(key)) return "array";
      if (kStringKeywords.contains(key) && key != "format") return "string";
      if (kNumberKeywords.contains(key) && key != "format") return "number";
    }
    return "any";
  }

  Result<Symbol> typed(const OrderedJson& s, const std::string& type, const std::string& path, int depth) {
    if (type == "any") return rule("json-value");
    if (type == "null") return Symbol(g_.group({g_.literal("null")}, "null"));
    if (type == "boolean") return g_.group({g_.literal("true"), g_.literal("false")}, "boolean");
    if (type == "object") return object(s, path, depth);
    if (type == "array") return array(s, path, depth);
    if (type == "string") return string(s, path);
    if (type == "integer" || type == "number") return number(s, type == "integer", path);
    return error(path, "unknown type '" + type + "'");
  }

  // A member of an object: "key" ws ":" ws value ws, after leading ws.
  Grammar::Sequence member(const std::string& key, Symbol value) {
    Grammar::Sequence seq{rule("json-ws")};
    for (const Symbol& b : g_.literal(OrderedJson(key).dump())) seq.push_back(b);
    seq.push_back(rule("json-ws"));
    for (const Symbol& b : g_.literal(":")) seq.push_back(b);
    seq.push_back(rule("json-ws"));
    seq.push_back(value);
    seq.push_back(rule("json-ws"));
    return seq;
  }

  Result<Symbol> object(const OrderedJson& s, const std::string& path, int depth) {
    const OrderedJson properties = s.value("properties", OrderedJson::object());
    if (!properties.is_object()) return error(path, "properties must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return error(path, "required must be an array of names");
      for (const OrderedJson& r : s["required"]) {
        if (!r.is_string()) return error(path, "required must be an array of names");
        if (!properties.contains(r.get<std::string>())) {
          return error(path,
                       "required property '" + r.get<std::string>() + "' has no schema in properties (not supported)");
        }
        required.insert(r.get<std::string>());
      }
    }
    const OrderedJson additional = s.value("additionalProperties", OrderedJson(true));
    // A map: no named properties, and a schema (or true) for every value.
    if (properties.empty() && !additional.is_boolean()) {
      VLLM_ASSIGN_OR_RETURN(Symbol v, value(additional, path + "/additionalProperties", depth + 1));
      return map_of(v, s, path);
    }
    if (properties.empty() && additional.is_boolean() && additional.get<bool>() && !s.contains("properties") &&
        !s.contains("minProperties")) {
      return rule("json-object");
    }
    // Named properties in the schema's order, each present or not as
    // `required` says; further properties are never written (valid whatever
    // additionalProperties says).
    if (s.contains("minProperties") && s["minProperties"].get<int64_t>() > static_cast<int64_t>(required.size())) {
      return unsupported(path, "minProperties");
    }
    if (s.contains("maxProperties") && s["maxProperties"].get<int64_t>() < static_cast<int64_t>(properties.size())) {
      return unsupported(path, "maxProperties");
    }
    std::vector<std::pair<std::string, Symbol>> members;
    for (const auto& [name, schema] : properties.items()) {
      VLLM_ASSIGN_OR_RETURN(Symbol v, value(schema, path + "/properties/" + name, depth + 1));
      members.emplace_back(name, v);
    }
    // first[i]: the members from i on when none came before; later[i]: when
    // one did (so each starts with a comma).
    const size_t n = members.size();
    std::vector<int32_t> first(n + 1);
    std::vector<int32_t> later(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      first[i] = g_.new_rule("members");
      later[i] = g_.new_rule("more-members");
    }
    g_.add_alternative(first[n], {rule("json-ws")});
    g_.add_alternative(later[n], {});
    for (size_t i = n; i-- > 0;) {
      Grammar::Sequence kv = member(members[i].first, members[i].second);
      Grammar::Sequence with_comma = g_.literal(",");
      with_comma.insert(with_comma.end(), kv.begin(), kv.end());
      kv.push_back(Grammar::ref(later[i + 1]));
      with_comma.push_back(Grammar::ref(later[i + 1]));
      g_.add_alternative(first[i], kv);
      g_.add_alternative(later[i], with_comma);
      if (!required.contains(members[i].first)) {
        g_.add_alternative(first[i], {Grammar::ref(first[i + 1])});
        g_.add_alternative(later[i], {Grammar::ref(later[i + 1])});
      }
    }
    Grammar::Sequence seq = g_.literal("{");
    seq.push_back(Grammar::ref(first[0]));
    for (const Symbol& b : g_.literal("}")) seq.push_back(b);
    return g_.group({seq}, "object");
  }

  // {"key": value, ...} with any keys.
  Result<Symbol> map_of(Symbol v, const OrderedJson& s, const std::string& path) {
    const int64_t min = s.value("minProperties", int64_t{0});
    std::optional<int64_t> max;
    if (s.contains("maxProperties")) max = s["maxProperties"].get<int64_t>();
    Grammar::Sequence kv{rule("json-ws"), rule("json-string"), rule("json-ws")};
    for (const Symbol& b : g_.literal(":")) kv.push_back(b);
    kv.insert(kv.end(), {rule("json-ws"), v, rule("json-ws")});
    return list("{", "}", kv, min, max, path);
  }

  // open item ("," item){min-1,max-1} close, or open ws close when min is 0.
  Result<Symbol> list(std::string_view open, std::string_view close, const Grammar::Sequence& item, int64_t min,
                      std::optional<int64_t> max, const std::string& path) {
    if (min < 0 || (max && *max < min)) return error(path, "the item or property counts are out of order");
    Grammar::Sequence empty = g_.literal(open);
    empty.push_back(rule("json-ws"));
    for (const Symbol& b : g_.literal(close)) empty.push_back(b);
    if (max && *max == 0) return g_.group({empty}, "empty");
    Grammar::Sequence more = g_.literal(",");
    more.insert(more.end(), item.begin(), item.end());
    Result<Symbol> rest =
        g_.repeat(more, std::max<int64_t>(min - 1, 0), max ? std::optional<int64_t>(*max - 1) : std::nullopt);
    if (!rest.is_ok()) return error(path, rest.status().message());
    Grammar::Sequence full = g_.literal(open);
    full.insert(full.end(), item.begin(), item.end());
    full.push_back(*rest);
    for (const Symbol& b : g_.literal(close)) full.push_back(b);
    std::vector<Grammar::Sequence> alternatives{full};
    if (min == 0) alternatives.push_back(empty);
    return g_.group(std::move(alternatives), "list");
  }

  Result<Symbol> array(const OrderedJson& s, const std::string& path, int depth) {
    if (s.value("uniqueItems", false)) return unsupported(path, "uniqueItems");
    const int64_t min = s.value("minItems", int64_t{0});
    std::optional<int64_t> max;
    if (s.contains("maxItems")) max = s["maxItems"].get<int64_t>();
    // Tuples: prefixItems (or draft 4-2019's items as a list).
    const OrderedJson* prefix = nullptr;
    if (s.contains("prefixItems")) prefix = &s["prefixItems"];
    if (s.contains("items") && s["items"].is_array()) prefix = &s["items"];
    if (prefix == nullptr) {
      Symbol item = rule("json-value");
      if (s.contains("items")) {
        VLLM_ASSIGN_OR_RETURN(item, value(s["items"], path + "/items", depth + 1));
      }
      return list("[", "]", {rule("json-ws"), item, rule("json-ws")}, min, max, path);
    }
    if (!prefix->is_array()) return error(path, "prefixItems must be an array");
    // Every tuple position the bounds allow is written; items beyond the
    // tuple only as minItems requires, from `items` (any value if absent).
    const auto tuple = static_cast<int64_t>(prefix->size());
    const int64_t written = max ? std::min(*max, tuple) : tuple;
    const int64_t extra = std::max<int64_t>(min - tuple, 0);
    if (s.contains("additionalItems") && !s["additionalItems"].is_boolean()) {
      return unsupported(path, "additionalItems");
    }
    const bool closed = (s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>()) ||
                        (s.contains("additionalItems") && !s["additionalItems"].get<bool>());
    if (extra > 0 && closed) return error(path, "minItems exceeds the tuple while no further items are allowed");
    Grammar::Sequence seq = g_.literal("[");
    seq.push_back(rule("json-ws"));
    for (int64_t i = 0; i < written + extra; ++i) {
      if (i > 0) {
        for (const Symbol& b : g_.literal(",")) seq.push_back(b);
        seq.push_back(rule("json-ws"));
      }
      Symbol item = rule("json-value");
      if (i < tuple) {
        VLLM_ASSIGN_OR_RETURN(
            item, value((*prefix)[static_cast<size_t>(i)], path + "/prefixItems/" + std::to_string(i), depth + 1));
      } else if (s.contains("items") && !s["items"].is_array()) {
        VLLM_ASSIGN_OR_RETURN(item, value(s["items"], path + "/items", depth + 1));
      }
      seq.push_back(item);
      seq.push_back(rule("json-ws"));
    }
    for (const Symbol& b : g_.literal("]")) seq.push_back(b);
    return g_.group({seq}, "tuple");
  }

  Result<Symbol> string(const OrderedJson& s, const std::string& path) {
    std::optional<std::string> pattern;
    if (s.contains("format")) {
      if (!s["format"].is_string()) return error(path, "format must be a string");
      auto it = kFormats.find(s["format"].get<std::string>());
      if (it == kFormats.end()) return unsupported(path, "format: " + s["format"].get<std::string>());
      pattern = it->second;
    }
    if (s.contains("pattern")) {
      if (pattern) return error(path, "format together with pattern is not supported");
      if (!s["pattern"].is_string()) return error(path, "pattern must be a string");
      pattern = s["pattern"].get<std::string>();
    }
    const int64_t min = s.value("minLength", int64_t{0});
    const std::optional<int64_t> max =
        s.contains("maxLength") ? std::optional<int64_t>(s["maxLength"].get<int64_t>()) : std::nullopt;
    Grammar::Sequence seq = g_.literal("\"");
    if (pattern) {
      // A pattern is searched for, not matched whole; a string that is one
      // whole match is found by the search, so it is valid.
      std::string whole = *pattern;
      if (whole.starts_with("^")) whole.erase(0, 1);
      MatchLength length;
      Result<Symbol> body = add_regex(whole, g_, RegexText::kJsonString, &length);
      if (!body.is_ok()) return error(path, "pattern: " + body.status().message());
      // No grammar here intersects a pattern with a length, so the bounds
      // are accepted only where every match already keeps them (a URL
      // format under pydantic's HttpUrl bounds, say).
      if (length.min < min || (max && (!length.max || *length.max > *max))) {
        return error(path,
                     "minLength or maxLength together with a pattern or format is supported only where every match "
                     "of it is within them; this one's matches have " +
                         describe(length));
      }
      seq.push_back(*body);
    } else {
      Result<Symbol> chars = g_.repeat({rule("json-char")}, min, max);
      if (!chars.is_ok()) return error(path, chars.status().message());
      seq.push_back(*chars);
    }
    for (const Symbol& b : g_.literal("\"")) seq.push_back(b);
    return g_.group({seq}, "string");
  }

  // Bounds become inclusive integer ones (a subset of the values allowed:
  // an exclusive or fractional bound moves inwards to the next integer).
  Result<Symbol> number(const OrderedJson& s, bool integer, const std::string& path) {
    std::optional<double> lo;
    std::optional<double> hi;
    auto read = [&](const char* key) -> Result<std::optional<double>> {
      if (!s.contains(key) || s[key].is_boolean()) return std::optional<double>();
      if (!s[key].is_number()) return error(path, std::string(key) + " must be a number");
      return std::optional<double>(s[key].get<double>());
    };
    VLLM_ASSIGN_OR_RETURN(std::optional<double> minimum, read("minimum"));
    VLLM_ASSIGN_OR_RETURN(std::optional<double> maximum, read("maximum"));
    VLLM_ASSIGN_OR_RETURN(std::optional<double> exclusive_min, read("exclusiveMinimum"));
    VLLM_ASSIGN_OR_RETURN(std::optional<double> exclusive_max, read("exclusiveMaximum"));
    // Draft 4 writes exclusiveMinimum: true beside minimum.
    const bool draft4_min =
        s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() && s["exclusiveMinimum"].get<bool>();
    const bool draft4_max =
        s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() && s["exclusiveMaximum"].get<bool>();
    auto tighten_lo = [&](double v, bool exclusive) {
      double i = std::ceil(v);
      if (exclusive && i == v) i += 1;
      lo = lo ? std::max(*lo, i) : i;
    };
    auto tighten_hi = [&](double v, bool exclusive) {
      double i = std::floor(v);
      if (exclusive && i == v) i -= 1;
      hi = hi ? std::min(*hi, i) : i;
    };
    if (minimum) tighten_lo(*minimum, draft4_min);
    if (exclusive_min) tighten_lo(*exclusive_min, true);
    if (maximum) tighten_hi(*maximum, draft4_max);
    if (exclusive_max) tighten_hi(*exclusive_max, true);
    if (!lo && !hi) return rule(integer ? "json-int" : "json-number");
    const double cap = static_cast<double>(kMaxMagnitude);
    const int64_t first = lo ? static_cast<int64_t>(std::clamp(*lo, -cap, cap)) : -kMaxMagnitude;
    const int64_t last = hi ? static_cast<int64_t>(std::clamp(*hi, -cap, cap)) : kMaxMagnitude;
    if (first > last) return error(path, "no integer lies within minimum / maximum");
    // Values v with first <= v <= last: the non-negative part by its integer
    // digits, the negative part as "-" and a magnitude; a fraction may
    // follow any integer part below the upper end of its magnitude range.
    const std::string fraction = integer ? "" : R"((\.[0-9]{1,16})?)";
    const std::string zero_fraction = integer ? "" : R"((\.0{1,16})?)";
    auto magnitudes = [&](int64_t a, int64_t b) {  // a <= m <= b, m >= 0
      std::string alt;
      if (a < b) {
        alt += magnitude_range(a, b - 1);
        alt += fraction;
        alt += '|';
      }
      alt += std::to_string(b);
      alt += zero_fraction;
      return alt;
    };
    std::vector<std::string> parts;
    if (last >= 0) parts.push_back(magnitudes(std::max<int64_t>(first, 0), last));
    if (first < 0) {
      // -m with max(-last, 0) <= m <= -first; "-0" is written only with a fraction-free zero excluded.
      const int64_t a = std::max<int64_t>(-last, 1);
      parts.push_back("-(" + magnitudes(a, -first) + ")");
      if (!integer && last >= 0) parts.push_back(R"(-0\.[0-9]{0,15}[1-9])");
    }
    std::string regex;
    for (const std::string& p : parts) regex += (regex.empty() ? "(" : "|(") + p + ")";
    Result<Symbol> sym = add_regex(regex, g_);
    if (!sym.is_ok()) return error(path, sym.status().message());
    return *sym;
  }

  // "#", "#/$defs/x", "#/definitions/x" and other JSON pointers into the document.
  Result<Symbol> ref(const OrderedJson& s, const std::string& path) {
    for (const auto& [key, v] : s.items()) {
      if (key != "$ref" && is_validation_keyword(key)) {
        return error(path, "$ref beside the keyword '" + key + "' is not supported");
      }
    }
    if (!s["$ref"].is_string()) return error(path, "$ref must be a string");
    const std::string target = s["$ref"].get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return Grammar::ref(it->second);
    if (!target.starts_with("#")) return error(path, "$ref '" + target + "' is not within the schema (not supported)");
    const OrderedJson* node = &root_;
    const std::string pointer = target.substr(1);
    try {
      node = &root_.at(OrderedJson::json_pointer(pointer));
    } catch (const OrderedJson::exception&) {
      return error(path, "$ref '" + target + "' points at nothing");
    }
    // The rule exists before its body, so a recursive schema refers to itself.
    const int32_t r = g_.new_rule("ref");
    refs_.emplace(target, r);
    VLLM_ASSIGN_OR_RETURN(Symbol body, value(*node, target, 0));
    g_.add_alternative(r, {body});
    return Grammar::ref(r);
  }

  Result<Symbol> any_of(const OrderedJson& s, const std::string& path, int depth) {
    const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
    if (s.contains("anyOf") && s.contains("oneOf")) return error(path, "anyOf together with oneOf is not supported");
    if (!s[key].is_array() || s[key].empty()) return error(path, std::string(key) + " must be a non-empty array");
    // Keywords beside it apply to every branch: each branch is merged with them.
    OrderedJson siblings = s;
    siblings.erase(key);
    const bool constrained = std::any_of(siblings.items().begin(), siblings.items().end(),
                                         [](const auto& kv) { return is_validation_keyword(kv.key()); });
    std::vector<Grammar::Sequence> alternatives;
    size_t i = 0;
    for (const OrderedJson& branch : s[key]) {
      const std::string at = path + "/" + key + "/" + std::to_string(i++);
      Symbol b;
      if (constrained) {
        VLLM_ASSIGN_OR_RETURN(OrderedJson merged, merge(siblings, branch, at));
        VLLM_ASSIGN_OR_RETURN(b, value(merged, at, depth + 1));
      } else {
        VLLM_ASSIGN_OR_RETURN(b, value(branch, at, depth + 1));
      }
      alternatives.push_back({b});
    }
    return g_.group(std::move(alternatives), key);
  }

  Result<Symbol> all_of(const OrderedJson& s, const std::string& path, int depth) {
    if (!s["allOf"].is_array() || s["allOf"].empty()) return error(path, "allOf must be a non-empty array");
    OrderedJson merged = s;
    merged.erase("allOf");
    size_t i = 0;
    for (const OrderedJson& part : s["allOf"]) {
      const std::string at = path + "/allOf/" + std::to_string(i++);
      VLLM_ASSIGN_OR_RETURN(merged, merge(merged, part, at));
    }
    return value(merged, path, depth + 1);
  }

  // The schema both `a` and `b` describe, where that is plain to write:
  // $refs resolved, properties and required united, other keywords equal or
  // given by one side only.
  Result<OrderedJson> merge(const OrderedJson& a, const OrderedJson& b, const std::string& path) {
    VLLM_ASSIGN_OR_RETURN(OrderedJson x, resolved(a, path));
    VLLM_ASSIGN_OR_RETURN(OrderedJson y, resolved(b, path));
    if (x.is_boolean() || y.is_boolean()) {
      if (x == OrderedJson(true) || (x.is_object() && x.empty())) return y;
      if (y == OrderedJson(true) || (y.is_object() && y.empty())) return x;
      return error(path, "the schema false allows no value");
    }
    if (!x.is_object() || !y.is_object()) return error(path, "a schema must be an object or a boolean");
    for (const auto& [key, v] : y.items()) {
      if (!x.contains(key) || !is_validation_keyword(key)) {
        x[key] = v;
      } else if (key == "properties" && v.is_object() && x[key].is_object()) {
        for (const auto& [name, schema] : v.items()) {
          if (!x[key].contains(name)) {
            x[key][name] = schema;
          } else {
            VLLM_ASSIGN_OR_RETURN(x[key][name], merge(x[key][name], schema, path + "/properties/" + name));
          }
        }
      } else if (key == "required" && v.is_array() && x[key].is_array()) {
        for (const OrderedJson& r : v) {
          if (std::find(x[key].begin(), x[key].end(), r) == x[key].end()) x[key].push_back(r);
        }
      } else if (x[key] != v) {
        return error(path, "the schemas combined give '" + key + "' two different values (not supported)");
      }
    }
    return x;
  }

  // `s` with a top-level $ref replaced by its target (annotations kept).
  Result<OrderedJson> resolved(const OrderedJson& s, const std::string& path) {
    if (!s.is_object() || !s.contains("$ref")) return s;
    OrderedJson out = s;
    for (int hops = 0; out.is_object() && out.contains("$ref"); ++hops) {
      if (hops > 32 || !out["$ref"].is_string() || !out["$ref"].get<std::string>().starts_with("#")) {
        return error(path, "$ref cannot be resolved here");
      }
      const std::string pointer = out["$ref"].get<std::string>().substr(1);
      OrderedJson target;
      try {
        target = root_.at(OrderedJson::json_pointer(pointer));
      } catch (const OrderedJson::exception&) {
        return error(path, "$ref '" + out["$ref"].get<std::string>() + "' points at nothing");
      }
      out.erase("$ref");
      VLLM_ASSIGN_OR_RETURN(out, merge(out, target, path));
    }
    return out;
  }

  const OrderedJson& root_;
  Grammar& g_;
  std::map<std::string, int32_t> refs_;
};

}  // namespace

Result<Grammar> json_object_grammar(bool any_whitespace) {
  Grammar g;
  VLLM_ASSIGN_OR_RETURN(int32_t root, parse_gbnf_into(json_rules("json-object", any_whitespace), g));
  g.set_root(root);
  VLLM_RETURN_IF_ERROR(g.validate());
  return g;
}

Result<Grammar> json_schema_grammar(std::string_view schema_text, bool any_whitespace) {
  const OrderedJson schema = OrderedJson::parse(schema_text, nullptr, false);
  if (schema.is_discarded()) return invalid_argument("the JSON schema is not valid JSON");
  Grammar g;
  SchemaConverter converter(schema, g);
  VLLM_RETURN_IF_ERROR(converter.add_json_rules(any_whitespace));
  try {
    VLLM_ASSIGN_OR_RETURN(Symbol top, converter.value(schema, "#", 0));
    // Leading and trailing whitespace, as a model may write them.
    g.set_root(g.group({{Grammar::ref(g.rule("json-ws")), top, Grammar::ref(g.rule("json-ws"))}}, "document").index);
  } catch (const OrderedJson::exception& e) {
    return invalid_argument(std::string("the JSON schema has an unexpected structure: ") + e.what());
  }
  VLLM_RETURN_IF_ERROR(g.validate());
  return g;
}

}  // namespace vllm::structured
