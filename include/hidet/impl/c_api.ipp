// Definitions of the C ABI (hidet/c_api.h) over hidet::Model. Compiled into libhidet by
// src/c_api.cpp; a header-only program that wants the C ABI compiles this file in one of its
// translation units.
//
// Each function catches every exception: a ValueError becomes HIDET_ERROR_INVALID_ARGUMENT (or
// HIDET_ERROR_BAD_FILE while loading), a CudaError HIDET_ERROR_CUDA, anything else
// HIDET_ERROR_INTERNAL; the message goes to this thread's last error.
#include "hidet/c_api.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "hidet/graph/model.hpp"
#include "hidet/version.hpp"

struct hidet_model {
  hidet::Model model;
  /// What hidet_tensor_info points into, per input then per output.
  struct Info {
    std::vector<const char *> dims;
  };
  std::vector<Info> inputs, outputs;
};

namespace hidet::c_api {

inline std::string &last_error() {
  thread_local std::string message;
  return message;
}

inline hidet_status fail(hidet_status status, const std::string &message) {
  last_error() = message;
  return status;
}

/// Runs `body`, turning exceptions into statuses (see the top of the file).
template <class F> hidet_status guarded(const char *fn, hidet_status value_error, F &&body) {
  try {
    body();
    return HIDET_OK;
  } catch (const CudaError &e) {
    return fail(HIDET_ERROR_CUDA, str_cat(fn, ": ", e.what()));
  } catch (const Error &e) {
    return fail(value_error, str_cat(fn, ": ", e.what()));
  } catch (const std::exception &e) {
    return fail(HIDET_ERROR_INTERNAL, str_cat(fn, ": internal error: ", e.what()));
  } catch (...) {
    return fail(HIDET_ERROR_INTERNAL, str_cat(fn, ": internal error (an unknown exception)"));
  }
}

/// A ValueError naming the NULL argument.
inline void require(const void *p, const char *what) {
  if (!p) throw ValueError(str_cat("`", what, "` is NULL"));
}

inline DataType dtype_of(hidet_dtype d, const std::string &what) {
  if (int(d) < 0 || int(d) > int(DTypeCode::F8E5M2))
    throw ValueError(str_cat(what, ": unknown dtype code ", int(d)));
  return DataType(DTypeCode(d));
}

inline std::vector<std::int64_t> shape_of(const hidet_tensor &t, const std::string &what) {
  if (t.ndim < 0 || t.ndim > 64)
    throw ValueError(str_cat(what, ": ndim ", t.ndim, " is out of range"));
  if (t.ndim > 0 && !t.shape)
    throw ValueError(str_cat(what, ": `shape` is NULL for ndim ", t.ndim));
  return std::vector<std::int64_t>(t.shape, t.shape + t.ndim);
}

/// The tensors of a call, checked; views over their memory (`with_data`: a NULL data pointer of a
/// non-empty tensor is an error).
inline std::vector<Tensor> tensors_of(const hidet_tensor *ts, std::size_t n, const char *kind) {
  if (n > 0 && !ts) throw ValueError(str_cat("`", kind, "s` is NULL for ", n, " ", kind, "s"));
  std::vector<Tensor> r;
  for (std::size_t i = 0; i < n; ++i) {
    std::string what = str_cat(kind, " ", i);
    std::vector<std::int64_t> shape = shape_of(ts[i], what);
    DataType dt = dtype_of(ts[i].dtype, what);
    try {
      r.push_back(tensor_view(ts[i].data, shape, dt));
    } catch (const ValueError &e) {
      throw ValueError(str_cat(what, ": ", e.message()));
    }
  }
  return r;
}

inline void fill_info(const ModelTensorInfo &t, hidet_model::Info &keep, hidet_tensor_info *info) {
  info->name = t.name.c_str();
  info->dtype = hidet_dtype(t.dtype.code);
  info->ndim = std::int32_t(t.shape.size());
  info->shape = t.shape.data();
  info->dims = keep.dims.data();
  info->updated = t.updated ? 1 : 0;
}

struct DeviceBlocks {
  std::mutex mu;
  std::map<void *, std::shared_ptr<Storage>> live;
};
inline DeviceBlocks &device_blocks() {
  static DeviceBlocks b;
  return b;
}

} // namespace hidet::c_api

using namespace hidet;
using c_api::guarded;
using c_api::require;

extern "C" {

const char *hidet_version(void) { return HIDET_VERSION_STRING; }

const char *hidet_last_error(void) { return c_api::last_error().c_str(); }

hidet_status hidet_model_load(const char *path, hidet_model **model) {
  const char *fn = "hidet_model_load";
  if (!path) return c_api::fail(HIDET_ERROR_INVALID_ARGUMENT, str_cat(fn, ": `path` is NULL"));
  if (!model) return c_api::fail(HIDET_ERROR_INVALID_ARGUMENT, str_cat(fn, ": `model` is NULL"));
  *model = nullptr;
  return guarded(fn, HIDET_ERROR_BAD_FILE, [&] {
    auto m = std::make_unique<hidet_model>();
    m->model = Model::load(path);
    for (const auto &t : m->model.inputs()) {
      m->inputs.emplace_back();
      for (const auto &d : t.dims)
        m->inputs.back().dims.push_back(d.c_str());
    }
    for (const auto &t : m->model.outputs()) {
      m->outputs.emplace_back();
      for (const auto &d : t.dims)
        m->outputs.back().dims.push_back(d.c_str());
    }
    *model = m.release();
  });
}

hidet_status hidet_model_free(hidet_model *model) {
  delete model;
  return HIDET_OK;
}

hidet_status hidet_model_target(const hidet_model *model, const char **target) {
  return guarded("hidet_model_target", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    require(target, "target");
    *target = model->model.target().c_str();
  });
}

