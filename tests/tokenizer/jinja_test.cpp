// The template language feature by feature, against outputs of Python
// Jinja2 with transformers' settings (trim_blocks, lstrip_blocks).
#include <gtest/gtest.h>

#include "base/json.h"
#include "tokenizer/chat_template/chat_template.h"

namespace vllm {
namespace {

std::string render(const std::string& source, const OrderedJson& vars = OrderedJson::object()) {
  Result<ChatTemplate> t = ChatTemplate::compile(source);
  if (!t.is_ok()) return "COMPILE ERROR: " + t.status().message();
  OrderedJson messages = vars.contains("messages") ? vars["messages"] : OrderedJson::array();
  Result<std::string> out = t->render(messages, vars.value("add_generation_prompt", false), vars);
  return out.is_ok() ? *out : "ERROR: " + out.status().message();
}

TEST(JinjaTest, LiteralsAndArithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}"),
            "7|3|-4|1|2|1024");
  EXPECT_EQ(render("{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 1.5 + 1 }}|{{ 0.1 + 0.2 }}"), "3.5|2.0|2.5|0.30000000000000004");
  // Past int64 arithmetic continues in floating point instead of overflowing.
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}|{{ 2 ** 62 }}|{{ 2 ** 64 }}|{{ 1 ** 1000000000000 }}"),
            "9.223372036854776e+18|4611686018427387904|1.8446744073709552e+19|1");
  // Modulo takes the divisor's sign, and cannot overflow near the int64 limits (found by the fuzzer).
  EXPECT_EQ(render("{{ 7 % -3 }}|{{ -7 % -3 }}|{{ (-9223372036854775807 - 1) % 333311 }}"), "-2|-1|263596");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }}|{{ 'ab' * 3 }}|{{ [1, 2] + [3] }}"), "a1None|ababab|[1, 2, 3]");
  EXPECT_EQ(render("{{ true }} {{ none }} {{ undefined_name }}|{{ {'a': 'b', 'c': [1, 'x']} }}"),
            "True None |{'a': 'b', 'c': [1, 'x']}");
  EXPECT_EQ(render("{{ \"it's\" }} {{ ['it\\'s'] }}"), "it's [\"it's\"]");
}

TEST(JinjaTest, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 and 'b' > 'a' }} {{ not 1 == 1 }} {{ 0 or 'x' }} {{ '' and 1 }}"), "True False x ");
  EXPECT_EQ(render("{{ 'ell' in 'hello' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }}"), "True True True");
  EXPECT_EQ(render("{{ 'yes' if 1 > 2 else 'no' }}|{{ 'x' if false }}|"), "no||");
}

TEST(JinjaTest, AttributeItemAndSlice) {
  const OrderedJson vars = {{"m", {{"role", "user"}, {"content", "hi"}}}, {"xs", {1, 2, 3, 4, 5}}, {"s", "héllo"}};
  EXPECT_EQ(render("{{ m.role }} {{ m['content'] }} {{ m.missing is defined }}", vars), "user hi False");
  EXPECT_EQ(render("{{ xs[0] }} {{ xs[-1] }} {{ xs[1:3] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[-2:] }}", vars),
            "1 5 [2, 3] [5, 4, 3, 2, 1] [1, 3, 5] [4, 5]");
  EXPECT_EQ(render("{{ s[1] }} {{ s[::-1] }} {{ s|length }}", vars), "é olléh 5");
}

TEST(JinjaTest, WhitespaceControlAndBlockTrimming) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  // trim_blocks drops the newline after a tag; lstrip_blocks the indent before it.
  EXPECT_EQ(render("x\n    {% if true %}\n  y\n    {% endif %}\nz"), "x\n  y\nz");
  EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}"), "a\nb");  // not after expressions
  EXPECT_EQ(render("a {# note #} b"), "a  b");
  EXPECT_EQ(render("  {%+ if true %}k{% endif %}"), "  k");
}

TEST(JinjaTest, ForLoopsWithLoopVariablesElseAndControl) {
  const OrderedJson vars = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}", vars),
            "1a,2b,3c");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{% endfor %}", vars),
            "03True12False21False");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{% if x == 'c' %}{% break %}{% endif "
                   "%}{{ x }}{% endfor %}",
                   vars),
            "a");
  EXPECT_EQ(render("{% for x in xs if x != 'a' %}{{ loop.length }}{{ x }}{% endfor %}", vars), "2b2c");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.cycle('o', 'e') }}{% endfor %}", vars), "oeo");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}{% endfor %}", vars), "ab");
}

TEST(JinjaTest, SetScopingAndNamespaces) {
  // A plain set inside a loop does not leak out; a namespace attribute does.
  EXPECT_EQ(render("{% set n = 0 %}{% for i in range(3) %}{% set n = n + i %}{% endfor %}{{ n }}"), "0");
  EXPECT_EQ(
      render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
      "6");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}in {{ 'side' }}{% endset %}[{{ block }}]"), "[in side]");
}

