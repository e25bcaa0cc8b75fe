#include "tokenizer/chat_template/interpreter.h"

#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "tokenizer/chat_template/builtins.h"
#include "tokenizer/utf8.h"

namespace vllm::jinja {
namespace {

// Bounds for hostile templates: output size, loop and call steps, call depth.
constexpr size_t kMaxOutputBytes = 64u << 20;
constexpr int64_t kMaxSteps = 20'000'000;
constexpr int kMaxCallDepth = 100;
// How often a render looks whether its caller has given up on it.
constexpr int64_t kStepsPerStopCheck = 1024;

enum class Flow { kNormal, kBreak, kContinue };

using Frame = std::unordered_map<std::string, Value>;

int64_t to_int(const Value& v, const char* what) {
  if (v.kind() == Value::Kind::kInt) return v.as_int();
  if (v.kind() == Value::Kind::kBool) return v.as_bool();
  throw TemplateError(std::string(what) + " must be an integer, not " + v.type_name());
}

// Python's floor division for integers.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "+" && a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
  if (op == "+" && a.is_list() && b.is_list()) {
    List out = a.list();
    out.insert(out.end(), b.list().begin(), b.list().end());
    return Value(std::move(out));
  }
  if (op == "*" && a.is_string() && b.kind() == Value::Kind::kInt) {
    std::string out;
    for (int64_t i = 0; i < b.as_int() && out.size() < kMaxOutputBytes; ++i) out += a.as_string();
    return Value(out);
  }
  auto numeric = [](const Value& v) { return v.is_number() || v.kind() == Value::Kind::kBool; };
  if (!numeric(a) || !numeric(b)) {
    throw TemplateError("unsupported operand types for " + op + ": " + a.type_name() + " and " + b.type_name());
  }
  const bool ints = a.kind() != Value::Kind::kFloat && b.kind() != Value::Kind::kFloat;
  const double x = a.kind() == Value::Kind::kBool ? a.as_bool() : a.as_float();
  const double y = b.kind() == Value::Kind::kBool ? b.as_bool() : b.as_float();
  if (ints) {
    // Python integers do not overflow; past int64 we continue in floating point.
    const int64_t i = to_int(a, "operand"), j = to_int(b, "operand");
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(i, j, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(i, j, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(i, j, &r)) return Value(r);
    if ((op == "//" || op == "%") && j == 0) throw TemplateError("integer division or modulo by zero");
    if (op == "//" && !(i == INT64_MIN && j == -1)) return Value(floor_div(i, j));
    if (op == "%") {
      // Python's modulo takes the divisor's sign; from C++'s remainder, which
      // (unlike i - floor_div(i, j) * j near INT64_MIN) cannot overflow.
      if (j == -1) return Value(int64_t{0});
      const int64_t rem = i % j;
      return Value(rem != 0 && (rem < 0) != (j < 0) ? rem + j : rem);
    }
    if (op == "**" && j >= 0) {
      // Exponentiation by squaring: at most 63 rounds whatever the exponent.
      r = 1;
      int64_t base = i;
      bool overflow = false;
      for (int64_t e = j; e > 0 && !overflow; e >>= 1) {
        if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
        if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
      }
      if (!overflow) return Value(r);
    }
  }
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/") {
    if (y == 0) throw TemplateError("division by zero");
    return Value(x / y);
  }
  if (op == "//") {
    if (y == 0) throw TemplateError("division by zero");
    return Value(std::floor(x / y));
  }
  if (op == "%") {
    if (y == 0) throw TemplateError("modulo by zero");
    return Value(x - std::floor(x / y) * y);
  }
  if (op == "**") return Value(std::pow(x, y));
  throw TemplateError("unknown operator " + op);
}

int compare_values(const Value& a, const Value& b, const std::string& op) {
  if ((a.is_number() || a.kind() == Value::Kind::kBool) && (b.is_number() || b.kind() == Value::Kind::kBool)) {
    const double x = a.kind() == Value::Kind::kBool ? a.as_bool() : a.as_float();
    const double y = b.kind() == Value::Kind::kBool ? b.as_bool() : b.as_float();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  throw TemplateError("'" + op + "' not supported between " + a.type_name() + " and " + b.type_name());
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) throw TemplateError("'in <string>' requires a string on the left");
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.list()) {
      if (v == item) return true;
    }
    return false;
  }
  if (container.is_dict()) return item.is_string() && !container.get(item.as_string()).is_undefined();
  if (container.is_undefined() || container.is_none()) return false;
  throw TemplateError("argument of type " + container.type_name() + " is not iterable");
}

