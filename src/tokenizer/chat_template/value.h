// Values of the chat-template language, with Python/Jinja2 semantics:
// lists and dicts are shared by reference, dicts keep insertion order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"

namespace vllm::jinja {

// Any failure while parsing or rendering; caught at the ChatTemplate edge.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;
struct CallArgs;
using Function = std::function<Value(CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // undefined
  static Value none();
  Value(bool b);                                    // NOLINT
  Value(int64_t i);                                 // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double d);                                  // NOLINT
  Value(std::string s);                             // NOLINT
  Value(const char* s) : Value(std::string(s)) {}   // NOLINT
  Value(List list);                                 // NOLINT
  Value(Dict dict);                                 // NOLINT
  static Value function(Function f);
  // A namespace() object: a dict whose attributes may be assigned.
  static Value namespace_object(Dict dict);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && is_namespace_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_float() const { return kind_ == Kind::kInt ? static_cast<double>(i_) : d_; }
  const std::string& as_string() const { return *s_; }
  List& list() const { return *list_; }
  Dict& dict() const { return *dict_; }
  const Function& fn() const { return *fn_; }

  bool truthy() const;
  // Dict lookup; undefined when absent.
  Value get(const std::string& key) const;
  void set(const std::string& key, Value v) const;

  // str(x) as Jinja prints it (None -> "None", True -> "True", lists in repr form).
  std::string str() const;
  // repr(x) as Python writes it inside containers ('a' for strings).
  std::string repr() const;
  std::string type_name() const;

  static Value from_json(const OrderedJson& j);
  // json.dumps(x, ensure_ascii=False, indent=indent) as Python writes it.
  std::string to_json(int indent = -1) const;

 private:
  void dump_json(std::string& out, int indent, int depth) const;

  Kind kind_ = Kind::kUndefined;
  bool is_namespace_ = false;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0.0;
  std::shared_ptr<std::string> s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

bool operator==(const Value& a, const Value& b);
inline bool operator!=(const Value& a, const Value& b) { return !(a == b); }

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, else `fallback`.
  Value get(size_t index, const std::string& name, Value fallback = Value()) const;
};

// Python's repr of a float: shortest round-trip digits, always with a '.' or exponent.
std::string format_float(double d);

}  // namespace vllm::jinja
