// Several GPUs: communicators and their collectives (runtime/distributed.hpp, NCCL on a GPU,
// threads on the emulator), the collectives as operators and graph nodes (ops/collective.hpp) and
// the tensor-parallel sharding of traced graphs (graph/tensor_parallel.hpp). Aggregate header;
// docs/distributed.md.
#pragma once

#include "hidet/graph/tensor_parallel.hpp"
#include "hidet/ops/collective.hpp"
#include "hidet/runtime/distributed.hpp"
