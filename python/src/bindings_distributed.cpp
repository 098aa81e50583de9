// hidet._C.distributed: communicators and collectives (runtime/distributed.hpp), the collective
// operators (ops/collective.hpp, in hidet._C.ops) and graph::shard_tensor_parallel. Thin, as the
// rest of the binding; hidet/distributed.py builds communicators from torch.distributed's process
// groups over it. DistributedError crosses as hidet.distributed.DistributedError (a HidetError).
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "hidet/distributed.hpp"
#include "python_refs.hpp"
#include "hidet/runtime/nccl.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using hidet::Tensor;
namespace dist = hidet::distributed;
namespace g = hidet::graph;

namespace {

dist::CommunicatorOptions options_of(std::optional<double> timeout, std::optional<bool> check) {
  dist::CommunicatorOptions o = dist::CommunicatorOptions::from_env();
  if (timeout) {
    if (!(*timeout > 0))
      throw hidet::ValueError(hidet::str_cat("Communicator: timeout must be positive seconds, got ", *timeout));
    o.timeout = std::chrono::milliseconds(std::int64_t(*timeout * 1000));
  }
  if (check) o.check = *check;
  return o;
}

} // namespace

void bind_distributed(nb::module_ &m) {
  auto d = m.def_submodule("distributed", "communicators and collectives (see hidet.distributed)");
  static nb::exception<dist::DistributedError> error(d, "DistributedError", m.attr("HidetError").ptr());
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const dist::DistributedError &e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  d.def("get_unique_id", [] { return dist::get_unique_id().hex(); },
        "A new communicator id as 256 hexadecimal digits (NCCL's on a GPU, the emulator's otherwise).");
  d.def("set_emulated_device_count", &hidet::set_emulated_device_count, "n"_a);
  d.def("emulated_device_count", &hidet::emulated_device_count);
  d.def("nccl_version", [] {
    std::string why;
    return hidet::nccl::available(&why) ? hidet::nccl::library().version_str() + " " + hidet::nccl::library().path
                                        : "unavailable: " + why;
  }, "NCCL's version and path, or why it does not load.");

  nb::class_<dist::HostCollective>(d, "HostCollective")
      .def_ro("kind", &dist::HostCollective::kind)
      .def_prop_ro("dtype", [](const dist::HostCollective &h) { return std::string(h.dtype.name()); })
      .def_ro("shape", &dist::HostCollective::shape)
      .def_prop_ro("op", [](const dist::HostCollective &h) { return std::string(dist::reduce_op_name(h.op)); })
      .def_ro("root", &dist::HostCollective::root)
      .def_prop_ro("input", [](const dist::HostCollective &h) { return reinterpret_cast<std::uintptr_t>(h.input); })
      .def_prop_ro("output", [](const dist::HostCollective &h) { return reinterpret_cast<std::uintptr_t>(h.output); })
      .def_ro("input_count", &dist::HostCollective::input_count)
      .def_ro("output_count", &dist::HostCollective::output_count)
      .def("__repr__", [](const dist::HostCollective &h) {
        return hidet::str_cat("HostCollective(", h.kind, ", ", h.dtype.name(), ", in ", h.input_count, ", out ",
                              h.output_count, ")");
      });

  nb::class_<dist::Communicator>(d, "Communicator")
      .def("__init__",
           [](dist::Communicator *self, const std::string &id, int rank, int world_size, const std::string &device,
              std::optional<double> timeout, std::optional<bool> check) {
             new (self) dist::Communicator(dist::UniqueId::from_hex(id), rank, world_size, hidet::Device(device),
                                           options_of(timeout, check));
           },
           "unique_id"_a, "rank"_a, "world_size"_a, "device"_a = "cuda", "timeout"_a = nb::none(),
           "check"_a = nb::none())
      .def_static(
          "from_host_function",
          [](int rank, int world_size, const std::string &device, nb::callable fn, std::optional<double> timeout) {
            // The callable is released with the GIL held, whichever thread drops the last copy.
            auto held = std::shared_ptr<nb::callable>(new nb::callable(std::move(fn)),
                                                      [](nb::callable *c) { hidet_python::delete_with_gil(c); });
            return dist::Communicator::from_host_function(
                rank, world_size, hidet::Device(device),
                [held](const dist::HostCollective &h) {
                  nb::gil_scoped_acquire gil;
                  (*held)(nb::cast(h));
                },
                options_of(timeout, std::nullopt));
          },
          "rank"_a, "world_size"_a, "device"_a, "fn"_a, "timeout"_a = nb::none())
      .def_prop_ro("rank", &dist::Communicator::rank)
      .def_prop_ro("world_size", &dist::Communicator::world_size)
      .def_prop_ro("device", [](const dist::Communicator &c) { return c.device().str(); })
      .def_prop_ro("emulated", &dist::Communicator::emulated)
      .def_prop_ro("collectives_issued", &dist::Communicator::collectives_issued)
      .def_prop_ro("aborted", &dist::Communicator::aborted)
      .def("abort", &dist::Communicator::abort, "reason"_a)
      .def("all_reduce", [](const dist::Communicator &c, const Tensor &x, const Tensor &y, const std::string &op) {
        c.all_reduce(x, y, dist::parse_reduce_op(op));
      }, "input"_a, "output"_a, "op"_a = "sum")
      .def("all_gather", &dist::Communicator::all_gather, "input"_a, "output"_a)
      .def("reduce_scatter", [](const dist::Communicator &c, const Tensor &x, const Tensor &y, const std::string &op) {
        c.reduce_scatter(x, y, dist::parse_reduce_op(op));
      }, "input"_a, "output"_a, "op"_a = "sum")
      .def("broadcast", [](const dist::Communicator &c, std::optional<Tensor> x, const Tensor &y, int root) {
        c.broadcast(x ? *x : Tensor(), y, root);
      }, "input"_a, "output"_a, "root"_a)
      .def("send", &dist::Communicator::send, "input"_a, "peer"_a)
      .def("recv", &dist::Communicator::recv, "output"_a, "peer"_a)
      .def("__repr__", &dist::Communicator::str);

  auto ops = nb::borrow<nb::module_>(m.attr("ops"));
  ops.def("all_reduce", [](const Tensor &x, const dist::Communicator &c, const std::string &op) {
    return hidet::ops::all_reduce(x, c, dist::parse_reduce_op(op));
  }, "x"_a, "comm"_a, "op"_a = "sum");
  ops.def("all_gather", [](const Tensor &x, const dist::Communicator &c, int axis) {
    return hidet::ops::all_gather(x, c, axis);
  }, "x"_a, "comm"_a, "axis"_a = 0);
  ops.def("reduce_scatter", [](const Tensor &x, const dist::Communicator &c, const std::string &op, int axis) {
    return hidet::ops::reduce_scatter(x, c, dist::parse_reduce_op(op), axis);
  }, "x"_a, "comm"_a, "op"_a = "sum", "axis"_a = 0);
  ops.def("broadcast", [](const Tensor &x, const dist::Communicator &c, int root) {
    return hidet::ops::broadcast(x, c, root);
  }, "x"_a, "comm"_a, "root"_a = 0);
  ops.def("send", [](const Tensor &x, const dist::Communicator &c, int peer) { return hidet::ops::send(x, c, peer); },
          "x"_a, "comm"_a, "peer"_a);
  ops.def("recv", [](const Tensor &like, const dist::Communicator &c, int peer) { return hidet::ops::recv(like, c, peer); },
          "like"_a, "comm"_a, "peer"_a);

  m.def("shard_tensor_parallel", [](const g::FlowGraph &graph, const dist::Communicator &c) {
    g::TensorParallelReport r;
    g::FlowGraph out = g::shard_tensor_parallel(graph, c, &r);
    std::map<std::string, int> report{{"column_parallel", r.column_parallel}, {"row_parallel", r.row_parallel},
                                      {"sharded_nodes", r.sharded_nodes},     {"all_gathers", r.all_gathers},
                                      {"groups_left_whole", r.groups_left_whole}};
    return std::make_tuple(out, report);
  }, "graph"_a, "comm"_a);
}
