// The grammar engine against independent oracles: PCRE2 for regexes, a JSON
// parser for json_object, hand-written languages for GBNF, and a token-by-
// token replay for the masks the vocabulary walk computes.
#include "structured/grammar_matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "base/json.h"
#include "base/regex.h"
#include "structured/gbnf.h"
#include "structured/json_schema_grammar.h"
#include "structured/regex_grammar.h"
#include "structured/structured_output.h"

namespace vllm::structured {
namespace {

constexpr int32_t kByteEos = 256;

// Token b < 256 is the byte b; 256 is EOS.
std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  std::vector<std::string> bytes(257);
  for (int b = 0; b < 256; ++b) bytes[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
  return std::make_shared<TokenVocabulary>(std::move(bytes), std::vector<int32_t>{kByteEos});
}

std::shared_ptr<const CompiledGrammar> compile(const Result<Grammar>& g,
                                               std::shared_ptr<const TokenVocabulary> vocab = byte_vocabulary()) {
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  return std::make_shared<const CompiledGrammar>(*g, std::move(vocab));
}

// The tokens a mask over the byte vocabulary allows, in id order.
std::vector<int32_t> allowed_tokens(const std::vector<uint32_t>& mask) {
  std::vector<int32_t> allowed;
  for (int32_t t = 0; t <= kByteEos; ++t) {
    if (bitmask_has(mask.data(), t)) allowed.push_back(t);
  }
  return allowed;
}

// Whether the whole of `text` is in the grammar's language.
bool matches(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  for (char c : text) {
    if (!m.accept_token(static_cast<uint8_t>(c))) return false;
  }
  return m.is_terminated() || m.accept_token(kByteEos);
}

TEST(Gbnf, LiteralsClassesGroupsAndRepetition) {
  auto g = compile(parse_gbnf(R"g(
    # a comment
    root ::= greeting (" " name)? "!"{1,3}
    greeting ::= "hi" | "hello"
    name ::= [A-Z] [a-z]*
  )g"));
  for (const char* ok : {"hi!", "hello Ann!!", "hi Bo!!!", "hello X!"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"hi", "hey!", "hi ann!", "hi!!!!", "hello  Ann!", ""}) EXPECT_FALSE(matches(g, bad)) << bad;
}

TEST(Gbnf, UnicodeClassesMatchUtf8BytesAndNegationExcludesThem) {
  auto g = compile(parse_gbnf(R"g(root ::= [α-ω]+ [^a-z] "\u00e9")g"));
  EXPECT_TRUE(matches(g, "αβγ9é"));
  EXPECT_TRUE(matches(g,
                      "ω\xF0\x9F\x98\x80"
                      "é"));  // a 4-byte character from the negated class
  EXPECT_FALSE(matches(g, "αβγxé"));
  EXPECT_FALSE(matches(g, "A9é"));
  EXPECT_FALSE(matches(g, "α\xED\xA0\x80é"));  // a surrogate's encoding is not UTF-8
}

TEST(Gbnf, RecursionNestsAndRightRecursionDoesNotGrowTheStack) {
  auto g = compile(parse_gbnf(R"g(
    root ::= "(" root ")" | list
    list ::= "x" list | ""
  )g"));
  EXPECT_TRUE(matches(g, "((()))"));
  EXPECT_TRUE(matches(g, "((xxx))"));
  EXPECT_FALSE(matches(g, "(()"));
  EXPECT_TRUE(matches(g, std::string(100000, 'x')));  // would exhaust the depth bound without tail calls
}

// After n a's the rule below has 3^n open stacks that differ only under
// their tops; sharing what lies under each top keeps one stack per grammar
// position, so a client's ambiguous grammar costs linear time, not
// exponential (a fuzzer's ten-second stall).
TEST(Gbnf, StacksThatShareATopAreJoinedSoAmbiguityStaysLinear) {
  auto grammar = parse_gbnf(R"g(root ::= "a" root "b" | "a" root "c" | "a" root "d" | "e")g");
  ASSERT_TRUE(grammar.is_ok());
  const PushdownRules rules(*grammar);
  StackArena arena;
  PushdownWalker walker(rules, arena);
  StackSet state = walker.initial(), next;
  for (int i = 0; i < 14; ++i) {
    walker.advance(state, 'a', next);
    state.swap(next);
    ASSERT_LE(state.size(), 4u) << "after " << i + 1 << " a's";
  }
  EXPECT_LT(arena.size(), 400u);

  auto g = compile(std::move(grammar));
  std::mt19937 rng(17);
  for (int n : {0, 1, 5, 3000}) {
    std::string closing;
    for (int i = 0; i < n; ++i) closing += "bcd"[rng() % 3];
    const std::string text = std::string(static_cast<size_t>(n), 'a') + "e" + closing;
    EXPECT_TRUE(matches(g, text)) << n;
    EXPECT_FALSE(matches(g, text + "b")) << n;
    if (n > 0) {
      EXPECT_FALSE(matches(g, text.substr(0, text.size() - 1))) << n;
    }
  }
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(bitmask_words(257));
  for (char c : std::string(2000, 'a')) ASSERT_TRUE(m.accept_token(static_cast<uint8_t>(c)));
  m.fill_next_token_mask(mask);
  EXPECT_EQ(allowed_tokens(mask), (std::vector<int32_t>{'a', 'e'}));
  ASSERT_TRUE(m.accept_token('e'));
  m.fill_next_token_mask(mask);
  EXPECT_EQ(allowed_tokens(mask), (std::vector<int32_t>{'b', 'c', 'd'}));
}

TEST(Gbnf, ErrorsNameTheProblem) {
  auto message = [](const char* text) { return parse_gbnf(text).status().message(); };
  EXPECT_NE(message("root ::= a\na ::= a \"x\" | \"y\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(message("root ::= \"x\"* root").find("left-recursive"), std::string::npos);
  EXPECT_NE(message("root ::= missing").find("'missing' is used but never defined"), std::string::npos);
  EXPECT_NE(message("start ::= \"x\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(message("root ::= \"x").find("line 1 column"), std::string::npos);
  EXPECT_NE(message("root ::= \"x\"{5,2}").find("out of order"), std::string::npos);
  EXPECT_NE(message("root ::= \"x\"{20000}").find("above"), std::string::npos);
  EXPECT_FALSE(parse_gbnf(std::string(200, '(')).is_ok());
  // Unrolled repetitions are counted as they are made: a short text cannot ask for gigabytes.
  std::string huge = "root ::=";
  for (int i = 0; i < 300; ++i) huge += R"g( "abcdefgh"{10000})g";
  EXPECT_NE(message(huge.c_str()).find("too large"), std::string::npos);
}

// Full-match acceptance of random strings equals PCRE2's.
TEST(Regex, AgreesWithPcre2OnRandomStrings) {
  const std::vector<std::string> patterns = {
      "a|b",           "(ab|a)*b",       "[a-c]{2,3}x?", "a+b*c?", "(a|bc){0,2}c", "[^ab]+",
      "\\d{1,2}-\\w+", "(?:a|b)+c",      "a{2,}",        "^ab$",   ".\\.a",        "[a\\-c]b",
      "(?P<x>a)b",     "\\s?[abc]{0,2}", "x{1}y{0}",     "a*?b+?", "[\\d\\s]c",    "(a(b(c)?)?)?",
  };
  std::mt19937 rng(7);
  const std::string alphabet = "abcx.-1 \n";
  for (const std::string& pattern : patterns) {
    auto g = compile(regex_grammar(pattern));
    Result<Regex> pcre = Regex::compile("^(?:" + pattern + ")$");
    ASSERT_TRUE(pcre.is_ok()) << pattern;
    int accepted = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::string s;
      const int len = static_cast<int>(rng() % 6);
      for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
      const auto found = pcre->find_all(s);
      const bool expected = s.empty() ? false : !found.empty() && found[0].first == 0 && found[0].second == s.size();
      if (s.empty()) continue;  // PCRE2's find_all reports no empty matches
      EXPECT_EQ(matches(g, s), expected) << "pattern " << pattern << " text '" << s << "'";
      accepted += expected ? 1 : 0;
    }
    EXPECT_GT(accepted, 0) << pattern << ": no random string matched, so the comparison proved little";
  }
}

// Python's reading, which vLLM's regexes follow: {,n} is {0,n}, and a brace
// that starts no quantifier is text.
TEST(Regex, PythonBraces) {
  auto g = compile(regex_grammar("a{,2}b{x}"));
  for (const char* ok : {"b{x}", "ab{x}", "aab{x}"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"aaab{x}", "b"}) EXPECT_FALSE(matches(g, bad)) << bad;
}

// A repeated group that may match nothing (empty alternatives) reaches the
// same parse stacks along exponentially many paths; the fuzzer's input
// below took over 20 s and 2 GB before each expansion visited a stack once.
TEST(Regex, NullableRepeatedGroupsCompileAndMatchQuickly) {
  auto g = compile(regex_grammar("([a-z]+.+.|||){0,22}0"));
  for (const char* ok : {"0", "ab.c0", "a..a..0", "xyz12q3450"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"", "a0", "ab0x"}) EXPECT_FALSE(matches(g, bad)) << bad;
}

// A long chain of optional items is a chain of nullable rules as long as
// the grammar: expanding it took a call frame or more per link, and the
// fuzzer's `(:?){,9418}` overflowed the stack under AddressSanitizer (this
// test failed so there; a Release build's frames are smaller).
TEST(Regex, LongChainsOfOptionalItemsDoNotExhaustTheStack) {
  auto g = compile(regex_grammar("(a?){0,10000}b"));
  EXPECT_TRUE(matches(g, "b"));
  EXPECT_TRUE(matches(g, "aaab"));
  EXPECT_FALSE(matches(g, "aaa"));
}

TEST(Regex, RefusesWhatItCannotEnforceByName) {
  auto message = [](const char* p) { return regex_grammar(p).status().message(); };
  EXPECT_NE(message("(a)\\1").find("backreference"), std::string::npos);
  EXPECT_NE(message("a(?=b)").find("look-ahead"), std::string::npos);
  EXPECT_NE(message("(?<=a)b").find("look-behind"), std::string::npos);
  EXPECT_NE(message("\\bword").find("word boundary"), std::string::npos);
  EXPECT_NE(message("(?i)abc").find("inline flags"), std::string::npos);
  EXPECT_NE(message("a++").find("possessive"), std::string::npos);
  EXPECT_NE(message("\\p{L}").find("Unicode property"), std::string::npos);
  EXPECT_NE(message("a^b").find("anchor"), std::string::npos);
  EXPECT_NE(message("(ab").find("missing ')'"), std::string::npos);
  EXPECT_NE(message("*a").find("nothing to repeat"), std::string::npos);
}

// A random multi-byte vocabulary: the mask walk shares prefixes and skips
// dead subtrees, so its result is checked token by token against replaying
// the history and offering each token alone.
TEST(GrammarMatcher, MaskEqualsTokenByTokenReplay) {
  std::mt19937 rng(11);
  const std::string alphabet = "{}[]\",:0123456789 abtrufenl-.";
  std::vector<std::string> bytes;
  for (int i = 0; i < 600; ++i) {
    std::string t;
    const int len = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    bytes.push_back(t);
  }
  for (char c : alphabet) bytes.emplace_back(1, c);  // every byte reachable
  bytes.emplace_back();                              // a special token: never allowed
  const auto eos = static_cast<int32_t>(bytes.size());
  bytes.emplace_back("</s>");
  auto vocab = std::make_shared<TokenVocabulary>(bytes, std::vector<int32_t>{eos});
  auto g = compile(json_object_grammar(), vocab);

  GrammarMatcher m(g);
  std::vector<int32_t> history;
  std::vector<uint32_t> mask(bitmask_words(vocab->size()));
  for (int step = 0; step < 60 && !m.is_terminated(); ++step) {
    m.fill_next_token_mask(mask);
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < vocab->size(); ++t) {
      GrammarMatcher replay(g);
      for (int32_t h : history) ASSERT_TRUE(replay.accept_token(h));
      const bool ok = replay.accept_token(t);
      ASSERT_EQ(bitmask_has(mask.data(), t), ok)
          << "step " << step << " token '" << bytes[static_cast<size_t>(t)] << "'";
      if (ok) allowed.push_back(t);
    }
    ASSERT_FALSE(allowed.empty());
    const int32_t pick = allowed[rng() % allowed.size()];
    ASSERT_TRUE(m.accept_token(pick));
    history.push_back(pick);
  }
}

// Random walks through json_object's masks give text a JSON parser reads as an object.
TEST(GrammarMatcher, RandomWalksOfJsonObjectParse) {
  auto g = compile(json_object_grammar());
  std::mt19937 rng(3);
  std::vector<uint32_t> mask(bitmask_words(257));
  int finished = 0;
  for (int walk = 0; walk < 200; ++walk) {
    GrammarMatcher m(g);
    std::string text;
    for (int step = 0; step < 400 && !m.is_terminated(); ++step) {
      m.fill_next_token_mask(mask);
      const std::vector<int32_t> allowed = allowed_tokens(mask);
      ASSERT_FALSE(allowed.empty()) << text;
      // Lean towards structure so that walks finish: closing brackets and quotes are likelier.
      int32_t pick = allowed[rng() % allowed.size()];
      for (int32_t t : {int32_t{'}'}, int32_t{']'}, int32_t{'"'}, kByteEos}) {
        if (bitmask_has(mask.data(), t) && rng() % 3 == 0) pick = t;
      }
      ASSERT_TRUE(m.accept_token(pick));
      if (pick != kByteEos) text += static_cast<char>(pick);
    }
    if (!m.is_terminated()) continue;
    ++finished;
    const Json parsed = Json::parse(text, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << text;
    EXPECT_TRUE(parsed.is_object()) << text;
  }
  EXPECT_GT(finished, 100);
}

// Speculative decoding tries drafts ahead and comes back: after a rollback
// the matcher allows exactly what it allowed before (EOS and termination
// included), and num_accepted_prefix counts the tokens a fresh replay takes.
TEST(GrammarMatcher, RollbackRestoresTheStateAfterTokensTriedAhead) {
  auto g = compile(json_object_grammar());
  std::mt19937 rng(5);
  std::vector<uint32_t> mask(bitmask_words(257)), again(mask.size()), ahead(mask.size());
  for (int walk = 0; walk < 40; ++walk) {
    GrammarMatcher m(g);
    std::vector<int32_t> history;
    for (int step = 0; step < 60 && !m.is_terminated(); ++step) {
      m.fill_next_token_mask(mask);
      // A few allowed tokens ahead, then one the grammar may refuse.
      GrammarMatcher::Checkpoint start = m.checkpoint();
      std::vector<int32_t> tried;
      for (int k = 0; k < 4 && !m.is_terminated(); ++k) {
        m.fill_next_token_mask(ahead);
        const std::vector<int32_t> allowed = allowed_tokens(ahead);
        tried.push_back(allowed[rng() % allowed.size()]);
        ASSERT_TRUE(m.accept_token(tried.back()));
      }
      m.rollback(std::move(start));
      m.fill_next_token_mask(again);
      ASSERT_EQ(again, mask) << "walk " << walk << " step " << step;
      tried.push_back(static_cast<int32_t>(rng() % 257));
      GrammarMatcher replay(g);
      for (int32_t h : history) ASSERT_TRUE(replay.accept_token(h));
      int32_t taken = 0;
      while (taken < static_cast<int32_t>(tried.size()) && replay.accept_token(tried[static_cast<size_t>(taken)])) {
        ++taken;
      }
      EXPECT_EQ(m.num_accepted_prefix(tried), taken);
      EXPECT_GE(taken, static_cast<int32_t>(tried.size()) - 1);  // all but the random last one
      m.fill_next_token_mask(again);
      ASSERT_EQ(again, mask);
      // Then one step for real.
      const std::vector<int32_t> allowed = allowed_tokens(mask);
      history.push_back(allowed[rng() % allowed.size()]);
      ASSERT_TRUE(m.accept_token(history.back()));
    }
  }
}

TEST(GrammarMatcher, EosOnlyWhereTheGrammarMayEndAndNothingAfterTermination) {
  auto g = compile(regex_grammar("ab?"));
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_token(kByteEos));
  EXPECT_FALSE(m.accept_token('b'));
  EXPECT_TRUE(m.accept_token('a'));
  EXPECT_FALSE(m.is_terminated());
  std::vector<uint32_t> mask(bitmask_words(257));
  m.fill_next_token_mask(mask);
  for (int32_t t = 0; t < 257; ++t) EXPECT_EQ(bitmask_has(mask.data(), t), t == 'b' || t == kByteEos) << t;
  EXPECT_TRUE(m.accept_token('b'));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token('b'));
}

// With a token budget, every walk that uses it all still ends inside the
// grammar: json_object's text parses however soon the budget runs out.
TEST(GrammarMatcher, ABudgetSteersEveryWalkToACompleteText) {
  auto g = compile(json_object_grammar());
  std::mt19937 rng(5);
  std::vector<uint32_t> mask(bitmask_words(257));
  for (int64_t budget : {2, 3, 7, 20, 60}) {
    for (int walk = 0; walk < 40; ++walk) {
      GrammarMatcher m(g);
      std::string text;
      for (int64_t left = budget; left > 0 && !m.is_terminated(); --left) {
        m.fill_next_token_mask(mask, left);
        const std::vector<int32_t> allowed = allowed_tokens(mask);
        ASSERT_FALSE(allowed.empty());
        const int32_t pick = allowed[rng() % allowed.size()];  // uniform: no lean towards an end
        ASSERT_TRUE(m.accept_token(pick));
        if (pick != kByteEos) text += static_cast<char>(pick);
      }
      const Json parsed = Json::parse(text, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << "budget " << budget << ": " << Json(text).dump();
      EXPECT_TRUE(parsed.is_object());
    }
  }
  // Without a budget, a uniform walk of 20 steps often leaves its object open.
  int unfinished = 0;
  for (int walk = 0; walk < 40; ++walk) {
    GrammarMatcher m(g);
    for (int step = 0; step < 20 && !m.is_terminated(); ++step) {
      m.fill_next_token_mask(mask);
      const std::vector<int32_t> allowed = allowed_tokens(mask);
      ASSERT_TRUE(m.accept_token(allowed[rng() % allowed.size()]));
    }
    unfinished += m.is_terminated() ? 0 : 1;
  }
  EXPECT_GT(unfinished, 10);
}

// Integer bounds become digit-by-digit regexes: every integer of a window
// matches exactly when it lies within the bounds.
TEST(JsonSchema, IntegerBoundsAdmitExactlyTheIntegersWithinThem) {
  const std::vector<int64_t> bounds = {-1234, -100, -99, -10, -1, 0, 1, 9, 10, 99, 100, 101, 999, 1000, 1099};
  for (size_t i = 0; i < bounds.size(); i += 2) {
    for (size_t j = i; j < bounds.size(); j += 3) {
      const int64_t lo = bounds[i];
      const int64_t hi = bounds[j];
      const std::string schema =
          R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" + std::to_string(hi) + "}";
      auto g = compile(json_schema_grammar(schema));
      for (int64_t v = -1300; v <= 1300; v += (v > -120 && v < 120) ? 1 : 7) {
        EXPECT_EQ(matches(g, std::to_string(v)), lo <= v && v <= hi) << schema << " value " << v;
      }
      EXPECT_FALSE(matches(g, "-0"));
      EXPECT_FALSE(matches(g, "01"));
    }
  }
  auto open_above = compile(json_schema_grammar(R"({"type": "integer", "exclusiveMinimum": 41})"));
  EXPECT_FALSE(matches(open_above, "41"));
  EXPECT_TRUE(matches(open_above, "42"));
  EXPECT_TRUE(matches(open_above, "123456789"));
  EXPECT_FALSE(matches(open_above, "-5"));
}

TEST(JsonSchema, NumberBoundsAndFractions) {
  auto g = compile(json_schema_grammar(R"({"type": "number", "minimum": -2, "maximum": 3})"));
  for (const char* ok : {"-2", "-2.0", "-1.5", "-0.25", "0", "0.5", "3", "3.00", "2.999"})
    EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"-2.5", "-3", "3.1", "3.01", "4", "1e5", "-0"}) EXPECT_FALSE(matches(g, bad)) << bad;
}

