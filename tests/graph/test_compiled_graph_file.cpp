// CompiledGraph::save and CompiledGraph::load (include/hidet/graph/compiled_graph.hpp): a compiled
// graph written to one file and replayed from it (GPU when present, else the emulator). Loaded
// graphs match the graph they were saved from on fresh inputs, with several outputs, an output
// that is a view, CUDA graphs and a second save; their weights come from the file; a new process
// loads the file (on the emulator from the kernels' IR in it); files of another version or
// architecture, truncated, corrupt or foreign files give ValueErrors and nothing is half-written.
#include "../ops/ops_test_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hidet/graph.hpp"
#include "hidet/version.hpp"

using namespace ops_test;
namespace fs = std::filesystem;

namespace {

/// A fresh folder for one test's files, removed at the end.
struct TempDir {
  fs::path path = fs::temp_directory_path() / str_cat("hidet-saved-graph-", ::getpid(), "-", g_rng());
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

/// A small network with weights: matmul + bias, layer norm, softmax, and a second output.
struct Net {
  Tensor w = make({53, 29}, dtypes::f32, -0.5, 0.5), bias = make({29}, dtypes::f32);
  std::vector<Tensor> operator()(const Tensor &x) const {
    Tensor h = o::gelu(o::matmul(x, w) + bias);
    return {o::softmax(o::layer_norm(h, 1) * 1.5, -1), o::sum(h, {1})};
  }
};

} // namespace

TEST_CASE("a saved compiled graph loads and replays like the graph it was saved from") {
  TempDir dir;
  Net net;
  Tensor a = make({37, 53}, dtypes::f32);
  Tensor x = symbol_like(a);
  graph::CompiledGraph cg = graph::compile(graph::optimize(trace_from(net(x))));
  std::string path = dir.file("net.hidet");
  cg.save(path);
  REQUIRE(fs::exists(path));
  for (const auto &e : fs::directory_iterator(dir.path)) CHECK(e.path().filename() == "net.hidet"); // no temporaries

  graph::CompiledGraph loaded = graph::CompiledGraph::load(path);
  INFO(loaded.graph());
  REQUIRE(loaded.graph().nodes().size() == 1);
  CHECK(loaded.graph().nodes()[0]->name() == "SavedGraph");
  CHECK(loaded.graph().str().find("file=") != std::string::npos);
  for (int trial = 0; trial < 3; ++trial) {
    Tensor in = make({37, 53}, dtypes::f32);
    auto want = cg.run({in});
    auto got = loaded.run({in});
    REQUIRE(got.size() == 2);
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1]);
    // Against the eager operators too (the saved kernels are the optimized graph's).
    auto eager = net(in);
    expect_same(got[0], eager[0], 4);
    expect_same(got[1], eager[1], 4);
  }
  CHECK(loaded.stats().unplanned == 0);

  // The weights come from the file: changing the originals afterwards changes nothing.
  Tensor in = make({37, 53}, dtypes::f32);
  auto before = loaded.run({in});
  std::vector<float> zeros_w(std::size_t(net.w.numel()), 0.f);
  net.w.copy_from_host(zeros_w.data());
  auto after = loaded.run({in});
  CHECK(after[0].to_double_vector() == before[0].to_double_vector());
  CHECK(after[1].to_double_vector() == before[1].to_double_vector());

  // A loaded graph saves again (the same program) and captures as a CUDA graph.
  std::string again = dir.file("again.hidet");
  loaded.save(again);
  graph::CompiledGraph twice = graph::CompiledGraph::load(again);
  expect_same(twice.run({in})[0], before[0]);
  graph::CudaGraph replay = twice.cuda_graph();
  Tensor in2 = make({37, 53}, dtypes::f32);
  auto want2 = loaded.run({in2});
  auto got2 = replay.run({in2});
  expect_same(got2[0], want2[0]);
  expect_same(got2[1], want2[1]);
}

