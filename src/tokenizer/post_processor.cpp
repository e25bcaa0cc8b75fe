#include "tokenizer/post_processor.h"

namespace vllm {
namespace {
constexpr int32_t kSequenceSlot = -1;
}

Result<PostProcessor> PostProcessor::from_json(const Json& json) {
  PostProcessor pp;
  if (json.is_null()) return pp;
  const std::string type = json.is_object() ? json.value("type", std::string()) : std::string();
  // ByteLevel only adjusts offsets, which we do not track: no ids change.
  if (type == "ByteLevel") return pp;
  if (type == "Sequence") {
    for (const Json& part : json.value("processors", Json::array())) {
      VLLM_ASSIGN_OR_RETURN(PostProcessor p, from_json(part));
      if (!p.single_template_.empty()) {
        if (!pp.single_template_.empty()) {
          return unimplemented("tokenizer.json: a post_processor Sequence with two templates is not supported");
        }
        pp.single_template_ = std::move(p.single_template_);
      }
    }
    return pp;
  }
  // [CLS] A [SEP] (BERT) and <s> A </s> (RoBERTa): "cls" and "sep" are [token, id].
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const Json cls = json.value("cls", Json()), sep = json.value("sep", Json());
    if (!cls.is_array() || cls.size() != 2 || !sep.is_array() || sep.size() != 2) {
      return invalid_argument("tokenizer.json: " + type + " needs 'cls' and 'sep' as [token, id]");
    }
    pp.single_template_ = {cls[1].get<int32_t>(), kSequenceSlot, sep[1].get<int32_t>()};
    return pp;
  }
  if (type != "TemplateProcessing") {
    return unimplemented("tokenizer.json: post_processor type '" + type + "' is not supported yet");
  }
  const Json& specials = json.value("special_tokens", Json::object());
  for (const Json& item : json.value("single", Json::array())) {
    if (item.contains("Sequence")) {
      pp.single_template_.push_back(kSequenceSlot);
    } else if (item.contains("SpecialToken") && item["SpecialToken"].contains("id")) {
      const std::string name = item["SpecialToken"]["id"].get<std::string>();
      if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array()) {
        return invalid_argument("tokenizer.json: post_processor uses undefined special token '" + name + "'");
      }
      for (const Json& id : specials[name]["ids"]) pp.single_template_.push_back(id.get<int32_t>());
    } else {
      return invalid_argument("tokenizer.json: unrecognised TemplateProcessing item " + item.dump());
    }
  }
  return pp;
}

PostProcessor PostProcessor::bos_eos(std::optional<int32_t> bos, std::optional<int32_t> eos) {
  PostProcessor pp;
  if (bos) pp.single_template_.push_back(*bos);
  pp.single_template_.push_back(kSequenceSlot);
  if (eos) pp.single_template_.push_back(*eos);
  if (!bos && !eos) pp.single_template_.clear();
  return pp;
}

std::vector<int32_t> PostProcessor::process(std::vector<int32_t> ids) const {
  if (single_template_.empty()) return ids;
  std::vector<int32_t> out;
  out.reserve(ids.size() + single_template_.size());
  for (int32_t item : single_template_) {
    if (item == kSequenceSlot) {
      out.insert(out.end(), ids.begin(), ids.end());
    } else {
      out.push_back(item);
    }
  }
  return out;
}

}  // namespace vllm
