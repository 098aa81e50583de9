// hidet::Model and graph::save_model (include/hidet/graph/model.hpp): a model of a symbolic batch
// saved at several sizes (one shape-generic, one per-shape compiled graph) loads with its names,
// dtypes and shapes and runs each size against the eager operators, into fresh tensors or into
// memory the caller owns; four threads on their own streams run one model at once with correct
// results; a new process loads the file and runs it with NVRTC never loaded (on the emulator too:
// the file carries the kernels' IR); bad files and bad inputs or outputs give ValueErrors and the
// model stays usable.
#include "../ops/ops_test_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <thread>

#include "hidet/graph.hpp"
#include "hidet/version.hpp"

using namespace ops_test;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / str_cat("hidet-model-", ::getpid(), "-", g_rng());
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string &name) const { return (path / name).string(); }
};

std::string read_all(const std::string &p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_all(const std::string &p, const std::string &data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), std::streamsize(data.size()));
}

/// A classifier head over a batch of n rows: two outputs, weights shared by every size.
struct Net {
  Tensor w = make({24, 10}, dtypes::f32, -0.5, 0.5), bias = make({10}, dtypes::f32);
  std::vector<Tensor> operator()(const Tensor &x) const {
    Tensor h = o::relu(o::matmul(x, w) + bias);
    return {o::softmax(h, -1), o::sum(h, {1})};
  }
};

/// The model saved at n = 3 (shape-generic, compiled at a symbol value) and n = 5 (per shape).
void save_net(const Net &net, const std::string &path) {
  Tensor x = symbol({"n", 24}, dtypes::f32, "cuda", "features");
  FlowGraph g = trace_from(net(x));
  graph::CompiledGraph generic(graph::optimize_shape_generic(g), {{"n", 3}});
  graph::CompiledGraph fixed(graph::optimize(g.specialize({{"n", 5}})));
  save_model(path, {generic, fixed});
}

bool nvrtc_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libnvrtc") != std::string::npos) return true;
  return false;
}

} // namespace

TEST_CASE("a model saved at two batch sizes loads with its signature and runs both") {
  TempDir dir;
  Net net;
  save_net(net, dir.file("net.hidet"));
  Model model = Model::load(dir.file("net.hidet"));
  REQUIRE(model.inputs().size() == 1);
  CHECK(model.inputs()[0].str() == "features: float32[n, 24]");
  CHECK(model.inputs()[0].shape == std::vector<std::int64_t>{-1, 24});
  REQUIRE(model.outputs().size() == 2);
  CHECK(model.outputs()[0].str() == "output0: float32[n, 10]");
  CHECK(model.outputs()[1].str() == "output1: float32[n]");
  CHECK(model.compiled_shapes().size() == 2);
  CHECK(model.target() == (runtime::cuda_emulated() ? "emulator" : runtime::device_info(0).arch()));
  CHECK(model.output_shapes({{5, 24}}) == std::vector<std::vector<std::int64_t>>{{5, 10}, {5}});
  for (std::int64_t n : {3, 5, 3}) {
    Tensor in = make({n, 24}, dtypes::f32);
    auto want = net(in);
    auto got = model.run({in});
    REQUIRE(got.size() == 2);
    expect_same(got[0], want[0], 4);
    expect_same(got[1], want[1], 4);
  }
  expect_error(
      [&] {
        model.run({make({4, 24}, dtypes::f32)});
      },
      {"no compiled program for the input shapes ((4, 24),)", "((3, 24),)", "((5, 24),)"});

  // Into memory the caller owns (tensor_view over raw pointers); outputs checked.
  Tensor in = make({5, 24}, dtypes::f32);
  Tensor y0 = empty({5, 10}, dtypes::f32, "cuda"), y1 = empty({5}, dtypes::f32, "cuda");
  model.run({tensor_view(in.data_ptr(), {5, 24}, dtypes::f32)},
            {tensor_view(y0.data_ptr(), {5, 10}, dtypes::f32),
             tensor_view(y1.data_ptr(), {5}, dtypes::f32)});
  auto want = net(in);
  expect_same(y0, want[0], 4);
  expect_same(y1, want[1], 4);
  expect_error([&] { model.run({in}, {y0}); }, {"has 2 outputs, 1 were given"});
  expect_error(
      [&] {
        model.run({in}, {y1, y1});
      },
      {"output 0", "the output has shape (5, 10), got (5,)"});
  expect_error([&] { model.run({in}, {y0.to(Device::cpu()), y1}); }, {"output 0", "is on cpu"});
  expect_error([&] { tensor_view(nullptr, {5, 24}, dtypes::f32); }, {"null data pointer"});

  // Bad inputs, then a good run: the model stays usable.
  expect_error([&] { model.run({}); }, {"takes 1 input (features: float32[n, 24]), got 0"});
  expect_error(
      [&] {
        model.run({make({5, 24}, dtypes::f16)});
      },
      {"input 0", "expected dtype float32, got float16"});
  expect_error([&] { model.run({make({5, 23}, dtypes::f32)}); }, {"dimension 1 must be 24"});
  expect_error([&] { model.run({make({24}, dtypes::f32)}); }, {"expected rank 2"});
  expect_error(
      [&] {
        model.run({make({5, 24}, dtypes::f32).to(Device::cpu())});
      },
      {"is on cpu", "move the input"});
  expect_same(model.run({in})[0], want[0], 4);
  Model nothing;
  expect_error([&] { nothing.run({in}); }, {"holds nothing", "Model::load"});

  // Saved again from the loaded model: the same programs and weights.
  model.save(dir.file("again.hidet"));
  expect_same(Model::load(dir.file("again.hidet")).run({in})[1], want[1], 4);
}

