#include "cli/tokenizer_source.h"

#include "model/loader/gguf_checkpoint.h"
#include "model/loader/gguf_tokenizer.h"

namespace vllm::cli {

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  VLLM_ASSIGN_OR_RETURN(const std::string gguf, find_gguf_file(path));
  if (gguf.empty()) return Tokenizer::load(path);
  VLLM_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(gguf));
  VLLM_ASSIGN_OR_RETURN(TokenizerDocuments docs, gguf_tokenizer_documents(file));
  return Tokenizer::from_json(docs.tokenizer, docs.config, gguf);
}

}  // namespace vllm::cli