TEST_CASE("a saved graph with an output that is a view of an intermediate and f16 math") {
  TempDir dir;
  Tensor c = make({10}, dtypes::f16);
  auto net = [&](const Tensor &x) {
    Tensor h = o::exp(x * 0.25) + c;
    return std::vector<Tensor>{h.reshape({3, 20}), o::neg(h)};
  };
  Tensor a = make({6, 10}, dtypes::f16);
  graph::CompiledGraph cg(trace_from(net(symbol_like(a))));
  cg.save(dir.file("g"));
  graph::CompiledGraph loaded = graph::CompiledGraph::load(dir.file("g"));
  Tensor in = make({6, 10}, dtypes::f16);
  auto want = net(in);
  auto got = loaded.run({in});
  REQUIRE(got.size() == 2);
  CHECK(got[0].shape() == std::vector<std::int64_t>{3, 20});
  expect_same(got[0], want[0], 2);
  expect_same(got[1], want[1], 2);
}

TEST_CASE("a saved graph that updates a cache: in place, and by a copy") {
  TempDir dir;
  Tensor c0 = make({21, 6}, dtypes::f32);
  Tensor cache = symbol_like(c0, "cache"), pos = symbol({2}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({2, 6}, dtypes::f32, Device::cuda(), "k");
  Tensor y = o::index_put(cache, {pos}, key);
  // In place (nothing reads the old cache after the update), then copied (the old cache is read
  // after it).
  for (bool in_place : {true, false}) {
    INFO("in place " << in_place);
    Tensor out = in_place ? o::sum(o::tanh(y), {1}) : cache * o::mean(y, {0, 1});
    graph::CompiledGraph cg(FlowGraph({out}, {cache, pos, key}, {{cache, y}}));
    CHECK(cg.stats().updates_in_place == (in_place ? 1u : 0u));
    cg.save(dir.file("g"));
    graph::CompiledGraph loaded = graph::CompiledGraph::load(dir.file("g"));
    Tensor c = c0.clone(), want = c0.clone();
    for (int step = 0; step < 2; ++step) {
      Tensor p = asarray<std::int64_t>({step, 20 - step}), k = make({2, 6}, dtypes::f32);
      Tensor before = want.clone();
      want = o::index_put(want, {p}, k);
      Tensor got = loaded.run({c, p, k})[0];
      expect_same(c, want);
      expect_same(got, in_place ? o::sum(o::tanh(want), {1}) : before * o::mean(want, {0, 1}));
    }
    // The loaded graph updates the cache (printed so); a CUDA graph of it copies the update back.
    CHECK(loaded.graph().str().find("cache <- ") != std::string::npos);
    graph::CudaGraph replay(loaded);
    Tensor p = asarray<std::int64_t>({9, 3}), k = make({2, 6}, dtypes::f32);
    replay.run({c, p, k});
    expect_same(c, o::index_put(want, {p}, k));
    want = o::index_put(want, {p}, k);
    // A position past the cache: the loaded kernels skip it and report it through the loading
    // process's error record (runtime/device_errors.hpp), raised by the next call.
    Tensor bad = asarray<std::int64_t>({4, 21});
    try {
      loaded.run({c, bad, k});
      hidet::synchronize();
      FAIL("expected the kernels' report of index 21");
    } catch (const ValueError &e) {
      CHECK(std::string(e.what()).find("index 21 is out of range for an axis of size 21") != std::string::npos);
    }
    CHECK_NOTHROW(hidet::synchronize());
    Tensor row4 = o::slice(k, {0}, {0}, {1});
    expect_same(c, o::index_put(want, {asarray<std::int64_t>({4})}, row4)); // row 4 written, 21 skipped
  }
}

TEST_CASE("bad files and bad inputs give ValueErrors") {
  TempDir dir;
  Net net;
  Tensor a = make({5, 53}, dtypes::f32);
  graph::CompiledGraph cg(trace_from(net(symbol_like(a))));
  std::string path = dir.file("net.hidet");
  cg.save(path);
  std::string good = read_all(path);

  expect_error([&] { graph::CompiledGraph::load(dir.file("missing.hidet")); }, {"cannot read", "missing.hidet"});
  write_all(dir.file("foreign"), "not a graph at all, just some text");
  expect_error([&] { graph::CompiledGraph::load(dir.file("foreign")); }, {"is not a model file saved by hidet"});
  write_all(dir.file("short"), good.substr(0, good.size() / 2));
  expect_error([&] { graph::CompiledGraph::load(dir.file("short")); }, {"truncated or corrupt"});
  std::string flipped = good;
  flipped[flipped.size() - 7] ^= 0x5a;
  write_all(dir.file("flipped"), flipped);
  expect_error([&] { graph::CompiledGraph::load(dir.file("flipped")); }, {"checksum does not match"});
  // Another version: the version string in the header, changed in place.
  std::string other = good;
  auto v = other.find(HIDET_VERSION_STRING);
  REQUIRE(v != std::string::npos);
  other[v] = '9';
  write_all(dir.file("version"), other);
  expect_error([&] { graph::CompiledGraph::load(dir.file("version")); },
               {"was saved by hidet 9", "compile and save (export) the model again"});
  // Another architecture: the target string after the version.
  std::string target = runtime::cuda_emulated() ? "emulator" : runtime::device_info(0).arch();
  std::string arch = good;
  auto t = arch.find(target, v);
  REQUIRE(t != std::string::npos);
  arch[t + target.size() - 1] = '#';
  write_all(dir.file("arch"), arch);
  expect_error([&] { graph::CompiledGraph::load(dir.file("arch")); }, {"holds kernels compiled for"});

  // Saving where no file can be made (under a regular file) throws and leaves nothing behind.
  CHECK_THROWS_AS(cg.save(path + "/sub/f"), Error);
  CHECK(read_all(path) == good);

  // Inputs of the wrong shape or dtype, then a good run: the loaded graph stays usable.
  graph::CompiledGraph loaded = graph::CompiledGraph::load(path);
  expect_error([&] { loaded.run({make({6, 53}, dtypes::f32)}); }, {"input"});
  expect_error([&] { loaded.run({make({5, 53}, dtypes::f16)}); }, {"dtype"});
  Tensor in = make({5, 53}, dtypes::f32);
  expect_same(loaded.run({in})[0], cg.run({in})[0]);
}

// The second half of the next test: run in a new process (see below) with HIDET_SAVED_GRAPH_DIR set.
TEST_CASE("child: load a saved graph in a new process" * doctest::skip()) {
  const char *d = std::getenv("HIDET_SAVED_GRAPH_DIR");
  REQUIRE(d);
  fs::path dir(d);
  std::ofstream result(dir / "child.txt");
  try {
    graph::CompiledGraph loaded = graph::CompiledGraph::load((dir / "net.hidet").string());
    std::string in = read_all((dir / "input.bin").string());
    std::vector<float> xs(in.size() / sizeof(float));
    std::memcpy(xs.data(), in.data(), in.size());
    Tensor x = asarray(xs, {5, 53}, "cuda");
    for (double v : loaded.run({x})[0].to_double_vector()) result << v << "\n";
  } catch (const Error &e) {
    result << "error: " << e.what() << "\n";
  }
}

TEST_CASE("a new process loads the file (on the emulator too: the file holds the kernels' IR)") {
  TempDir dir;
  Net net;
  Tensor a = make({5, 53}, dtypes::f32);
  graph::CompiledGraph cg(trace_from(net(symbol_like(a))));
  cg.save(dir.file("net.hidet"));
  Tensor in = make({5, 53}, dtypes::f32);
  std::vector<double> want = cg.run({in})[0].to_double_vector();
  std::vector<float> xs;
  for (double v : in.to_double_vector()) xs.push_back(float(v));
  write_all(dir.file("input.bin"), std::string(reinterpret_cast<const char *>(xs.data()), xs.size() * sizeof(float)));

  std::string cmd = str_cat("HIDET_SAVED_GRAPH_DIR='", dir.path.string(), "' '", fs::read_symlink("/proc/self/exe").string(),
                            "' --no-skip --test-case='child: *' > '", dir.file("child.log"), "' 2>&1");
  int rc = std::system(cmd.c_str());
  INFO("child log: " << read_all(dir.file("child.log")));
  REQUIRE(rc == 0);
  std::string out = read_all(dir.file("child.txt"));
  INFO("child result: " << out.substr(0, 400));
  REQUIRE(out.find("error: ") == std::string::npos);
  std::istringstream s(out);
  std::vector<double> got;
  for (double v; s >> v;) got.push_back(v);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}
