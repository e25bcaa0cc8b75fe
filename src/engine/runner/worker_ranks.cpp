#include "engine/runner/worker_ranks.h"

#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/byte_codec.h"
#include "base/logging.h"
#include "engine/runner/model_runner.h"
#include "model/lora/peft_adapter.h"

namespace vllm {
namespace {

enum class Message : int64_t { kOpen = 1, kExecute, kClose, kStop, kSetLora };

// What rank 0 broadcasts first for every message; a payload follows: a
// step's chunks as int32s, or an adapter's bytes.
struct Header {
  Message message = Message::kStop;
  int64_t runner = 0;  // kSetLora: the slot
  int64_t payload_bytes = 0;
  // kOpen: the KV pool.
  int64_t num_blocks = 0, block_size = 0, dtype = 0, resident = 0;
};

constexpr int kRoot = 0;

// Posted, not waited for: under pipeline parallelism rank 0 runs its stage
// of the next step while the later stages are still busy with the last.
void send(Communicator& group, Header header, const void* payload = nullptr, int64_t payload_bytes = 0) {
  header.payload_bytes = payload_bytes;
  group.post_broadcast(&header, sizeof header);
  if (payload_bytes > 0) group.post_broadcast(payload, payload_bytes);
}

// Per chunk: its sizes and fields, then its tokens, drafts and block table.
constexpr size_t kChunkFields = 7;

void serialize(std::span<const ForwardChunk> chunks, std::vector<int32_t>& out) {
  out.clear();
  out.push_back(static_cast<int32_t>(chunks.size()));
  for (const ForwardChunk& c : chunks) {
    out.insert(out.end(), {static_cast<int32_t>(c.token_ids.size()), c.num_draft_tokens(), c.num_computed_tokens,
                           c.num_prompt_tokens, static_cast<int32_t>(c.block_table.size()), c.num_logits, c.lora_slot});
    out.insert(out.end(), c.token_ids.begin(), c.token_ids.end());
    out.insert(out.end(), c.draft_token_ids.begin(), c.draft_token_ids.end());
    out.insert(out.end(), c.block_table.begin(), c.block_table.end());
  }
}

// Chunks whose spans point into `payload`.
std::vector<ForwardChunk> deserialize(const std::vector<int32_t>& payload) {
  std::vector<ForwardChunk> chunks(static_cast<size_t>(payload.at(0)));
  const int32_t* at = payload.data() + 1;
  for (ForwardChunk& c : chunks) {
    const int32_t tokens = at[0], drafts = at[1], table = at[4];
    c.num_computed_tokens = at[2];
    c.num_prompt_tokens = at[3];
    c.num_logits = at[5];
    c.lora_slot = at[6];
    at += kChunkFields;
    c.token_ids = {at, static_cast<size_t>(tokens)};
    at += tokens;
    c.draft_token_ids = {at, static_cast<size_t>(drafts)};
    at += drafts;
    c.block_table = {at, static_cast<size_t>(table)};
    at += table;
  }
  VLLM_CHECK(at == payload.data() + payload.size(), "a step's chunks fill its message");
  return chunks;
}

// A LoRA adapter's settings and A and B matrices, as read (not packed).
std::string encode_adapter(const PeftAdapter& adapter) {
  ByteWriter w;
  w.put(adapter.rank);
  w.put(adapter.alpha);
  w.put(adapter.use_rslora);
  w.put(adapter.scaling);
  w.put(static_cast<uint64_t>(adapter.modules.size()));
  for (const auto& [name, module] : adapter.modules) {
    w.put(name);
    w.put(module.rank);
    w.put(module.a);
    w.put(module.b);
  }
  return w.take();
}

PeftAdapter decode_adapter(const std::string& bytes) {
  ByteReader r(bytes);
  PeftAdapter adapter;
  r.get(adapter.rank);
  r.get(adapter.alpha);
  r.get(adapter.use_rslora);
  r.get(adapter.scaling);
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    LoraModuleWeights& module = adapter.modules[r.get<std::string>()];
    r.get(module.rank);
    r.get(module.a);
    r.get(module.b);
  }
  VLLM_CHECK(r.at_end(), "an adapter's message holds the adapter");
  return adapter;
}

}  // namespace

