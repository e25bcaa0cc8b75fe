// WordPiece (BERT): greedy longest match from the left; pieces after the
// first carry the continuing-subword prefix ("##"); a word with no complete
// match, or longer than max_input_chars_per_word, is the unknown token.
#include <unordered_map>

#include "tokenizer/models.h"
#include "tokenizer/utf8.h"

namespace vllm {
namespace {

class WordPieceModel : public TokenizerModel {
 public:
  static Result<std::unique_ptr<TokenizerModel>> from_json(const Json& json) {
    auto m = std::make_unique<WordPieceModel>();
    if (!json.contains("vocab") || !json["vocab"].is_object()) {
      return invalid_argument("tokenizer.json: WordPiece model needs a 'vocab' object");
    }
    for (const auto& [token, id] : json["vocab"].items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0) {
        return invalid_argument("tokenizer.json: vocab id of '" + token + "' must be a non-negative integer");
      }
      const auto i = id.get<int32_t>();
      m->vocab_[token] = i;
      if (static_cast<size_t>(i) >= m->id_to_token_.size()) m->id_to_token_.resize(static_cast<size_t>(i) + 1);
      m->id_to_token_[static_cast<size_t>(i)] = token;
    }
    m->prefix_ = json.value("continuing_subword_prefix", std::string("##"));
    m->max_chars_ = json.value("max_input_chars_per_word", 100);
    const std::string unk = json.value("unk_token", std::string("[UNK]"));
    auto it = m->vocab_.find(unk);
    if (it == m->vocab_.end())
      return invalid_argument("tokenizer.json: WordPiece unk_token '" + unk + "' is not in the vocab");
    m->unk_id_ = it->second;
    return std::unique_ptr<TokenizerModel>(std::move(m));
  }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    std::vector<size_t> char_starts;
    for (size_t i = 0; i < word.size();) {
      char_starts.push_back(i);
      i += std::min<size_t>(static_cast<size_t>(utf8::sequence_length(static_cast<uint8_t>(word[i]))), word.size() - i);
    }
    if (static_cast<int64_t>(char_starts.size()) > max_chars_) {
      out.push_back(unk_id_);
      return;
    }
    char_starts.push_back(word.size());
    std::vector<int32_t> pieces;
    std::string candidate;
    for (size_t start = 0; start + 1 < char_starts.size();) {
      int32_t found = -1;
      size_t end = char_starts.size() - 1;
      for (; end > start; --end) {
        candidate.assign(start == 0 ? "" : prefix_);
        candidate.append(word.substr(char_starts[start], char_starts[end] - char_starts[start]));
        auto it = vocab_.find(candidate);
        if (it != vocab_.end()) {
          found = it->second;
          break;
        }
      }
      if (found < 0) {
        out.push_back(unk_id_);
        return;
      }
      pieces.push_back(found);
      start = end;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }

  const std::string& id_to_token(int32_t id) const override {
    static const std::string kEmpty;
    return id < 0 || static_cast<size_t>(id) >= id_to_token_.size() ? kEmpty : id_to_token_[static_cast<size_t>(id)];
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::string prefix_;
  int64_t max_chars_ = 100;
  int32_t unk_id_ = 0;
};

}  // namespace

Result<std::unique_ptr<TokenizerModel>> make_wordpiece_model(const Json& json) {
  return WordPieceModel::from_json(json);
}

}  // namespace vllm
