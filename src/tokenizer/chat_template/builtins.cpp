#include "tokenizer/chat_template/builtins.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "tokenizer/utf8.h"

namespace vllm::jinja {
namespace {

bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string expect_string(const Value& v, const char* what) {
  if (!v.is_string()) throw TemplateError(std::string(what) + " expects a string, got " + v.type_name());
  return v.as_string();
}

// Applies a per-code-point case mapping; invalid bytes stay as they are.
template <typename Map>
std::string map_code_points(const std::string& s, Map map) {
  std::string out;
  utf8::for_each_code_point(s, [&](int32_t cp, std::string_view bytes) {
    if (cp < 0) {
      out.append(bytes);
    } else {
      utf8::append(out, static_cast<uint32_t>(map(cp)));
    }
  });
  return out;
}

std::string lower(const std::string& s) {
  return map_code_points(s, [](int32_t cp) { return utf8proc_tolower(cp); });
}
std::string upper(const std::string& s) {
  return map_code_points(s, [](int32_t cp) { return utf8proc_toupper(cp); });
}
// Python's str.title: upper after a non-letter, lower after a letter.
std::string title(const std::string& s) {
  bool prev_cased = false;
  return map_code_points(s, [&](int32_t cp) {
    const bool cased = utf8proc_tolower(cp) != cp || utf8proc_toupper(cp) != cp;
    const int32_t r = prev_cased ? utf8proc_tolower(cp) : utf8proc_toupper(cp);
    prev_cased = cased;
    return r;
  });
}
std::string capitalize(const std::string& s) {
  bool first = true;
  return map_code_points(s, [&](int32_t cp) {
    const int32_t r = first ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
    first = false;
    return r;
  });
}

std::string replace_str(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

List split_str(const std::string& s, const Value& sep_v, int64_t maxsplit) {
  List out;
  if (sep_v.is_undefined() || sep_v.is_none()) {  // runs of whitespace, no empty parts
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t end = s.size();
        while (end > i && is_py_space(s[end - 1])) --end;
        out.emplace_back(s.substr(i, end - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_py_space(s[j])) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  const std::string sep = expect_string(sep_v, "split");
  if (sep.empty()) throw TemplateError("empty separator");
  size_t pos = 0;
  for (;;) {
    const size_t hit = s.find(sep, pos);
    if (hit == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit)) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

int64_t int_arg(const Value& v, int64_t fallback) {
  if (v.is_undefined() || v.is_none()) return fallback;
  if (v.kind() == Value::Kind::kInt) return v.as_int();
  throw TemplateError("expected an integer argument, got " + v.type_name());
}

Value length(const Value& v) {
  if (v.is_string()) {
    int64_t n = 0;
    for (char c : v.as_string()) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return Value(n);
  }
  if (v.is_list()) return Value(static_cast<int64_t>(v.list().size()));
  if (v.is_dict()) return Value(static_cast<int64_t>(v.dict().size()));
  if (v.is_undefined()) return Value(int64_t{0});
  throw TemplateError("object of type " + v.type_name() + " has no len()");
}

List as_list(const Value& v) {
  if (v.is_list()) return v.list();
  if (v.is_dict()) {
    List keys;
    for (const auto& [k, _] : v.dict()) keys.emplace_back(k);
    return keys;
  }
  if (v.is_string()) {
    List chars;
    const std::string& s = v.as_string();
    for (size_t i = 0; i < s.size();) {
      const size_t n =
          std::min<size_t>(static_cast<size_t>(utf8::sequence_length(static_cast<uint8_t>(s[i]))), s.size() - i);
      chars.emplace_back(s.substr(i, n));
      i += n;
    }
    return chars;
  }
  if (v.is_undefined() || v.is_none()) return {};
  throw TemplateError("'" + v.type_name() + "' object is not iterable");
}

// obj.a.b for map(attribute=) and selectattr.
Value attribute_path(const Value& obj, const std::string& path) {
  Value v = obj;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (v.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = std::stoul(part);
      v = i < v.list().size() ? v.list()[i] : Value();
    } else {
      v = v.get(part);
    }
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return v;
}

// select/reject/selectattr/rejectattr: args start with the test name.
Value filter_items(const Value& seq, CallArgs& args, bool by_attribute, bool keep_matches) {
  size_t next = 0;
  std::string attr;
  if (by_attribute) attr = expect_string(args.get(next++, "attribute"), "selectattr");
  const Value test_name = args.get(next++, "");
  CallArgs test_args;
  for (size_t i = next; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  List out;
  for (const Value& item : as_list(seq)) {
    const Value subject = by_attribute ? attribute_path(item, attr) : item;
    const bool match = test_name.is_undefined() ? subject.truthy()
                                                : apply_test(expect_string(test_name, "select"), subject, test_args);
    if (match == keep_matches) out.push_back(item);
  }
  return Value(std::move(out));
}

Value sort_items(const Value& seq, CallArgs& args) {
  List items = as_list(seq);
  const bool reverse = args.get(0, "reverse", Value(false)).truthy();
  const bool case_sensitive = args.get(1, "case_sensitive", Value(false)).truthy();
  const Value attr = args.get(2, "attribute");
  auto key = [&](const Value& v) {
    Value k = attr.is_string() ? attribute_path(v, attr.as_string()) : v;
    if (k.is_string() && !case_sensitive) k = Value(lower(k.as_string()));
    return k;
  };
  auto less = [&](const Value& a, const Value& b) {
    const Value ka = key(a), kb = key(b);
    if (ka.is_string() && kb.is_string()) return ka.as_string() < kb.as_string();
    if (ka.is_number() && kb.is_number()) return ka.as_float() < kb.as_float();
    throw TemplateError("cannot sort " + ka.type_name() + " and " + kb.type_name());
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& a, const Value& b) { return reverse ? less(b, a) : less(a, b); });
  return Value(std::move(items));
}

std::string indent_text(const std::string& s, const Value& width_v, bool first, bool blank) {
  const std::string pad =
      width_v.is_string() ? width_v.as_string() : std::string(static_cast<size_t>(int_arg(width_v, 4)), ' ');
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    const size_t nl = s.find('\n', start);
    const std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((is_first ? first : true) && (blank || !line.empty()) && !(is_first && !first)) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    is_first = false;
  }
  return out;
}

}  // namespace

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
  auto strip_this = [&](size_t i) {
    if (chars.is_undefined() || chars.is_none()) return is_py_space(s[i]);
    return expect_string(chars, "strip").find(s[i]) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && strip_this(b)) ++b;
  }
  if (right) {
    while (e > b && strip_this(e - 1)) --e;
  }
  return s.substr(b, e - b);
}

Value apply_filter(const std::string& name, const Value& v, CallArgs& args) {
  if (name == "trim") return Value(strip_chars(expect_string(v, "trim"), args.get(0, "chars"), true, true));
  if (name == "length" || name == "count") return length(v);
  if (name == "upper") return Value(upper(v.str()));
  if (name == "lower") return Value(lower(v.str()));
  if (name == "title") return Value(title(v.str()));
  if (name == "capitalize") return Value(capitalize(v.str()));
  if (name == "string") return Value(v.str());
  if (name == "safe") return v;
  if (name == "e" || name == "escape") {
    std::string out;
    for (char c : v.str()) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&#34;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += c;
      }
    }
    return Value(out);
  }
  if (name == "replace") {
    return Value(
        replace_str(v.str(), args.get(0, "old").str(), args.get(1, "new").str(), int_arg(args.get(2, "count"), -1)));
  }
  if (name == "join") {
    const Value attr = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : as_list(v)) {
      if (!first) out += args.get(0, "d", Value("")).str();
      out += (attr.is_string() ? attribute_path(item, attr.as_string()) : item).str();
      first = false;
    }
    return Value(out);
  }
  if (name == "default" || name == "d") {
    const bool boolean = args.get(1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return args.get(0, "default_value", Value(""));
    return v;
  }
  if (name == "first") {
    const List items = as_list(v);
    return items.empty() ? Value() : items.front();
  }
  if (name == "last") {
    const List items = as_list(v);
    return items.empty() ? Value() : items.back();
  }
  if (name == "list") return Value(as_list(v));
  if (name == "reverse") {
    if (v.is_string()) {
      List chars = as_list(v);
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value(out);
    }
    List items = as_list(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "items") {
    if (!v.is_dict()) throw TemplateError("items expects a mapping");
    List out;
    for (const auto& [k, val] : v.dict()) out.emplace_back(List{Value(k), val});
    return Value(std::move(out));
  }
  if (name == "int") {
    if (v.kind() == Value::Kind::kInt) return v;
    if (v.kind() == Value::Kind::kFloat) return Value(static_cast<int64_t>(v.as_float()));
    if (v.kind() == Value::Kind::kBool) return Value(static_cast<int64_t>(v.as_bool()));
    if (v.is_string()) {
      try {
        return Value(static_cast<int64_t>(std::stoll(v.as_string())));
      } catch (...) {
      }
    }
    return args.get(0, "default", Value(int64_t{0}));
  }
  if (name == "float") {
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string()) {
      try {
        return Value(std::stod(v.as_string()));
      } catch (...) {
      }
    }
    return args.get(0, "default", Value(0.0));
  }
  if (name == "abs") {
    if (v.kind() == Value::Kind::kInt) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    if (v.kind() == Value::Kind::kFloat) return Value(std::fabs(v.as_float()));
    throw TemplateError("bad operand type for abs(): " + v.type_name());
  }
  if (name == "round") {
    const int64_t precision = int_arg(args.get(0, "precision"), 0);
    const double scale = std::pow(10.0, static_cast<double>(precision));
    return Value(std::nearbyint(v.as_float() * scale) / scale);
  }
  if (name == "tojson") {
    const Value indent = args.get(0, "indent");
    return Value(v.to_json(indent.kind() == Value::Kind::kInt ? static_cast<int>(indent.as_int()) : -1));
  }
  if (name == "map") {
    const Value attr = args.get(99, "attribute");
    List out;
    if (attr.is_string()) {
      const Value fallback = args.get(99, "default");
      for (const Value& item : as_list(v)) {
        Value x = attribute_path(item, attr.as_string());
        out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
      }
      return Value(std::move(out));
    }
    const std::string filter = expect_string(args.get(0, "filter"), "map");
    CallArgs rest;
    for (size_t i = 1; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
    for (const Value& item : as_list(v)) out.push_back(apply_filter(filter, item, rest));
    return Value(std::move(out));
  }
  if (name == "select") return filter_items(v, args, false, true);
  if (name == "reject") return filter_items(v, args, false, false);
  if (name == "selectattr") return filter_items(v, args, true, true);
  if (name == "rejectattr") return filter_items(v, args, true, false);
  if (name == "sort") return sort_items(v, args);
  if (name == "unique") {
    List out;
    for (const Value& item : as_list(v)) {
      if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
    return Value(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) throw TemplateError("dictsort expects a mapping");
    Dict d = v.dict();
    std::stable_sort(d.begin(), d.end(), [](const auto& a, const auto& b) { return lower(a.first) < lower(b.first); });
    List out;
    for (const auto& [k, val] : d) out.emplace_back(List{Value(k), val});
    return Value(std::move(out));
  }
  if (name == "indent") {
    return Value(indent_text(v.str(), args.get(0, "width"), args.get(1, "first", Value(false)).truthy(),
                             args.get(2, "blank", Value(false)).truthy()));
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(split_str(v.str(), Value(), -1).size()));
  if (name == "center") {
    const std::string s = v.str();
    const int64_t width = int_arg(args.get(0, "width"), 80);
    const int64_t n = length(v).as_int();
    if (n >= width) return Value(s);
    const int64_t left = (width - n) / 2;
    return Value(std::string(static_cast<size_t>(left), ' ') + s +
                 std::string(static_cast<size_t>(width - n - left), ' '));
  }
  throw TemplateError("no filter named '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "callable") return v.kind() == K::kFunction;
  if (name == "lower") return v.is_string() && lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && upper(v.as_string()) == v.as_string();
  if (name == "even" || name == "odd") {
    if (v.kind() != K::kInt) throw TemplateError("'" + name + "' test needs an integer");
    return (v.as_int() % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    const int64_t d = int_arg(args.get(0, "num"), 1);
    if (d == 0 || v.kind() != K::kInt) return false;
    return v.as_int() % d == 0;
  }
  const Value other = args.get(0, "b");
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") return v == other;
  if (name == "ne" || name == "!=") return v != other;
  if (name == "in") {
    if (other.is_list()) return std::find(other.list().begin(), other.list().end(), v) != other.list().end();
    if (other.is_string() && v.is_string()) return other.as_string().find(v.as_string()) != std::string::npos;
    if (other.is_dict()) return v.is_string() && !other.get(v.as_string()).is_undefined();
    return false;
  }
  if (name == "lt" || name == "gt" || name == "le" || name == "ge" || name == "lessthan" || name == "greaterthan") {
    if (!(v.is_number() && other.is_number()) && !(v.is_string() && other.is_string())) {
      throw TemplateError("'" + name + "' needs two numbers or two strings");
    }
    const int c = v.is_string() ? v.as_string().compare(other.as_string())
                                : (v.as_float() < other.as_float()   ? -1
                                   : v.as_float() > other.as_float() ? 1
                                                                     : 0);
    if (name == "lt" || name == "lessthan") return c < 0;
    if (name == "gt" || name == "greaterthan") return c > 0;
    if (name == "le") return c <= 0;
    return c >= 0;
  }
  throw TemplateError("no test named '" + name + "'");
}

Value method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    const std::string s = obj.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      return Value::function([s, name](CallArgs& a) {
        return Value(strip_chars(s, a.get(0, "chars"), name != "rstrip", name != "lstrip"));
      });
    }
    if (name == "split") {
      return Value::function(
          [s](CallArgs& a) { return Value(split_str(s, a.get(0, "sep"), int_arg(a.get(1, "maxsplit"), -1))); });
    }
    if (name == "startswith" || name == "endswith") {
      return Value::function([s, name](CallArgs& a) {
        const Value arg = a.get(0, "prefix");
        List options = arg.is_list() ? arg.list() : List{arg};
        for (const Value& o : options) {
          const std::string p = expect_string(o, name.c_str());
          const bool hit = name == "startswith"
                               ? s.compare(0, p.size(), p) == 0
                               : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
          if (hit) return Value(true);
        }
        return Value(false);
      });
    }
    if (name == "upper") return Value::function([s](CallArgs&) { return Value(upper(s)); });
    if (name == "lower") return Value::function([s](CallArgs&) { return Value(lower(s)); });
    if (name == "title") return Value::function([s](CallArgs&) { return Value(title(s)); });
    if (name == "capitalize") return Value::function([s](CallArgs&) { return Value(capitalize(s)); });
    if (name == "replace") {
      return Value::function([s](CallArgs& a) {
        return Value(replace_str(s, a.get(0, "old").str(), a.get(1, "new").str(), int_arg(a.get(2, "count"), -1)));
      });
    }
    if (name == "find" || name == "count") {
      return Value::function([s, name](CallArgs& a) {
        const std::string sub = expect_string(a.get(0, "sub"), name.c_str());
        if (name == "find") {
          const size_t hit = s.find(sub);
          return Value(hit == std::string::npos ? int64_t{-1} : static_cast<int64_t>(hit));
        }
        if (sub.empty()) return Value(static_cast<int64_t>(s.size() + 1));
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value(n);
      });
    }
    if (name == "join") {
      return Value::function([s](CallArgs& a) {
        std::string out;
        bool first = true;
        for (const Value& item : as_list(a.get(0, "iterable"))) {
          if (!first) out += s;
          out += expect_string(item, "join");
          first = false;
        }
        return Value(out);
      });
    }
    if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
      return Value::function([s, name](CallArgs&) {
        if (s.empty()) return Value(false);
        for (char c : s) {
          const auto u = static_cast<unsigned char>(c);
          const bool ok = name == "isdigit"   ? std::isdigit(u)
                          : name == "isspace" ? is_py_space(c)
                          : name == "isalpha" ? std::isalpha(u)
                                              : std::isalnum(u);
          if (!ok) return Value(false);
        }
        return Value(true);
      });
    }
    return Value();
  }
  if (obj.is_dict()) {
    if (name == "items" || name == "keys" || name == "values") {
      return Value::function([obj, name](CallArgs&) {
        List out;
        for (const auto& [k, v] : obj.dict()) {
          if (name == "items") out.emplace_back(List{Value(k), v});
          if (name == "keys") out.emplace_back(k);
          if (name == "values") out.push_back(v);
        }
        return Value(std::move(out));
      });
    }
    if (name == "get") {
      return Value::function([obj](CallArgs& a) {
        const Value v = obj.get(a.get(0, "key").str());
        return v.is_undefined() ? a.get(1, "default", Value::none()) : v;
      });
    }
    return Value();
  }
  return Value();
}