hidet_status hidet_model_num_inputs(const hidet_model *model, size_t *count) {
  return guarded("hidet_model_num_inputs", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    require(count, "count");
    *count = model->model.inputs().size();
  });
}

hidet_status hidet_model_num_outputs(const hidet_model *model, size_t *count) {
  return guarded("hidet_model_num_outputs", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    require(count, "count");
    *count = model->model.outputs().size();
  });
}

hidet_status hidet_model_input_info(const hidet_model *model, size_t index,
                                    hidet_tensor_info *info) {
  return guarded("hidet_model_input_info", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    require(info, "info");
    const auto &ins = model->model.inputs();
    if (index >= ins.size())
      throw ValueError(str_cat("input ", index, " of a model of ", ins.size(), " inputs"));
    c_api::fill_info(ins[index], const_cast<hidet_model *>(model)->inputs[index], info);
  });
}

hidet_status hidet_model_output_info(const hidet_model *model, size_t index,
                                     hidet_tensor_info *info) {
  return guarded("hidet_model_output_info", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    require(info, "info");
    const auto &outs = model->model.outputs();
    if (index >= outs.size())
      throw ValueError(str_cat("output ", index, " of a model of ", outs.size(), " outputs"));
    c_api::fill_info(outs[index], const_cast<hidet_model *>(model)->outputs[index], info);
  });
}

hidet_status hidet_model_output_shape(const hidet_model *model, const hidet_tensor *inputs,
                                      size_t num_inputs, size_t index, int64_t *shape) {
  return guarded("hidet_model_output_shape", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    require(shape, "shape");
    if (num_inputs > 0) require(inputs, "inputs");
    const auto &outs = model->model.outputs();
    if (index >= outs.size())
      throw ValueError(str_cat("output ", index, " of a model of ", outs.size(), " outputs"));
    std::vector<std::vector<std::int64_t>> shapes;
    for (std::size_t i = 0; i < num_inputs; ++i)
      shapes.push_back(c_api::shape_of(inputs[i], str_cat("input ", i)));
    if (shapes.size() != model->model.inputs().size())
      throw ValueError(str_cat("the model takes ", model->model.inputs().size(), " inputs, ",
                               shapes.size(), " were given"));
    auto out = model->model.output_shapes(shapes)[index];
    std::copy(out.begin(), out.end(), shape);
  });
}

hidet_status hidet_model_run(const hidet_model *model, const hidet_tensor *inputs,
                             size_t num_inputs, const hidet_tensor *outputs, size_t num_outputs,
                             void *stream) {
  return guarded("hidet_model_run", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(model, "model");
    std::vector<Tensor> xs = c_api::tensors_of(inputs, num_inputs, "input");
    std::vector<Tensor> ys = c_api::tensors_of(outputs, num_outputs, "output");
    model->model.run(xs, ys, Stream::from_handle(stream));
  });
}

hidet_status hidet_device_malloc(size_t nbytes, void **ptr) {
  return guarded("hidet_device_malloc", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    require(ptr, "ptr");
    *ptr = nullptr;
    auto s = allocate_storage(std::max<std::size_t>(nbytes, 1), Device::cuda());
    auto &b = c_api::device_blocks();
    std::lock_guard<std::mutex> lock(b.mu);
    b.live[s->ptr] = s;
    *ptr = s->ptr;
  });
}

hidet_status hidet_device_free(void *ptr) {
  return guarded("hidet_device_free", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    if (!ptr) return;
    auto &b = c_api::device_blocks();
    std::lock_guard<std::mutex> lock(b.mu);
    if (!b.live.erase(ptr))
      throw ValueError("the pointer did not come from hidet_device_malloc (or was freed already)");
  });
}

hidet_status hidet_memcpy_to_device(void *dst, const void *src, size_t nbytes) {
  return guarded("hidet_memcpy_to_device", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    if (nbytes == 0) return;
    require(dst, "dst");
    require(src, "src");
    Device d = Device::cuda();
    runtime::detail::copy_bytes(dst, d, uses_host_memory(d), src, Device::cpu(), true, nbytes);
  });
}

hidet_status hidet_memcpy_to_host(void *dst, const void *src, size_t nbytes) {
  return guarded("hidet_memcpy_to_host", HIDET_ERROR_INVALID_ARGUMENT, [&] {
    if (nbytes == 0) return;
    require(dst, "dst");
    require(src, "src");
    Device d = Device::cuda();
    runtime::detail::copy_bytes(dst, Device::cpu(), true, src, d, uses_host_memory(d), nbytes);
  });
}

hidet_status hidet_stream_synchronize(void *stream) {
  return guarded("hidet_stream_synchronize", HIDET_ERROR_INVALID_ARGUMENT,
                 [&] { Stream::from_handle(stream).synchronize(); });
}

} // extern "C"