TEST(JinjaTest, MacrosCallsAndFilterBlocks) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bo') }} {{ "
                   "greet('Al', punct='?') }}"),
            "Hi Bo! Hi Al?");
  EXPECT_EQ(render("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body{% endcall %}"), "<body>");
  EXPECT_EQ(render("{% filter upper %}shout {{ 'this' }}{% endfilter %}"), "SHOUT THIS");
}

TEST(JinjaTest, Filters) {
  const OrderedJson vars = {
      {"ms", {{{"role", "user"}, {"n", 1}}, {{"role", "bot"}, {"n", 2}}, {{"role", "user"}, {"n", 3}}}}};
  EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'ab'|upper }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}"),
            "x|AB|Hello World|Hello");
  EXPECT_EQ(render("{{ [1, 2, 3]|join(', ') }}|{{ 'aXbX'|replace('X', '-') }}|{{ [3, 1]|first }}{{ [3, 1]|last }}"),
            "1, 2, 3|a-b-|31");
  EXPECT_EQ(render("{{ nothing|default('d') }}|{{ ''|default('e', true) }}|{{ '5'|int + 1 }}|{{ 2|float }}"),
            "d|e|6|2.0");
  EXPECT_EQ(render("{{ ms|map(attribute='role')|join(',') }}", vars), "user,bot,user");
  EXPECT_EQ(render("{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='n')|list }}", vars), "[1, 3]");
  EXPECT_EQ(render("{{ ms|rejectattr('role', 'eq', 'user')|list|length }}", vars), "1");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }}|{{ [1, 2, 1]|unique|list }}|{{ 'abc'|list }}|{{ [1, 2]|reverse|list }}"),
            "[1, 2, 3]|[1, 2]|['a', 'b', 'c']|[2, 1]");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|items|list }}"), "[['b', 1], ['a', 2]]");
}

TEST(JinjaTest, ToJsonMatchesPythonJsonDumps) {
  const OrderedJson vars = OrderedJson::parse(R"({"t": {"name": "f", "args": [1, 2.5, true, null], "s": "é\"\n"}})");
  EXPECT_EQ(render("{{ t|tojson }}", vars), "{\"name\": \"f\", \"args\": [1, 2.5, true, null], \"s\": \"é\\\"\\n\"}");
  EXPECT_EQ(render("{{ {'a': [1]}|tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST(JinjaTest, TestsAndStringMethods) {
  EXPECT_EQ(render("{{ 'x' is string }}{{ 1 is number }}{{ none is none }}{{ [1] is iterable }}{{ {} is mapping }}"
                   "{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ 1 is not string }}{{ x is undefined }}"),
            "TrueTrueTrueTrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\nhi'.lstrip() }}"),
            "['a', 'b', '', 'c']|['a', 'b']|hi|hi");
  EXPECT_EQ(render("{{ 'hello'.startswith('he') }}{{ 'hello'.endswith(('x', 'lo')) }}{{ 'AbC'.lower() }}"),
            "TrueTrueabc");
  EXPECT_EQ(render("{{ {'a': 1}.get('b', 'dflt') }}{{ {'a': 1}.keys()|list }}"), "dflt['a']");
}

TEST(JinjaTest, ErrorsAreValuesNotCrashes) {
  EXPECT_EQ(render("{{ raise_exception('no system role') }}"), "ERROR: no system role");
  EXPECT_EQ(render("{% if %}"), "COMPILE ERROR: chat template syntax error: line 1: unexpected end of expression");
  EXPECT_EQ(render("{% for x in y %}"),
            "COMPILE ERROR: chat template syntax error: missing 'endfor' at the end of the template");
  EXPECT_EQ(render("{{ 'a' + 1 }}"), "ERROR: unsupported operand types for +: string and integer");
  EXPECT_EQ(render("{{ x|nosuchfilter }}"), "ERROR: no filter named 'nosuchfilter'");
  EXPECT_EQ(render("{{ 1 // 0 }}"), "ERROR: integer division or modulo by zero");
  EXPECT_EQ(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), "ERROR: macro calls nested too deeply");
  EXPECT_EQ(render("{% for i in range(100000000) %}{% endfor %}"), "ERROR: range too large");
  const std::string deep = render("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}");
  EXPECT_EQ(deep.rfind("COMPILE ERROR", 0), 0u) << deep;
}

TEST(JinjaTest, ChatShape) {
  const OrderedJson vars = {
      {"messages", {{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "U"}}}},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"}};
  const std::string tmpl =
      "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
      "{% if add_generation_prompt %}assistant:{% endif %}";
  EXPECT_EQ(render(tmpl, vars), "<s>system: S\nuser: U\nassistant:");
}

}  // namespace
}  // namespace vllm
