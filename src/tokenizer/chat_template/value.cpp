#include "tokenizer/chat_template/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/json.h"

namespace vllm::jinja {

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double d) : kind_(Kind::kFloat), d_(d) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::make_shared<std::string>(std::move(s))) {}
Value::Value(List list) : kind_(Kind::kList), list_(std::make_shared<List>(std::move(list))) {}
Value::Value(Dict dict) : kind_(Kind::kDict), dict_(std::make_shared<Dict>(std::move(dict))) {}

Value Value::function(Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.fn_ = std::make_shared<Function>(std::move(f));
  return v;
}

Value Value::namespace_object(Dict dict) {
  Value v(std::move(dict));
  v.is_namespace_ = true;
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return d_ != 0.0;
    case Kind::kString:
      return !s_->empty();
    case Kind::kList:
      return !list_->empty();
    case Kind::kDict:
      return !dict_->empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

Value Value::get(const std::string& key) const {
  if (kind_ != Kind::kDict) return Value();
  for (const auto& [k, v] : *dict_) {
    if (k == key) return v;
  }
  return Value();
}

void Value::set(const std::string& key, Value v) const {
  for (auto& [k, old] : *dict_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  dict_->emplace_back(key, std::move(v));
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest digits that round-trip, then Python's layout: positional for
  // decimal exponents in [-4, 16), scientific otherwise.
  char buf[40];
  for (int precision = 0; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string sci = buf;  // [-]d[.ddd]e[+-]XX
  const size_t e = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out +=
          digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1, std::string::npos);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_buf;
}

namespace {

std::string python_quote(const std::string& s) {
  // Python prefers single quotes unless the string holds one and no double quote.
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = use_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c == q) {
          out += '\\';
          out += c;
        } else {
          out += c;
        }
    }
  }
  return out + q;
}

}  // namespace

std::string Value::str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return *s_;
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat:
      return format_float(d_);
    case Kind::kString:
      return python_quote(*s_);
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        out += (i ? ", " : "") + python_quote((*dict_)[i].first) + ": " + (*dict_)[i].second.repr();
      }
      return out + "}";
    }
    case Kind::kFunction:
      return "<function>";
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "none";
    case Kind::kBool:
      return "boolean";
    case Kind::kInt:
      return "integer";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "string";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

Value Value::from_json(const OrderedJson& j) {
  switch (j.type()) {
    case OrderedJson::value_t::null:
      return none();
    case OrderedJson::value_t::boolean:
      return Value(j.get<bool>());
    case OrderedJson::value_t::number_integer:
      return Value(j.get<int64_t>());
    case OrderedJson::value_t::number_unsigned:
      return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case OrderedJson::value_t::number_float:
      return Value(j.get<double>());
    case OrderedJson::value_t::string:
      return Value(j.get<std::string>());
    case OrderedJson::value_t::array: {
      List list;
      for (const OrderedJson& item : j) list.push_back(from_json(item));
      return Value(std::move(list));
    }
    case OrderedJson::value_t::object: {
      Dict dict;
      for (const auto& [k, v] : j.items()) dict.emplace_back(k, from_json(v));
      return Value(std::move(dict));
    }
    default:
      return Value();
  }
}

void Value::dump_json(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += b_ ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(i_);
      return;
    case Kind::kFloat:
      out += std::isnan(d_) ? "NaN" : std::isinf(d_) ? (d_ > 0 ? "Infinity" : "-Infinity") : format_float(d_);
      return;
    case Kind::kString:
      append_python_json_string(out, *s_);
      return;
    case Kind::kList:
      if (list_->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        (*list_)[i].dump_json(out, indent, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    case Kind::kDict:
      if (dict_->empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < dict_->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        append_python_json_string(out, (*dict_)[i].first);
        out += ": ";
        (*dict_)[i].second.dump_json(out, indent, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    case Kind::kFunction:
      throw TemplateError("Object of type function is not JSON serializable");
  }
}

std::string Value::to_json(int indent) const {
  std::string out;
  dump_json(out, indent, 0);
  return out;
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::kInt && b.kind() == Value::Kind::kInt) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  // Python: True == 1.
  if (a.kind() == Value::Kind::kBool && b.is_number()) return Value(static_cast<int64_t>(a.as_bool())) == b;
  if (b.kind() == Value::Kind::kBool && a.is_number()) return b == a;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.as_bool() == b.as_bool();
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (a.list()[i] != b.list()[i]) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [k, v] : a.dict()) {
        if (b.get(k) != v || b.get(k).is_undefined()) return false;
      }
      return true;
    }
    case Value::Kind::kFunction:
      return &a.fn() == &b.fn();
    default:
      return false;
  }
}

Value CallArgs::get(size_t index, const std::string& name, Value fallback) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  if (index < positional.size()) return positional[index];
  return fallback;
}

}  // namespace vllm::jinja
