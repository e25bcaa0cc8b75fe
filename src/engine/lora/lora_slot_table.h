// Which adapter each of the model's LoRA slots holds (vLLM's adapter
// manager on the device, least recently used first out).  Every adapter of
// a step gets a slot: one already in a slot keeps it, one that is not takes
// the slot least recently used by earlier steps, and the model packs its
// weights there (ModelRunner::set_lora).  The scheduler lets no step have more
// adapters than there are slots (--max-loras).
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "engine/lora/lora_adapter.h"

namespace vllm {

class LoraSlotTable {
 public:
  // `load` packs an adapter's weights into a slot of the model.
  using SlotLoader = std::function<Status(int32_t slot, const PeftAdapter& adapter)>;
  LoraSlotTable(SlotLoader load, int32_t num_slots) : load_(std::move(load)), slots_(static_cast<size_t>(num_slots)) {}

  // Starts a step: the slots the step's adapters take are kept for it.
  void begin_step() { ++step_; }
  // `adapter`'s slot for this step, loaded into it if it is not there.
  int32_t slot_for(const LoraAdapter& adapter);

 private:
  struct Slot {
    int64_t adapter_id = 0;  // 0: empty
    int64_t last_step = 0;   // the last step that used it
  };
  SlotLoader load_;
  std::vector<Slot> slots_;
  int64_t step_ = 0;
};

}  // namespace vllm
