// Definitions for runtime/shared_constants.hpp.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "hidet/runtime/shared_constants.hpp"

namespace hidet {
namespace runtime::detail {
struct SharedConstantKey {
  std::string what;
  // Per source: its address, device (type, index), dtype and shape.
  std::vector<std::tuple<std::uintptr_t, int, int, std::string, std::vector<std::int64_t>>> sources;
  bool operator<(const SharedConstantKey &o) const {
    return std::tie(what, sources) < std::tie(o.what, o.sources);
  }
};

struct SharedConstantEntry {
  std::weak_ptr<Storage> storage; ///< the result's (a wrapper keeping the sources alive)
  std::vector<std::int64_t> shape;
  DataType dtype;
};

struct SharedConstants {
  std::mutex mutex;
  std::map<SharedConstantKey, SharedConstantEntry> memo;
  std::size_t sweep_at = 64; ///< expired entries are dropped when the memo grows past this
};

inline SharedConstants &shared_constants() {
  static SharedConstants *s = new SharedConstants(); // never destroyed: used by static destructors
  return *s;
}
} // namespace runtime::detail

HIDET_INLINE Tensor shared_constant(const std::string &what, const std::vector<Tensor> &sources,
                                    const std::function<Tensor()> &compute) {
  using namespace runtime::detail;
  SharedConstantKey key{what, {}};
  for (const auto &s : sources) {
    if (!s.defined() || s.is_symbolic())
      throw ValueError(str_cat("shared_constant(", what, "): the sources must be tensors with data"));
    key.sources.emplace_back(reinterpret_cast<std::uintptr_t>(s.data_ptr()), int(s.device().kind),
                             s.device().index, std::string(s.dtype().name()), s.shape());
  }
  auto &state = shared_constants();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = state.memo.find(key);
    if (it != state.memo.end())
      if (auto storage = it->second.storage.lock()) return Tensor(storage, it->second.shape, it->second.dtype);
  }
  Tensor result = compute(); // outside the lock: it may run kernels, or compute other constants
  if (result.is_symbolic() || !result.defined())
    throw ValueError(str_cat("shared_constant(", what, "): the computation gave no tensor with data"));
  // A storage of its own for the result, whose owner keeps the result's memory and the sources'.
  auto keep = std::make_shared<std::vector<std::shared_ptr<Storage>>>();
  keep->push_back(result.storage());
  for (const auto &s : sources)
    keep->push_back(s.storage());
  auto storage = external_storage(result.data_ptr(), result.nbytes(), result.device(), result.is_host_memory(),
                                  std::shared_ptr<const void>(keep, keep.get()));
  Tensor shared(storage, result.shape(), result.dtype());
  std::lock_guard<std::mutex> lock(state.mutex);
  auto [it, fresh] = state.memo.try_emplace(key);
  if (!fresh)
    if (auto other = it->second.storage.lock()) // another thread computed it meanwhile: theirs
      return Tensor(other, it->second.shape, it->second.dtype);
  it->second = {storage, result.shape(), result.dtype()};
  if (state.memo.size() > state.sweep_at) {
    for (auto e = state.memo.begin(); e != state.memo.end();)
      e = e->second.storage.expired() ? state.memo.erase(e) : std::next(e);
    state.sweep_at = std::max<std::size_t>(64, 2 * state.memo.size());
  }
  return shared;
}

HIDET_INLINE std::size_t shared_constants_alive() {
  auto &state = runtime::detail::shared_constants();
  std::lock_guard<std::mutex> lock(state.mutex);
  std::size_t n = 0;
  for (const auto &[key, entry] : state.memo)
    n += !entry.storage.expired();
  return n;
}

HIDET_INLINE void forget_shared_constants() {
  auto &state = runtime::detail::shared_constants();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.memo.clear();
}

} // namespace hidet
