// This process's place in a distributed job.  Under mpirun (Open MPI's
// environment names the job's size) the job's ranks are connected through
// MPI; otherwise the process is the one rank of its own job, with no MPI
// call made at all.
#pragma once

#include "base/status.h"
#include "distributed/communicator.h"

namespace vllm {

// Connects to the job's other ranks, once, first thing in main().
Status init_world();

// Every rank of the job (a group of one without mpirun).
Communicator& world();

// The group of `size` consecutive ranks this rank belongs to (ranks
// r - r % size up to r - r % size + size - 1: vLLM's tensor-parallel
// groups, the innermost), made once and kept for the process's life; the
// world itself when size is the world's size.  Every rank must ask for it
// at the same point (making it is a collective).
Communicator& consecutive_ranks(int size);

// The ranks at the same place in each group of `group_size` consecutive
// ranks (ranks r % group_size alike: vLLM's data-parallel group, which
// links the replicas' leaders), made once per size; a collective, as above.
Communicator& peer_ranks(int group_size);

// The same ranks as peer_ranks(group_size), in a group of their own:
// experts placed across the replicas, whose engine threads exchange tokens
// while the leaders' message threads use peer_ranks (a communicator and its
// counters belong to one thread).
Communicator& expert_ranks(int group_size);

// Whether two threads of a rank may make MPI calls at once (a replica's
// engine thread running its tensor-parallel passes while another thread
// exchanges requests with the other replicas); always true without mpirun.
bool concurrent_calls_allowed();

// The process's exit status after the job's ranks part: MPI is finished
// when `exit_code` is 0; otherwise every rank of the job is ended (MPI_Abort),
// so that none is left waiting for a rank that gave up.
int finish_world(int exit_code);

}  // namespace vllm