Dict global_functions() {
  Dict g;
  g.emplace_back("raise_exception", Value::function([](CallArgs& a) -> Value {
                   throw TemplateError(a.get(0, "message", Value("")).str());
                 }));
  g.emplace_back("namespace", Value::function([](CallArgs& a) {
                   Dict d;
                   if (!a.positional.empty() && a.positional[0].is_dict()) d = a.positional[0].dict();
                   for (const auto& [k, v] : a.keyword) d.emplace_back(k, v);
                   return Value::namespace_object(std::move(d));
                 }));
  g.emplace_back("dict", Value::function([](CallArgs& a) {
                   Dict d;
                   for (const auto& [k, v] : a.keyword) d.emplace_back(k, v);
                   return Value(std::move(d));
                 }));
  g.emplace_back("range", Value::function([](CallArgs& a) {
                   int64_t start = 0, stop, step = 1;
                   if (a.positional.size() == 1) {
                     stop = int_arg(a.positional[0], 0);
                   } else if (a.positional.size() >= 2) {
                     start = int_arg(a.positional[0], 0);
                     stop = int_arg(a.positional[1], 0);
                     if (a.positional.size() >= 3) step = int_arg(a.positional[2], 1);
                   } else {
                     throw TemplateError("range expects 1 to 3 arguments");
                   }
                   if (step == 0) throw TemplateError("range() arg 3 must not be zero");
                   List out;
                   for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                     if (out.size() >= 1'000'000) throw TemplateError("range too large");
                     out.emplace_back(i);
                   }
                   return Value(std::move(out));
                 }));
  g.emplace_back("strftime_now", Value::function([](CallArgs& a) {
                   const std::string fmt = expect_string(a.get(0, "format"), "strftime_now");
                   const std::time_t now = std::time(nullptr);
                   std::tm tm{};
                   localtime_r(&now, &tm);
                   char buf[256];
                   const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
                   return Value(std::string(buf, n));
                 }));
  return g;
}

}  // namespace vllm::jinja
