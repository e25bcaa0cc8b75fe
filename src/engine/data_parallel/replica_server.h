// A data-parallel replica's leader (rank r >= 1 of the leaders' group): runs
// the requests rank 0's DataParallelEngine sends on its own engine, and
// sends back their outputs and the engine's counters, until rank 0 says
// stop.  Its own tensor- or pipeline-parallel workers follow its engine as
// they would rank 0's.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include "base/status.h"
#include "distributed/communicator.h"
#include "engine/async_engine.h"

namespace vllm {

// Returns once rank 0 has said stop and every request's last output has gone.
Status serve_replica(AsyncEngine& engine, Communicator& leaders);

}  // namespace vllm