TEST_CASE("a model that updates an input in place (a cache) writes it into the caller's tensor") {
  TempDir dir;
  Tensor w = make({8, 8}, dtypes::f32);
  Tensor x = symbol({3, 8}, dtypes::f32, "cuda", "x"),
         cache = symbol({3, 8}, dtypes::f32, "cuda", "cache");
  FlowGraph g({o::matmul(x, w) + cache}, {x, cache}, {{cache, cache * 0.5 + x}});
  save_model(dir.file("cache.hidet"), {graph::CompiledGraph(graph::optimize(g))});
  Model model = Model::load(dir.file("cache.hidet"));
  CHECK_FALSE(model.inputs()[0].updated);
  CHECK(model.inputs()[1].str() == "cache: float32[3, 8] (updated in place)");
  for (int step = 0; step < 2; ++step) {
    Tensor a = make({3, 8}, dtypes::f32), c = make({3, 8}, dtypes::f32);
    Tensor want_y = o::matmul(a, w) + c, want_c = c * 0.5 + a;
    auto ys = model.run({a, c});
    expect_same(ys[0], want_y, 4);
    expect_same(c, want_c, 4);
  }
  // Loaded as a compiled graph, it declares the update.
  graph::CompiledGraph loaded = graph::CompiledGraph::load(dir.file("cache.hidet"));
  CHECK(loaded.graph().updates().size() == 1);
}

TEST_CASE("four threads on their own streams run one model at once") {
  TempDir dir;
  Net net;
  save_net(net, dir.file("net.hidet"));
  Model model = Model::load(dir.file("net.hidet"));
  constexpr int threads = 4, runs = 3;
  std::vector<Tensor> ins;
  std::vector<std::vector<Tensor>> want;
  for (int t = 0; t < threads * runs; ++t) {
    ins.push_back(make({t % 2 ? 5 : 3, 24}, dtypes::f32));
    want.push_back(net(ins.back()));
  }
  std::vector<std::vector<Tensor>> got(ins.size());
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  // Started together: each thread's first run captures a CUDA graph (a new workspace) while the
  // others copy inputs on their blocking streams (which a capture on a blocking stream forbade:
  // CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, found by benchmarks/bench_deploy on ResNet-50).
  std::latch start(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        Stream s = Stream::create();
        start.arrive_and_wait();
        for (int r = 0; r < runs; ++r)
          got[std::size_t(t * runs + r)] = model.run({ins[std::size_t(t * runs + r)]}, s);
        s.synchronize();
      } catch (const std::exception &e) {
        errors[std::size_t(t)] = e.what();
      }
    });
  for (auto &th : pool)
    th.join();
  for (const auto &e : errors)
    CHECK_MESSAGE(e.empty(), e);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    REQUIRE(got[i].size() == 2);
    expect_same(got[i][0], want[i][0], 4);
    expect_same(got[i][1], want[i][1], 4);
  }
  CHECK(model.num_workspaces() >= 1);
  CHECK(model.num_workspaces() <= std::size_t(threads));
}

