#include "tokenizer/bpe_model.h"

#include <cstdio>
#include <mutex>
#include <queue>

#include "tokenizer/utf8.h"

namespace vllm {
namespace {

Result<std::pair<std::string, std::string>> parse_merge(const Json& merge) {
  if (merge.is_string()) {  // the older "left right" spelling
    const std::string s = merge.get<std::string>();
    const size_t space = s.find(' ', 1);
    if (space == std::string::npos) return invalid_argument("tokenizer.json: merge '" + s + "' has no space");
    return std::make_pair(s.substr(0, space), s.substr(space + 1));
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    return std::make_pair(merge[0].get<std::string>(), merge[1].get<std::string>());
  }
  return invalid_argument("tokenizer.json: a merge must be \"a b\" or [\"a\", \"b\"], found " + merge.dump());
}

bool null_or_empty(const Json& model, const char* key) {
  return !model.contains(key) || model[key].is_null() ||
         (model[key].is_string() && model[key].get<std::string>().empty());
}

}  // namespace

Result<BpeModel> BpeModel::from_json(const Json& model) {
  BpeModel bpe;
  if (!model.is_object() || model.value("type", std::string("BPE")) != "BPE") {
    const std::string type = model.is_object() ? model.value("type", std::string("?")) : std::string("?");
    return unimplemented("tokenizer.json: model type '" + type + "' is not supported (supported: BPE)");
  }
  if (!null_or_empty(model, "continuing_subword_prefix")) {
    bpe.continuing_subword_prefix_ = model["continuing_subword_prefix"].get<std::string>();
  }
  if (!null_or_empty(model, "end_of_word_suffix"))
    bpe.end_of_word_suffix_ = model["end_of_word_suffix"].get<std::string>();
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0) {
    return unimplemented("tokenizer.json: BPE dropout is not supported");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return invalid_argument("tokenizer.json: BPE model needs a 'vocab' object");
  }
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return invalid_argument("tokenizer.json: vocab id of '" + token + "' must be a non-negative integer");
    }
    const auto i = id.get<int32_t>();
    bpe.vocab_[token] = i;
    if (static_cast<size_t>(i) >= bpe.id_to_token_.size()) bpe.id_to_token_.resize(static_cast<size_t>(i) + 1);
    bpe.id_to_token_[static_cast<size_t>(i)] = token;
  }
  int32_t rank = 0;
  for (const Json& merge : model.value("merges", Json::array())) {
    VLLM_ASSIGN_OR_RETURN(auto pair, parse_merge(merge));
    const int32_t left = bpe.token_to_id(pair.first);
    const int32_t right = bpe.token_to_id(pair.second);
    // With a continuing-subword prefix, "a" + "##b" merges to "ab".
    const std::string& prefix = bpe.continuing_subword_prefix_;
    const std::string second = !prefix.empty() && pair.second.compare(0, prefix.size(), prefix) == 0
                                   ? pair.second.substr(prefix.size())
                                   : pair.second;
    const int32_t merged = bpe.token_to_id(pair.first + second);
    if (left < 0 || right < 0 || merged < 0) {
      return invalid_argument("tokenizer.json: merge '" + pair.first + " " + pair.second +
                              "' uses a token missing from the vocabulary");
    }
    bpe.merges_.emplace(pair_key(left, right), MergeResult{rank++, merged});
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    bpe.unk_id_ = bpe.token_to_id(model["unk_token"].get<std::string>());
  }
  bpe.byte_fallback_ = model.value("byte_fallback", false);
  bpe.fuse_unk_ = model.value("fuse_unk", false);
  bpe.ignore_merges_ = model.value("ignore_merges", false);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    bpe.byte_ids_[b] = bpe.token_to_id(name);
  }
  return bpe;
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

bool BpeModel::is_byte_token(int32_t id) const {
  if (!byte_fallback_ || id < 0) return false;
  const std::string& t = id_to_token(id);
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>';
}

const std::string& BpeModel::id_to_token(int32_t id) const {
  static const std::string kEmpty;
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return kEmpty;
  return id_to_token_[static_cast<size_t>(id)];
}

// One symbol per character; a character outside the vocabulary becomes its
// byte tokens (byte fallback) or the unknown token (fused when asked).
void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  bool pending_unk = false;
  size_t i = 0;
  const bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
  std::string affixed;
  while (i < word.size()) {
    const size_t len =
        std::min<size_t>(static_cast<size_t>(utf8::sequence_length(static_cast<uint8_t>(word[i]))), word.size() - i);
    const std::string_view ch = word.substr(i, len);
    const bool first = i == 0;
    i += len;
    int32_t id;
    if (affixes) {  // "##" before every character but the first, "</w>" after the last
      affixed.assign(first ? "" : continuing_subword_prefix_);
      affixed.append(ch);
      if (i == word.size()) affixed.append(end_of_word_suffix_);
      id = token_to_id(affixed);
    } else {
      id = token_to_id(ch);
    }
    if (id >= 0) {
      if (pending_unk) ids.push_back(unk_id_);
      pending_unk = false;
      ids.push_back(id);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (char c : ch) all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes) {
        for (char c : ch) ids.push_back(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no unknown token: the character is dropped, as in HF
    if (pending_unk && !fuse_unk_) ids.push_back(unk_id_);
    pending_unk = true;
  }
  if (pending_unk) ids.push_back(unk_id_);
}

namespace {
constexpr size_t kMaxCachedWordBytes = 256;  // longer "words" (whole SentencePiece texts) are not cached
constexpr size_t kMaxCachedWords = 100000;
}  // namespace

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const int32_t whole = token_to_id(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  if (word.size() > kMaxCachedWordBytes) {
    merge_word(word, out);
    return;
  }
  {
    std::shared_lock lock(cache_->mutex);
    auto it = cache_->words.find(word);
    if (it != cache_->words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_word(word, out);
  std::unique_lock lock(cache_->mutex);
  if (cache_->words.size() < kMaxCachedWords) {
    cache_->words.emplace(std::string(word),
                          std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<int32_t> ids;
  initial_symbols(word, ids);
  const int n = static_cast<int>(ids.size());
  // Doubly linked symbols; merging always applies the lowest-ranked pair,
  // the leftmost one among equals.
  std::vector<int> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  std::vector<bool> alive(static_cast<size_t>(n), true);
  for (int i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int left;
    int32_t left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](int left) {
    if (left < 0) return;
    const int right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    auto it = merges_.find(pair_key(ids[static_cast<size_t>(left)], ids[static_cast<size_t>(right)]));
    if (it != merges_.end()) {
      queue.push({it->second.rank, left, ids[static_cast<size_t>(left)], ids[static_cast<size_t>(right)]});
    }
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const auto left = static_cast<size_t>(c.left);
    if (!alive[left] || ids[left] != c.left_id) continue;
    const int right_i = next[left];
    if (right_i < 0 || ids[static_cast<size_t>(right_i)] != c.right_id) continue;
    const auto right = static_cast<size_t>(right_i);
    ids[left] = merges_.at(pair_key(c.left_id, c.right_id)).merged_id;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = c.left;
    push(prev[left]);
    push(c.left);
  }
  for (int i = n > 0 ? 0 : -1; i >= 0; i = next[static_cast<size_t>(i)]) out.push_back(ids[static_cast<size_t>(i)]);
}

}  // namespace vllm
