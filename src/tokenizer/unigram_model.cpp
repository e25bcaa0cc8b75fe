// Unigram (SentencePiece): the segmentation of the word with the highest
// total piece score (Viterbi); characters no piece covers become the unknown
// token (consecutive ones fused), or their bytes with byte_fallback.
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "tokenizer/models.h"
#include "tokenizer/utf8.h"

namespace vllm {
namespace {

constexpr double kUnknownPenalty = 10.0;  // unknown-token score: lowest piece score minus this

class UnigramModel : public TokenizerModel {
 public:
  static Result<std::unique_ptr<TokenizerModel>> from_json(const Json& json) {
    auto m = std::make_unique<UnigramModel>();
    if (!json.contains("vocab") || !json["vocab"].is_array()) {
      return invalid_argument("tokenizer.json: Unigram model needs a 'vocab' list of [piece, score]");
    }
    double min_score = std::numeric_limits<double>::infinity();
    for (const Json& entry : json["vocab"]) {
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
        return invalid_argument("tokenizer.json: a Unigram vocab entry must be [piece, score]");
      }
      const auto id = static_cast<int32_t>(m->pieces_.size());
      m->pieces_.push_back(entry[0].get<std::string>());
      m->scores_.push_back(entry[1].get<double>());
      m->vocab_.emplace(m->pieces_.back(), id);
      m->max_piece_bytes_ = std::max(m->max_piece_bytes_, m->pieces_.back().size());
      min_score = std::min(min_score, m->scores_.back());
    }
    m->unk_score_ = min_score - kUnknownPenalty;
    m->unk_id_ = json.contains("unk_id") && json["unk_id"].is_number_integer() ? json["unk_id"].get<int32_t>() : -1;
    m->byte_fallback_ = json.value("byte_fallback", false);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = m->vocab_.find(name);
      m->byte_ids_[b] = it == m->vocab_.end() ? -1 : it->second;
    }
    return std::unique_ptr<TokenizerModel>(std::move(m));
  }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    const size_t n = word.size();
    // best[i]: best score of word[0, i); from[i], piece[i]: its last piece.
    std::vector<double> best(n + 1, -std::numeric_limits<double>::infinity());
    std::vector<size_t> from(n + 1, 0);
    std::vector<int32_t> piece(n + 1, -1);
    best[0] = 0;
    std::string key;
    for (size_t i = 0; i < n;) {
      const size_t char_len =
          std::min<size_t>(static_cast<size_t>(utf8::sequence_length(static_cast<uint8_t>(word[i]))), n - i);
      if (best[i] > -std::numeric_limits<double>::infinity()) {
        bool single_char_known = false;
        for (size_t len = 1; len <= max_piece_bytes_ && i + len <= n; ++len) {
          auto it = vocab_.find(std::string(word.substr(i, len)));
          if (it == vocab_.end()) continue;
          single_char_known = single_char_known || len == char_len;
          const double score = best[i] + scores_[static_cast<size_t>(it->second)];
          if (score > best[i + len]) {
            best[i + len] = score;
            from[i + len] = i;
            piece[i + len] = it->second;
          }
        }
        if (!single_char_known && best[i] + unk_score_ > best[i + char_len]) {
          best[i + char_len] = best[i] + unk_score_;
          from[i + char_len] = i;
          piece[i + char_len] = -1;  // unknown
        }
      }
      i += char_len;
    }
    std::vector<std::pair<size_t, int32_t>> path;  // (start, piece or -1)
    for (size_t end = n; end > 0; end = from[end]) path.emplace_back(from[end], piece[end]);
    bool previous_unknown = false;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const auto [start, id] = *it;
      if (id >= 0) {
        out.push_back(id);
        previous_unknown = false;
        continue;
      }
      const size_t stop = (it + 1 == path.rend()) ? n : (it + 1)->first;
      if (byte_fallback_) {
        for (size_t b = start; b < stop; ++b) {
          const int32_t byte_id = byte_ids_[static_cast<uint8_t>(word[b])];
          if (byte_id >= 0) out.push_back(byte_id);
        }
        continue;
      }
      if (!previous_unknown && unk_id_ >= 0) out.push_back(unk_id_);
      previous_unknown = true;
    }
  }

  const std::string& id_to_token(int32_t id) const override {
    static const std::string kEmpty;
    return id < 0 || static_cast<size_t>(id) >= pieces_.size() ? kEmpty : pieces_[static_cast<size_t>(id)];
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  bool is_byte_token(int32_t id) const override {
    if (!byte_fallback_) return false;
    const std::string& t = id_to_token(id);
    return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>';
  }

 private:
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::unordered_map<std::string, int32_t> vocab_;
  size_t max_piece_bytes_ = 0;
  double unk_score_ = 0;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  int32_t byte_ids_[256];
};

}  // namespace

Result<std::unique_ptr<TokenizerModel>> make_unigram_model(const Json& json) { return UnigramModel::from_json(json); }

}  // namespace vllm
