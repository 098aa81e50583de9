// Quick start: tensors, imperative operators, and symbolic tracing into a flow graph.
//
// Hidet for C++ runs operators eagerly on hidet::Tensor, like PyTorch. Each operator is defined
// by a compute definition; the first call for a given operator, attributes, shapes and dtypes
// schedules it into a Hidet Script kernel and compiles it (NVRTC, cached on disk); later calls
// reuse the compiled kernel. Without a GPU, the 'cuda' device is served by the CPU emulator.
//
// 1. Create tensors with randn / zeros / ones / full / asarray, and print them.
// 2. Run matmul and + imperatively, and print the result.
// 3. Symbolic tensors: the same operators applied to hidet::symbol_like(a) run nothing; they
//    record themselves, y.trace() names the operator that made y, and hidet::trace_from(y) gives
//    the FlowGraph, printed in Hidet's form. Calling the graph runs it.
// 4. Optimize the graph (fusion) and replay it as a CUDA graph (re-run on the emulator).
#include <cmath>
#include <iostream>

#include "hidet/graph.hpp"
#include "hidet/hidet.hpp"

int main() {
  // 1. Create tensors on the (possibly emulated) GPU.
  hidet::Tensor a = hidet::randn({2, 3}, hidet::f32);
  hidet::Tensor b = hidet::ones({3, 4}, hidet::f32);
  hidet::Tensor c = hidet::asarray({1.f, 2.f, 3.f, 4.f}, {4});
  std::cout << "a = " << a << "\n" << "b = " << b << "\n" << "c = " << c << "\n";

  // 2. Imperative operators: matmul, then + with broadcasting ([2, 4] + [4]).
  hidet::Tensor d = hidet::ops::matmul(a, b) + c;
  std::cout << "matmul(a, b) + c = " << d << "\n";

  // Check one element against the host: d[i][j] = sum_k a[i][k] + c[j].
  auto av = a.to_double_vector(), dv = d.to_double_vector();
  double want = av[0] + av[1] + av[2] + 1.0;
  if (std::abs(dv[0] - want) > 1e-4) {
    std::cerr << "unexpected result: " << dv[0] << " != " << want << "\n";
    return 1;
  }

  // 3. Symbolic tensor and flow graph: x has a's shape, dtype and device but no data.
  hidet::Tensor x = hidet::symbol_like(a);
  hidet::Tensor y = hidet::ops::matmul(x, b) + c;
  std::cout << "x: " << x << "\n" << "y: " << y << "\n";
  hidet::FlowGraph graph = hidet::trace_from(y);
  std::cout << graph << "\n";
  hidet::Tensor y1 = graph(a);
  std::cout << "graph(a) = " << y1 << "\n";

  // 4. Optimize, then capture the optimized graph once and replay it.
  hidet::FlowGraph opt_graph = hidet::graph::optimize(graph);
  std::cout << opt_graph << "\n";
  hidet::graph::CudaGraph cuda_graph = opt_graph.cuda_graph();
  hidet::Tensor y2 = cuda_graph.run({a})[0];
  std::cout << "cuda_graph.run({a})[0] = " << y2 << "\n";
  for (const hidet::Tensor &t : {y1, y2}) {
    auto yv = t.to_double_vector();
    for (std::size_t i = 0; i < yv.size(); ++i)
      if (std::abs(yv[i] - dv[i]) > 1e-4) {
        std::cerr << "graph result differs from the eager one at " << i << "\n";
        return 1;
      }
  }
  std::cout << "ok\n";
  return 0;
}