TEST_CASE("bad model files give ValueErrors naming the file") {
  TempDir dir;
  Net net;
  save_net(net, dir.file("net.hidet"));
  std::string good = read_all(dir.file("net.hidet"));
  expect_error([&] { Model::load(dir.file("missing.hidet")); }, {"cannot read", "missing.hidet"});
  write_all(dir.file("foreign"), "GIF89a, not a model");
  expect_error([&] { Model::load(dir.file("foreign")); }, {"is not a model file saved by hidet"});
  for (std::size_t cut : {std::size_t(12), std::size_t(40), good.size() / 2, good.size() - 1}) {
    write_all(dir.file("short"), good.substr(0, cut));
    CHECK_THROWS_AS(Model::load(dir.file("short")), ValueError);
  }
  write_all(dir.file("short"), good.substr(0, good.size() - 3));
  expect_error([&] { Model::load(dir.file("short")); }, {"truncated or corrupt"});
  for (std::size_t at : {good.size() / 3, good.size() - 5}) {
    std::string flipped = good;
    flipped[at] ^= 0x21;
    write_all(dir.file("flipped"), flipped);
    expect_error([&] { Model::load(dir.file("flipped")); }, {"checksum does not match"});
  }
  std::string other = good;
  other[other.find(HIDET_VERSION_STRING)] = '7';
  write_all(dir.file("version"), other);
  expect_error([&] { Model::load(dir.file("version")); },
               {"was saved by hidet 7", "export) the model again"});
  std::string target = runtime::cuda_emulated() ? "emulator" : runtime::device_info(0).arch();
  std::string arch = good;
  arch[arch.find(target, 8) + 1] = '#'; // the target follows the magic, format and version
  write_all(dir.file("arch"), arch);
  expect_error([&] { Model::load(dir.file("arch")); }, {"holds kernels compiled for"});
  // A graph of several shapes is a Model, not a CompiledGraph.
  expect_error([&] { graph::CompiledGraph::load(dir.file("net.hidet")); },
               {"holds programs for 2 sets", "hidet::Model"});
}

// The second half of the next test: run in a new process with HIDET_MODEL_DIR set.
TEST_CASE("child: load a model in a new process" * doctest::skip()) {
  const char *d = std::getenv("HIDET_MODEL_DIR");
  REQUIRE(d);
  fs::path dir(d);
  std::ofstream result(dir / "child.txt");
  try {
    Model model = Model::load((dir / "net.hidet").string());
    std::string in = read_all((dir / "input.bin").string());
    std::vector<float> xs(in.size() / sizeof(float));
    std::memcpy(xs.data(), in.data(), in.size());
    for (double v : model.run({asarray(xs, {5, 24}, "cuda")})[0].to_double_vector())
      result << v << "\n";
    result << (nvrtc_mapped() ? "nvrtc loaded\n" : "");
  } catch (const Error &e) {
    result << "error: " << e.what() << "\n";
  }
}

TEST_CASE("a new process loads the model and runs it without NVRTC") {
  TempDir dir;
  Net net;
  save_net(net, dir.file("net.hidet"));
  Tensor in = make({5, 24}, dtypes::f32);
  std::vector<double> want = net(in)[0].to_double_vector();
  std::vector<float> xs;
  for (double v : in.to_double_vector())
    xs.push_back(float(v));
  write_all(dir.file("input.bin"),
            std::string(reinterpret_cast<const char *>(xs.data()), xs.size() * sizeof(float)));
  std::string cmd =
      str_cat("HIDET_MODEL_DIR='", dir.path.string(), "' HIDET_EMULATOR_NVRTC=1 '",
              fs::read_symlink("/proc/self/exe").string(), "' --no-skip --test-case='child: *' > '",
              dir.file("child.log"), "' 2>&1");
  int rc = std::system(cmd.c_str());
  INFO("child log: " << read_all(dir.file("child.log")));
  REQUIRE(rc == 0);
  std::string out = read_all(dir.file("child.txt"));
  INFO("child result: " << out.substr(0, 400));
  REQUIRE(out.find("error: ") == std::string::npos);
  CHECK(out.find("nvrtc loaded") == std::string::npos);
  std::istringstream s(out);
  std::vector<double> got;
  for (double v; s >> v;)
    got.push_back(v);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4));
}
