#include "server/logprobs_json.h"

#include "api/output_json.h"

namespace vllm::server {
namespace {

int64_t utf8_chars(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

OrderedJson bytes_of(const std::string& s) {
  OrderedJson b = OrderedJson::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

std::string LogprobsFormatter::piece(int32_t previous, int32_t id) const {
  if (previous < 0) return tokenizer_.decode({id}, false);
  const std::string before = tokenizer_.decode({previous}, false);
  const std::string both = tokenizer_.decode({previous, id}, false);
  return both.compare(0, before.size(), before) == 0 ? both.substr(before.size()) : tokenizer_.decode({id}, false);
}

OrderedJson LogprobsFormatter::empty() const {
  OrderedJson j;
  if (chat_) {
    j["content"] = OrderedJson::array();
  } else {
    j["tokens"] = OrderedJson::array();
    j["token_logprobs"] = OrderedJson::array();
    j["top_logprobs"] = OrderedJson::array();
    j["text_offset"] = OrderedJson::array();
  }
  return j;
}

void LogprobsFormatter::append(OrderedJson& out, const std::vector<int32_t>& token_ids,
                               const std::vector<PositionLogprobs>& logprobs, LogprobsCursor& cursor) const {
  for (size_t i = 0; i < token_ids.size() && i < logprobs.size(); ++i) {
    const PositionLogprobs& p = logprobs[i];
    const std::string text = piece(cursor.previous_token, p.chosen.token_id);
    if (chat_) {
      OrderedJson top = OrderedJson::array();
      for (size_t k = 0; k < p.top.size() && static_cast<int32_t>(k) < top_n_; ++k) {
        const std::string t = piece(cursor.previous_token, p.top[k].token_id);
        top.push_back(
            OrderedJson{{"token", t}, {"logprob", api::reported_logprob(p.top[k].logprob)}, {"bytes", bytes_of(t)}});
      }
      out["content"].push_back(OrderedJson{{"token", text},
                                           {"logprob", api::reported_logprob(p.chosen.logprob)},
                                           {"bytes", bytes_of(text)},
                                           {"top_logprobs", std::move(top)}});
    } else {
      OrderedJson top = OrderedJson::object();
      top[text] = api::reported_logprob(p.chosen.logprob);
      for (const TokenLogprob& t : p.top)
        top[piece(cursor.previous_token, t.token_id)] = api::reported_logprob(t.logprob);
      out["tokens"].push_back(text);
      out["token_logprobs"].push_back(api::reported_logprob(p.chosen.logprob));
      out["top_logprobs"].push_back(std::move(top));
      out["text_offset"].push_back(cursor.text_offset);
    }
    cursor.text_offset += utf8_chars(text);
    cursor.previous_token = p.chosen.token_id;
  }
}

OrderedJson prompt_logprobs_json(const Tokenizer& tokenizer, const std::vector<PositionLogprobs>& positions) {
  OrderedJson out = OrderedJson::array({nullptr});
  for (const PositionLogprobs& p : positions) {
    OrderedJson entry = OrderedJson::object();
    auto add = [&](const TokenLogprob& t) {
      const std::string id = std::to_string(t.token_id);
      if (entry.contains(id)) return;
      entry[id] = OrderedJson{{"logprob", api::reported_logprob(t.logprob)},
                              {"rank", t.rank},
                              {"decoded_token", tokenizer.decode({t.token_id}, false)}};
    };
    add(p.chosen);
    for (const TokenLogprob& t : p.top) add(t);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace vllm::server