WorkerRunnerLink::WorkerRunnerLink(Communicator& group, const KVCacheShape& shape, int32_t num_blocks, bool resident)
    : group_(group) {
  static std::atomic<int32_t> next_id{0};
  id_ = next_id++;
  send(group_, {.message = Message::kOpen,
                .runner = id_,
                .num_blocks = num_blocks,
                .block_size = shape.block_size,
                .dtype = static_cast<int64_t>(shape.dtype),
                .resident = resident ? 1 : 0});
}

WorkerRunnerLink::~WorkerRunnerLink() { send(group_, {.message = Message::kClose, .runner = id_}); }

void WorkerRunnerLink::execute(std::span<const ForwardChunk> chunks) {
  thread_local std::vector<int32_t> payload;
  serialize(chunks, payload);
  send(group_, {.message = Message::kExecute, .runner = id_}, payload.data(),
       static_cast<int64_t>(payload.size() * sizeof(int32_t)));
}

void WorkerRunnerLink::set_lora(int32_t slot, const PeftAdapter& adapter) {
  const std::string bytes = encode_adapter(adapter);
  send(group_, {.message = Message::kSetLora, .runner = slot}, bytes.data(), static_cast<int64_t>(bytes.size()));
}

Status run_worker(Model& model, ThreadPool& pool) {
  Communicator* group = model.parallel_group();
  VLLM_CHECK(group != nullptr && group->rank() != kRoot, "run_worker runs a worker rank's share of a model");
  // mpirun passes a SIGTERM or SIGINT to every rank; rank 0 then finishes
  // its requests, which need this rank, and stops it.  (A rank that dies is
  // another matter: mpirun then ends them all.)
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  std::map<int64_t, std::unique_ptr<ModelRunner>> runners;
  std::map<int64_t, std::unique_ptr<PeftAdapter>> lora_slots;  // what each slot of the model holds
  std::vector<int32_t> payload;                                // a step's chunks (int32s), or an adapter's bytes
  for (;;) {
    Header header;
    group->broadcast_idle(&header, sizeof header, kRoot);
    payload.resize((static_cast<size_t>(header.payload_bytes) + sizeof(int32_t) - 1) / sizeof(int32_t));
    if (header.payload_bytes > 0) group->broadcast_idle(payload.data(), header.payload_bytes, kRoot);
    switch (header.message) {
      case Message::kOpen: {
        const KVCacheShape shape{model.kv_cache_spec(), static_cast<int32_t>(header.block_size),
                                 static_cast<DType>(header.dtype)};
        runners[header.runner] = std::make_unique<ModelRunner>(
            model, pool, shape, static_cast<int32_t>(header.num_blocks), header.resident != 0);
        break;
      }
      case Message::kExecute: {
        const auto runner = runners.find(header.runner);
        if (runner == runners.end()) return internal_error("rank 0 ran a runner this worker never opened");
        const std::vector<ForwardChunk> chunks = deserialize(payload);
        runner->second->execute(chunks);
        break;
      }
      case Message::kClose:
        runners.erase(header.runner);
        break;
      case Message::kSetLora: {
        auto adapter = std::make_unique<PeftAdapter>(decode_adapter(
            std::string(reinterpret_cast<const char*>(payload.data()), static_cast<size_t>(header.payload_bytes))));
        pack_adapter(*adapter, model.lora_targets(), lora_dtype(model.config()));
        VLLM_RETURN_IF_ERROR(model.set_lora(static_cast<int32_t>(header.runner), adapter.get()));
        lora_slots[header.runner] = std::move(adapter);
        break;
      }
      case Message::kStop:
        return Status::ok();
      default:
        return internal_error("a worker rank received an unknown message from rank 0");
    }
  }
}

WorkerStop& WorkerStop::operator=(WorkerStop&& other) noexcept {
  if (this != &other) {
    if (group_ != nullptr) send(*group_, {.message = Message::kStop});
    group_ = std::exchange(other.group_, nullptr);
  }
  return *this;
}

WorkerStop::~WorkerStop() {
  if (group_ != nullptr) send(*group_, {.message = Message::kStop});
}

}  // namespace vllm
