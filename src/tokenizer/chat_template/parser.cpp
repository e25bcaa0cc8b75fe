#include "tokenizer/chat_template/parser.h"

#include <cctype>
#include <cstdlib>
#include <initializer_list>

#include "tokenizer/chat_template/lexer.h"

namespace vllm::jinja {
namespace {

constexpr int kMaxNesting = 200;  // bounds recursion on hostile templates

// ---- Expressions.

class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int line) : tokens_(std::move(tokens)), line_(line) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw TemplateError("line " + std::to_string(line_) + ": " + msg);
  }
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  bool at_op(const char* op) const { return peek().kind == Token::Kind::kOp && peek().text == op; }
  bool at_name(const char* name) const { return peek().kind == Token::Kind::kName && peek().text == name; }
  bool at_end() const { return peek().kind == Token::Kind::kEnd; }
  Token next() {
    Token t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  void expect_op(const char* op) {
    if (!at_op(op)) fail(std::string("expected '") + op + "', found '" + peek().text + "'");
    next();
  }
  void expect_name(const char* name) {
    if (!at_name(name)) fail(std::string("expected '") + name + "', found '" + peek().text + "'");
    next();
  }
  std::string name() {
    if (peek().kind != Token::Kind::kName) fail("expected a name, found '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) fail("unexpected '" + peek().text + "'");
  }

  ExprPtr expression() {
    Depth d(this);
    ExprPtr e = or_expr();
    if (at_name("if")) {
      next();
      ExprPtr cond = or_expr();
      ExprPtr otherwise;
      if (at_name("else")) {
        next();
        otherwise = expression();
      }
      ExprPtr out = make(Expr::Kind::kCond);
      out->items.push_back(std::move(e));
      out->items.push_back(std::move(cond));
      out->items.push_back(std::move(otherwise));
      return out;
    }
    return e;
  }

  ExprPtr or_expr_public() { return or_expr(); }

  // "name(args) | name2 ..." of a {% filter %} block; the innermost filter's
  // operand (items[0]) is left null for the block's text.
  ExprPtr filter_chain_public() {
    ExprPtr e;
    do {
      if (e) next();
      ExprPtr f = make(Expr::Kind::kFilter);
      f->name = dotted_name();
      f->items.push_back(std::move(e));
      if (at_op("(")) {
        next();
        arguments(*f);
      }
      e = std::move(f);
    } while (at_op("|"));
    return e;
  }

  // An expression, or a bare tuple "a, b" (for loop targets and set values).
  ExprPtr tuple_or_expression() {
    ExprPtr first = expression();
    if (!at_op(",")) return first;
    ExprPtr t = make(Expr::Kind::kTuple);
    t->items.push_back(std::move(first));
    while (at_op(",")) {
      next();
      if (at_end() || at_op(")") || at_name("in")) break;
      t->items.push_back(expression());
    }
    return t;
  }

  // Call arguments after "(": positional then keywords.
  void arguments(Expr& call) {
    while (!at_op(")")) {
      if (peek().kind == Token::Kind::kName && peek(1).kind == Token::Kind::kOp && peek(1).text == "=") {
        std::string key = next().text;
        next();
        call.keywords.emplace_back(std::move(key), expression());
      } else {
        call.items.push_back(expression());
      }
      if (!at_op(",")) break;
      next();
    }
    expect_op(")");
  }

 private:
  struct Depth {
    explicit Depth(ExprParser* p) : p_(p) {
      if (++p_->depth_ > kMaxNesting) p_->fail("expression nested too deeply");
    }
    ~Depth() { --p_->depth_; }
    ExprParser* p_;
  };

  static ExprPtr make(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    return e;
  }
  static ExprPtr binary(std::string op, ExprPtr l, ExprPtr r) {
    ExprPtr e = make(Expr::Kind::kBinary);
    e->name = std::move(op);
    e->items.push_back(std::move(l));
    e->items.push_back(std::move(r));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (at_name("or")) {
      next();
      e = binary("or", std::move(e), and_expr());
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (at_name("and")) {
      next();
      e = binary("and", std::move(e), not_expr());
    }
    return e;
  }
  ExprPtr not_expr() {
    if (at_name("not")) {
      Depth d(this);
      next();
      ExprPtr e = make(Expr::Kind::kUnary);
      e->name = "not";
      e->items.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = math1();
    for (;;) {
      if (peek().kind == Token::Kind::kOp && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                              peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
        std::string op = next().text;
        e = binary(op, std::move(e), math1());
      } else if (at_name("in")) {
        next();
        e = binary("in", std::move(e), math1());
      } else if (at_name("not") && peek(1).kind == Token::Kind::kName && peek(1).text == "in") {
        next();
        next();
        e = binary("not in", std::move(e), math1());
      } else {
        return e;
      }
    }
  }
  // One left-associative level of binary operators over `operand`.
  ExprPtr left_assoc(ExprPtr (ExprParser::*operand)(), std::initializer_list<const char*> ops) {
    ExprPtr e = (this->*operand)();
    for (;;) {
      const char* op = nullptr;
      for (const char* o : ops) {
        if (at_op(o)) op = o;
      }
      if (op == nullptr) return e;
      next();
      e = binary(op, std::move(e), (this->*operand)());
    }
  }
  ExprPtr math1() { return left_assoc(&ExprParser::concat, {"+", "-"}); }
  ExprPtr concat() { return left_assoc(&ExprParser::math2, {"~"}); }
  ExprPtr math2() { return left_assoc(&ExprParser::power, {"*", "/", "//", "%"}); }
  ExprPtr power() { return left_assoc(&ExprParser::unary, {"**"}); }
  ExprPtr unary() {
    if (at_op("-") || at_op("+")) {
      Depth d(this);
      std::string op = next().text;
      ExprPtr e = make(Expr::Kind::kUnary);
      e->name = op;
      e->items.push_back(unary());
      return filters(std::move(e));
    }
    return filters(postfix(primary()));
  }

  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (at_op("|")) {
        next();
        ExprPtr f = make(Expr::Kind::kFilter);
        f->name = dotted_name();
        f->items.push_back(std::move(e));
        if (at_op("(")) {
          next();
          arguments(*f);
        }
        e = std::move(f);
      } else if (at_name("is")) {
        next();
        ExprPtr t = make(Expr::Kind::kTest);
        if (at_name("not")) {
          next();
          t->negated = true;
        }
        t->name = name();
        t->items.push_back(std::move(e));
        if (at_op("(")) {
          next();
          arguments(*t);
        } else if (peek().kind == Token::Kind::kString || peek().kind == Token::Kind::kInt ||
                   peek().kind == Token::Kind::kFloat ||
                   (peek().kind == Token::Kind::kName && !at_name("and") && !at_name("or") && !at_name("if") &&
                    !at_name("else") && !at_name("is") && !at_name("in") && !at_name("not"))) {
          t->items.push_back(postfix(primary()));  // "is equalto 3", "is sameas none"
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::string dotted_name() {
    std::string n = name();
    while (at_op(".")) {
      next();
      n += '.';
      n += name();
    }
    return n;
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".")) {
        next();
        ExprPtr a = make(Expr::Kind::kAttr);
        if (peek().kind == Token::Kind::kInt) {  // x.0 as in Jinja: item 0
          a->kind = Expr::Kind::kItem;
          a->items.push_back(std::move(e));
          ExprPtr idx = make(Expr::Kind::kLiteral);
          idx->value = next().value;
          a->items.push_back(std::move(idx));
        } else {
          a->name = name();
          a->items.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (at_op("[")) {
        next();
        e = subscript(std::move(e));
      } else if (at_op("(")) {
        next();
        ExprPtr c = make(Expr::Kind::kCall);
        c->items.push_back(std::move(e));
        arguments(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr obj) {
    ExprPtr parts[3];
    int colons = 0;
    while (!at_op("]")) {
      if (at_op(":")) {
        next();
        if (++colons > 2) fail("too many ':' in a slice");
        continue;
      }
      if (parts[colons]) fail("unexpected '" + peek().text + "' in a subscript");
      parts[colons] = expression();
    }
    next();
    if (colons == 0) {
      if (!parts[0]) fail("empty subscript");
      ExprPtr e = make(Expr::Kind::kItem);
      e->items.push_back(std::move(obj));
      e->items.push_back(std::move(parts[0]));
      return e;
    }
    ExprPtr e = make(Expr::Kind::kSlice);
    e->items.push_back(std::move(obj));
    for (auto& p : parts) e->items.push_back(std::move(p));
    return e;
  }

  ExprPtr primary() {
    Depth d(this);
    const Token t = next();
    switch (t.kind) {
      case Token::Kind::kString: {
        std::string s = t.value.as_string();
        while (peek().kind == Token::Kind::kString) s += next().value.as_string();  // "a" "b"
        ExprPtr e = make(Expr::Kind::kLiteral);
        e->value = Value(s);
        return e;
      }
      case Token::Kind::kInt:
      case Token::Kind::kFloat: {
        ExprPtr e = make(Expr::Kind::kLiteral);
        e->value = t.value;
        return e;
      }
      case Token::Kind::kName: {
        ExprPtr e = make(Expr::Kind::kLiteral);
        if (t.text == "true" || t.text == "True") {
          e->value = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case Token::Kind::kOp:
        if (t.text == "(") {
          if (at_op(")")) {
            next();
            return make(Expr::Kind::kTuple);
          }
          ExprPtr e = tuple_or_expression();
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          ExprPtr e = make(Expr::Kind::kList);
          while (!at_op("]")) {
            e->items.push_back(expression());
            if (!at_op(",")) break;
            next();
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          ExprPtr e = make(Expr::Kind::kDict);
          while (!at_op("}")) {
            e->items.push_back(expression());
            expect_op(":");
            e->items.push_back(expression());
            if (!at_op(",")) break;
            next();
          }
          expect_op("}");
          return e;
        }
        break;
      case Token::Kind::kEnd:
        fail("unexpected end of expression");
    }
    fail("unexpected '" + t.text + "'");
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int line_;
  int depth_ = 0;
};

// ---- Statements.

class StmtParser {
 public:
  explicit StmtParser(std::vector<Segment> segments) : segments_(std::move(segments)) {}

  Body parse() {
    std::string end;
    Body body = block({}, &end);
    if (!end.empty()) throw TemplateError("unexpected '" + end + "'");
    return body;
  }

 private:
  // Parses statements until one of `enders` opens a tag; its keyword goes to
  // *ender, and the parser for the rest of that tag to *rest.
  Body block(const std::vector<std::string>& enders, std::string* ender, std::unique_ptr<ExprParser>* rest = nullptr) {
    if (++depth_ > kMaxNesting) throw TemplateError("blocks nested too deeply");
    Body body;
    while (pos_ < segments_.size()) {
      const Segment& seg = segments_[pos_++];
      if (seg.kind == Segment::Kind::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->text = seg.body;
        body.push_back(std::move(s));
        continue;
      }
      auto p = std::make_unique<ExprParser>(tokenize(seg.body, seg.line), seg.line);
      if (seg.kind == Segment::Kind::kExpr) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->expr = p->expression();
        p->expect_end();
        body.push_back(std::move(s));
        continue;
      }
      const std::string keyword = p->name();
      for (const std::string& e : enders) {
        if (keyword == e) {
          *ender = keyword;
          if (rest) *rest = std::move(p);
          --depth_;
          return body;
        }
      }
      body.push_back(statement(keyword, *p, seg.line));
    }
    if (!enders.empty()) throw TemplateError("missing '" + enders.back() + "' at the end of the template");
    --depth_;
    return body;
  }

  StmtPtr statement(const std::string& keyword, ExprParser& p, int line) {
    auto s = std::make_unique<Stmt>();
    if (keyword == "if") {
      s->kind = Stmt::Kind::kIf;
      s->conditions.push_back(p.expression());
      p.expect_end();
      for (;;) {
        std::string ender;
        std::unique_ptr<ExprParser> rest;
        Body body = block({"elif", "else", "endif"}, &ender, &rest);
        s->bodies.push_back(std::move(body));
        if (ender == "elif") {
          s->conditions.push_back(rest->expression());
          rest->expect_end();
          continue;
        }
        if (ender == "else") {
          rest->expect_end();
          s->else_body = block({"endif"}, &ender, &rest);
        }
        rest->expect_end();
        return s;
      }
    }
    if (keyword == "for") {
      s->kind = Stmt::Kind::kFor;
      s->targets.push_back(p.name());
      while (p.at_op(",")) {
        p.next();
        s->targets.push_back(p.name());
      }
      p.expect_name("in");
      s->expr = p.or_expr_public();
      if (p.at_name("if")) {
        p.next();
        s->filter = p.or_expr_public();
      }
      if (p.at_name("recursive")) p.fail("recursive loops are not supported");
      p.expect_end();
      std::string ender;
      std::unique_ptr<ExprParser> rest;
      s->bodies.push_back(block({"else", "endfor"}, &ender, &rest));
      if (ender == "else") {
        rest->expect_end();
        s->else_body = block({"endfor"}, &ender, &rest);
      }
      rest->expect_end();
      return s;
    }
    if (keyword == "set") {
      s->kind = Stmt::Kind::kSet;
      s->targets.push_back(p.name());
      if (p.at_op(".")) {
        p.next();
        s->attr = p.name();
      }
      while (p.at_op(",")) {
        p.next();
        s->targets.push_back(p.name());
      }
      if (p.at_end()) {  // {% set x %}...{% endset %}
        std::string ender;
        std::unique_ptr<ExprParser> rest;
        s->bodies.push_back(block({"endset"}, &ender, &rest));
        rest->expect_end();
        return s;
      }
      p.expect_op("=");
      s->expr = p.tuple_or_expression();
      p.expect_end();
      return s;
    }
    if (keyword == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->text = p.name();
      p.expect_op("(");
      while (!p.at_op(")")) {
        std::string param = p.name();
        ExprPtr fallback;
        if (p.at_op("=")) {
          p.next();
          fallback = p.expression();
        }
        s->params.emplace_back(std::move(param), std::move(fallback));
        if (!p.at_op(",")) break;
        p.next();
      }
      p.expect_op(")");
      p.expect_end();
      std::string ender;
      std::unique_ptr<ExprParser> rest;
      s->bodies.push_back(block({"endmacro"}, &ender, &rest));
      return s;
    }
    if (keyword == "call") {
      s->kind = Stmt::Kind::kCallBlock;
      s->expr = p.expression();
      p.expect_end();
      std::string ender;
      std::unique_ptr<ExprParser> rest;
      s->bodies.push_back(block({"endcall"}, &ender, &rest));
      return s;
    }
    if (keyword == "filter") {
      s->kind = Stmt::Kind::kFilterBlock;
      s->expr = p.filter_chain_public();
      p.expect_end();
      std::string ender;
      std::unique_ptr<ExprParser> rest;
      s->bodies.push_back(block({"endfilter"}, &ender, &rest));
      return s;
    }
    if (keyword == "break" || keyword == "continue") {
      s->kind = keyword == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      p.expect_end();
      return s;
    }
    throw TemplateError("line " + std::to_string(line) + ": unknown statement '" + keyword + "'");
  }

  std::vector<Segment> segments_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(const std::string& source) { return StmtParser(segment(source)).parse(); }

}  // namespace vllm::jinja
