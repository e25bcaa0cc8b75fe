#include "model/loader/checkpoint.h"

#include <set>

#include "base/file_util.h"
#include "base/json.h"
#include "model/loader/numbered_names.h"

namespace vllm {
namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

Result<std::vector<std::string>> shard_names(const std::string& index_path, const Json& index) {
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    return invalid_argument(index_path + ": expected an object with a 'weight_map' object");
  }
  std::set<std::string> shards;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string()) return invalid_argument(index_path + ": weight_map['" + tensor + "'] must be a file name");
    const std::string name = file.get<std::string>();
    if (name.find('/') != std::string::npos) {
      return invalid_argument(index_path + ": shard name '" + name + "' must be a plain file name");
    }
    shards.insert(name);
  }
  return std::vector<std::string>(shards.begin(), shards.end());
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const std::string& model_dir) {
  Checkpoint ckpt;
  std::vector<std::string> files;
  const std::string index_path = join_path(model_dir, kIndexFile);
  if (file_exists(join_path(model_dir, kSingleFile))) {
    files.push_back(kSingleFile);
    ckpt.source_ = join_path(model_dir, kSingleFile);
  } else if (file_exists(index_path)) {
    VLLM_ASSIGN_OR_RETURN(Json index, read_json_file(index_path));
    VLLM_ASSIGN_OR_RETURN(files, shard_names(index_path, index));
    ckpt.source_ = index_path;
  } else {
    return not_found(model_dir + ": no model weights: expected model.safetensors or model.safetensors.index.json");
  }
  for (const std::string& f : files) {
    VLLM_ASSIGN_OR_RETURN(SafetensorsFile st, SafetensorsFile::open(join_path(model_dir, f)));
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(st)));
  }
  for (const auto& file : ckpt.files_) {
    for (const auto& [name, tensor] : file->tensors()) {
      if (!ckpt.index_.emplace(name, &tensor).second) {
        return invalid_argument(file->path() + ": tensor '" + name + "' also appears in another shard");
      }
    }
  }
  return ckpt;
}

int64_t Checkpoint::count_numbered(const std::string& prefix) const { return count_numbered_keys(index_, prefix); }

Result<Tensor> Checkpoint::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return not_found(source_ + ": missing tensor '" + name + "'");
  return *it->second;
}

}  // namespace vllm
