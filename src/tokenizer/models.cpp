#include "tokenizer/models.h"

#include "tokenizer/bpe_model.h"

namespace vllm {

Result<std::unique_ptr<TokenizerModel>> make_wordpiece_model(const Json& json);
Result<std::unique_ptr<TokenizerModel>> make_unigram_model(const Json& json);

Result<std::unique_ptr<TokenizerModel>> make_model(const Json& json) {
  if (!json.is_object()) return invalid_argument("tokenizer.json: 'model' must be an object");
  // Older files leave "type" out of BPE models.
  const std::string type = json.value("type", std::string("BPE"));
  if (type == "BPE") {
    VLLM_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::from_json(json));
    return std::unique_ptr<TokenizerModel>(std::make_unique<BpeModel>(std::move(bpe)));
  }
  if (type == "WordPiece") return make_wordpiece_model(json);
  if (type == "Unigram") return make_unigram_model(json);
  return unimplemented("tokenizer.json: model type '" + type +
                       "' is not supported (supported: BPE, WordPiece, Unigram)");
}

}  // namespace vllm