// The code points of a string as one-character strings.
List characters(const std::string& s) {
  List out;
  for (size_t i = 0; i < s.size();) {
    const size_t n =
        std::min<size_t>(static_cast<size_t>(utf8::sequence_length(static_cast<uint8_t>(s[i]))), s.size() - i);
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kList:
      return v.list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, _] : v.dict()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString:
      return characters(v.as_string());
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return {};
    default:
      throw TemplateError("'" + v.type_name() + "' object is not iterable");
  }
}

int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

template <typename Seq, typename Make>
Value slice_of(const Seq& seq, const Value& start_v, const Value& stop_v, const Value& step_v, Make make) {
  const auto n = static_cast<int64_t>(seq.size());
  const int64_t step = step_v.is_undefined() || step_v.is_none() ? 1 : to_int(step_v, "slice step");
  if (step == 0) throw TemplateError("slice step cannot be zero");
  auto bound = [&](const Value& v, int64_t fallback) {
    if (v.is_undefined() || v.is_none()) return fallback;
    int64_t i = to_int(v, "slice index");
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t start = bound(start_v, step > 0 ? 0 : n - 1);
  const int64_t stop = bound(stop_v, step > 0 ? n : -1);
  Seq out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(seq[static_cast<size_t>(i)]);
  return make(std::move(out));
}

class Interpreter {
 public:
  Interpreter(const Dict& variables, std::stop_token stop) : stop_(std::move(stop)) {
    frames_.emplace_back();
    for (auto& [k, v] : global_functions()) frames_[0][k] = v;
    for (const auto& [k, v] : variables) frames_[0][k] = v;
  }

  std::string run(const Body& body) {
    std::string out;
    exec(body, out);
    return out;
  }

 private:
  void step() {
    if (++steps_ > kMaxSteps) throw TemplateError("template ran too long");
    if (steps_ % kStepsPerStopCheck == 0 && stop_.stop_requested()) throw TemplateError("rendering was cancelled");
  }

  Value lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value();
  }

  Flow exec(const Body& body, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow f = exec(*s, out);
      if (f != Flow::kNormal) return f;
      if (out.size() > kMaxOutputBytes) throw TemplateError("template output too large");
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText:
        out += s.text;
        return Flow::kNormal;
      case Stmt::Kind::kOutput:
        out += eval(*s.expr).str();
        return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          if (eval(*s.conditions[i]).truthy()) return exec(s.bodies[i], out);
        }
        return exec(s.else_body, out);
      case Stmt::Kind::kFor:
        return exec_for(s, out);
      case Stmt::Kind::kSet:
        exec_set(s);
        return Flow::kNormal;
      case Stmt::Kind::kMacro:
        frames_.back()[s.text] = make_macro(s);
        return Flow::kNormal;
      case Stmt::Kind::kCallBlock: {
        const Stmt* block = &s;
        Value caller = Value::function([this, block](CallArgs&) {
          std::string text;
          exec(block->bodies[0], text);
          return Value(text);
        });
        frames_.emplace_back();
        frames_.back()["caller"] = caller;
        out += eval(*s.expr).str();
        frames_.pop_back();
        return Flow::kNormal;
      }
      case Stmt::Kind::kFilterBlock: {
        std::string text;
        exec(s.bodies[0], text);
        out += apply_filter_chain(*s.expr, Value(text)).str();
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  Value apply_filter_chain(const Expr& f, const Value& input) {
    const Value operand = f.items[0] ? apply_filter_chain(*f.items[0], input) : input;
    CallArgs args = call_args(f);
    return apply_filter(f.name, operand, args);
  }

  void bind(Frame& frame, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      frame[targets[0]] = v;
      return;
    }
    const List items = iterate(v);
    if (items.size() != targets.size()) {
      throw TemplateError("cannot unpack " + std::to_string(items.size()) + " values into " +
                          std::to_string(targets.size()) + " names");
    }
    for (size_t i = 0; i < targets.size(); ++i) frame[targets[i]] = items[i];
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    List items = iterate(eval(*s.expr));
    frames_.emplace_back();
    if (s.filter) {
      List kept;
      for (const Value& item : items) {
        bind(frames_.back(), s.targets, item);
        if (eval(*s.filter).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step();
      Frame& frame = frames_.back();
      bind(frame, s.targets, items[static_cast<size_t>(i)]);
      Dict loop = {{"index0", Value(i)},
                   {"index", Value(i + 1)},
                   {"revindex0", Value(n - i - 1)},
                   {"revindex", Value(n - i)},
                   {"first", Value(i == 0)},
                   {"last", Value(i == n - 1)},
                   {"length", Value(n)},
                   {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value()},
                   {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value()}};
      loop.emplace_back("cycle", Value::function([i](CallArgs& args) {
                          if (args.positional.empty()) throw TemplateError("loop.cycle needs arguments");
                          return args.positional[static_cast<size_t>(i) % args.positional.size()];
                        }));
      frame["loop"] = Value(std::move(loop));
      if (exec(s.bodies[0], out) == Flow::kBreak) break;
    }
    frames_.pop_back();
    if (n == 0) return exec(s.else_body, out);
    return Flow::kNormal;
  }

  void exec_set(const Stmt& s) {
    Value v;
    if (s.expr) {
      v = eval(*s.expr);
    } else {
      std::string text;
      exec(s.bodies[0], text);
      v = Value(text);
    }
    if (!s.attr.empty()) {
      const Value target = lookup(s.targets[0]);
      if (!target.is_namespace()) throw TemplateError("cannot assign attribute on a non-namespace object");
      target.set(s.attr, v);
      return;
    }
    bind(frames_.back(), s.targets, v);
  }

  Value make_macro(const Stmt& s) {
    const Stmt* macro = &s;
    return Value::function([this, macro](CallArgs& args) {
      if (++call_depth_ > kMaxCallDepth) throw TemplateError("macro calls nested too deeply");
      step();
      // A macro sees its arguments and the template's top-level names.
      std::vector<Frame> saved = std::move(frames_);
      frames_ = {saved[0], Frame()};
      for (size_t i = 0; i < macro->params.size(); ++i) {
        const auto& [name, fallback] = macro->params[i];
        Value v = args.get(i, name);
        if (v.is_undefined() && fallback) v = eval(*fallback);
        frames_.back()[name] = v;
      }
      if (!saved.empty()) {
        const Value caller = [&] {
          for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
            auto f = it->find("caller");
            if (f != it->end()) return f->second;
          }
          return Value();
        }();
        if (!caller.is_undefined()) frames_.back()["caller"] = caller;
      }
      std::string text;
      try {
        exec(macro->bodies[0], text);
      } catch (...) {
        frames_ = std::move(saved);
        --call_depth_;
        throw;
      }
      saved[0] = std::move(frames_[0]);
      frames_ = std::move(saved);
      --call_depth_;
      return Value(text);
    });
  }

  CallArgs call_args(const Expr& e, size_t first = 1) {
    CallArgs args;
    for (size_t i = first; i < e.items.size(); ++i) args.positional.push_back(eval(*e.items[i]));
    for (const auto& [k, v] : e.keywords) args.keyword.emplace_back(k, eval(*v));
    return args;
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List list;
        for (const ExprPtr& item : e.items) list.push_back(eval(*item));
        return Value(std::move(list));
      }
      case Expr::Kind::kDict: {
        Value dict{Dict{}};
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) dict.set(eval(*e.items[i]).str(), eval(*e.items[i + 1]));
        return dict;
      }
      case Expr::Kind::kAttr: {
        const Value obj = eval(*e.items[0]);
        if (obj.is_dict()) {
          Value v = obj.get(e.name);
          if (!v.is_undefined() || obj.is_namespace()) return v;
        }
        return method(obj, e.name);
      }
      case Expr::Kind::kItem:
        return item(eval(*e.items[0]), eval(*e.items[1]));
      case Expr::Kind::kSlice: {
        const Value obj = eval(*e.items[0]);
        auto opt = [&](size_t i) { return e.items[i] ? eval(*e.items[i]) : Value(); };
        const Value start = opt(1), stop = opt(2), stride = opt(3);
        if (obj.is_list()) return slice_of(obj.list(), start, stop, stride, [](List l) { return Value(std::move(l)); });
        if (obj.is_string()) {
          const List chars = characters(obj.as_string());
          return slice_of(chars, start, stop, stride, [](List l) {
            std::string s;
            for (const Value& c : l) s += c.as_string();
            return Value(s);
          });
        }
        if (obj.is_undefined()) return Value();
        throw TemplateError("'" + obj.type_name() + "' object is not subscriptable");
      }
      case Expr::Kind::kCall: {
        const Value callee = eval(*e.items[0]);
        if (callee.kind() != Value::Kind::kFunction) {
          throw TemplateError("'" + callee.type_name() + "' object is not callable");
        }
        CallArgs args = call_args(e);
        return callee.fn()(args);
      }
      case Expr::Kind::kFilter: {
        const Value v = eval(*e.items[0]);
        CallArgs args = call_args(e);
        return apply_filter(e.name, v, args);
      }
      case Expr::Kind::kTest: {
        if (e.name == "defined" || e.name == "undefined") {
          const bool defined = !eval(*e.items[0]).is_undefined();
          return Value(((e.name == "defined") == defined) != e.negated);
        }
        const Value v = eval(*e.items[0]);
        CallArgs args = call_args(e);
        return Value(apply_test(e.name, v, args) != e.negated);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.items[0]);
        if (e.name == "not") return Value(!v.truthy());
        if (e.name == "-") return arithmetic("-", Value(int64_t{0}), v);
        return arithmetic("+", Value(int64_t{0}), v);
      }
      case Expr::Kind::kBinary:
        return binary(e);
      case Expr::Kind::kCond: {
        if (eval(*e.items[1]).truthy()) return eval(*e.items[0]);
        return e.items[2] ? eval(*e.items[2]) : Value();
      }
    }
    return Value();
  }

  Value item(const Value& obj, const Value& key) {
    if (obj.is_dict()) {
      if (key.is_string()) return obj.get(key.as_string());
      return obj.get(key.str());
    }
    if (obj.is_list() || obj.is_string()) {
      if (key.kind() != Value::Kind::kInt) {
        if (key.is_string() && obj.is_string()) return method(obj, key.as_string());
        throw TemplateError("indices must be integers, not " + key.type_name());
      }
      if (obj.is_list()) {
        const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(obj.list().size()));
        if (i < 0 || i >= static_cast<int64_t>(obj.list().size())) return Value();
        return obj.list()[static_cast<size_t>(i)];
      }
      const List chars = characters(obj.as_string());
      const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(chars.size()));
      if (i < 0 || i >= static_cast<int64_t>(chars.size())) return Value();
      return chars[static_cast<size_t>(i)];
    }
    return Value();
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value l = eval(*e.items[0]);
      return l.truthy() ? eval(*e.items[1]) : l;
    }
    if (op == "or") {
      Value l = eval(*e.items[0]);
      return l.truthy() ? l : eval(*e.items[1]);
    }
    const Value l = eval(*e.items[0]);
    const Value r = eval(*e.items[1]);
    if (op == "~") return Value(l.str() + r.str());
    if (op == "==") return Value(l == r);
    if (op == "!=") return Value(l != r);
    if (op == "<") return Value(compare_values(l, r, op) < 0);
    if (op == ">") return Value(compare_values(l, r, op) > 0);
    if (op == "<=") return Value(compare_values(l, r, op) <= 0);
    if (op == ">=") return Value(compare_values(l, r, op) >= 0);
    if (op == "in") return Value(contains(r, l));
    if (op == "not in") return Value(!contains(r, l));
    return arithmetic(op, l, r);
  }

  std::vector<Frame> frames_;
  std::stop_token stop_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace

std::string render(const Body& body, const Dict& variables, std::stop_token stop) {
  return Interpreter(variables, std::move(stop)).run(body);
}

}  // namespace vllm::jinja