TEST(JsonSchema, ObjectsKeepTheSchemaOrderAndRequiredProperties) {
  auto g = compile(json_schema_grammar(
      R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}, "required": ["a"]})"));
  EXPECT_TRUE(matches(g, R"({"b": 1, "a": "x"})"));
  EXPECT_TRUE(matches(g, R"({"a":"x"})"));
  EXPECT_FALSE(matches(g, R"({"a": "x", "b": 1})"));  // out of the schema's order
  EXPECT_FALSE(matches(g, R"({"b": 1})"));            // a is required
  EXPECT_FALSE(matches(g, R"({"a": "x", "c": 1})"));  // no properties beyond the schema's
}

TEST(JsonSchema, PatternsAreWrittenAsJsonStringContent) {
  // The pattern ^a["\\]b.$ : a quote or a backslash, then any character.
  auto g = compile(json_schema_grammar(R"({"type": "string", "pattern": "^a[\"\\\\]b.$"})"));
  EXPECT_TRUE(matches(g, R"("a\"bz")"));
  EXPECT_TRUE(matches(g, R"("a\\b\t")"));     // '.' takes a control character as its escape
  EXPECT_FALSE(matches(g, "\"a\\\"b\nz\""));  // a raw newline is not JSON
  EXPECT_FALSE(matches(g, R"("a"bz")"));
}

TEST(JsonSchema, RefusesWhatItCannotEnforceByName) {
  auto message = [](const char* schema) { return json_schema_grammar(schema).status().message(); };
  EXPECT_NE(message(R"({"type": "array", "uniqueItems": true})").find("uniqueItems"), std::string::npos);
  EXPECT_NE(message(R"({"not": {}})").find("'not'"), std::string::npos);
  EXPECT_NE(message(R"({"type": "string", "format": "hostname"})").find("hostname"), std::string::npos);
  EXPECT_NE(message(R"({"type": "integer", "multipleOf": 3})").find("multipleOf"), std::string::npos);
  EXPECT_NE(message(R"({"$ref": "#/$defs/missing"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(message(R"({"type": "string", "pattern": "(a)\\1"})").find("backreference"), std::string::npos);
  EXPECT_NE(message("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(message(R"(false)").find("allows no value"), std::string::npos);
  std::string deep = "{}";
  for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(message(deep.c_str()).find("nested too deeply"), std::string::npos);
}

// A pattern's or format's matches all have lengths within minLength and
// maxLength (pydantic's HttpUrl: a URL of 1 to 2083 characters): the schema
// is the pattern.  Where some match would not, the schema is refused.
TEST(JsonSchema, LengthsWithAPatternAreKeptWhereEveryMatchHasThem) {
  auto message = [](const char* schema) { return json_schema_grammar(schema).status().message(); };
  auto url = compile(json_schema_grammar(R"({"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083})"));
  EXPECT_TRUE(matches(url, R"("https://example.com/a")"));
  EXPECT_FALSE(matches(url, R"("")"));
  auto pin = compile(json_schema_grammar(R"({"pattern": "^(ab|c){2}$", "minLength": 2, "maxLength": 4})"));
  for (const char* ok : {R"("cc")", R"("abc")", R"("abab")"}) EXPECT_TRUE(matches(pin, ok)) << ok;
  EXPECT_NE(message(R"({"pattern": "^(ab|c){2}$", "minLength": 3})").find("2 to 4 characters"), std::string::npos);
  EXPECT_NE(message(R"({"pattern": "^(ab|c){2}$", "maxLength": 3})").find("maxLength"), std::string::npos);
  EXPECT_NE(message(R"({"pattern": "^[a-z]+$", "maxLength": 10})").find("at least 1 character"), std::string::npos);
  EXPECT_NE(message(R"({"pattern": "^x?$", "minLength": 1})").find("0 to 1 character"), std::string::npos);
  // Escaped characters count once: "\\" is one backslash.
  auto slash = compile(json_schema_grammar(R"({"pattern": "^[\\\\a]{2}$", "maxLength": 2})"));
  EXPECT_TRUE(matches(slash, R"("\\a")"));
}

TEST(StructuredOutput, ChoicesAreExactAndTheCacheReturnsOneGrammarPerSource) {
  GrammarCache cache(byte_vocabulary());
  StructuredOutputSpec spec{ConstraintKind::kChoice, "", {"yes", "no", "maybe so"}};
  auto a = cache.get(spec);
  ASSERT_TRUE(a.is_ok());
  auto b = cache.get(spec);
  EXPECT_EQ(a->get(), b->get());
  for (const char* ok : {"yes", "no", "maybe so"}) EXPECT_TRUE(matches(*a, ok));
  for (const char* bad : {"ye", "yes ", "maybe", ""}) EXPECT_FALSE(matches(*a, bad));
  spec.choices = {};
  EXPECT_FALSE(cache.get(spec).is_ok());
}

}  // namespace
}  // namespace vllm::structured
