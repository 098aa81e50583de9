// Emulator checks: one kernel per kind of bug, each failing with an EmulatorError whose message
// names the kernel, the tensor, the index and shape, the block and thread and the test's own line;
// and a launch after a failed launch works.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "hidet/backend/emulator/program.hpp"
#include "test_emulator_kernels.hpp"

using namespace emu_test;
using hidet::backend::Dim3;
using hidet::backend::KernelArg;
using hidet::backend::emu::Program;

namespace {

KernelArg ptr(void *p) { return KernelArg::pointer(p); }

/// Launches `f` (one block of `threads`) and returns the EmulatorError message ("" if none).
std::string launch_error(const Function &f, std::vector<KernelArg> args, int threads,
                         std::size_t dyn = 0) {
  Program p(make_module({f}));
  try {
    p.launch(f->name, args, Dim3{}, Dim3{std::uint32_t(threads), 1, 1}, dyn);
  } catch (const hidet::EmulatorError &e) {
    return e.what();
  }
  return "";
}

/// Sets an environment variable for the scope.
struct EnvScope {
  const char *name;
  EnvScope(const char *n, const char *v) : name(n) { setenv(n, v, 1); }
  ~EnvScope() { unsetenv(name); }
};

const char *kFile = "test_emulator_checks.cpp:";

} // namespace

TEST_CASE("emulator check: out-of-bounds global read names tensor, index, shape, thread, line") {
  Var a = tensor(dtypes::f32, {int32(10)}, "A"), o = tensor(dtypes::f32, {int32(16)}, "out");
  Var t = scalar(dtypes::i32, "t");
  Function f = kernel("oob_global", {a, o}, {let(t, tid_x()), store(o, {t}, at(a, {t}))});
  std::vector<float> av(10), ov(16);
  std::string m = launch_error(f, {ptr(av.data()), ptr(ov.data())}, 16);
  INFO(m);
  CHECK(m.find("kernel 'oob_global'") != std::string::npos);
  CHECK(m.find("out-of-bounds read of global tensor 'A'") != std::string::npos);
  CHECK(m.find("index (10) is outside its shape (10)") != std::string::npos);
  CHECK(m.find("block (0, 0, 0), thread (10, 0, 0)") != std::string::npos);
  CHECK(m.find(kFile) != std::string::npos);
}

TEST_CASE("emulator check: out-of-bounds shared write") {
  Var s = tensor(dtypes::i32, {int32(4), int32(8)}, "tile", Scope::Shared);
  Var t = scalar(dtypes::i32, "t");
  Function f = kernel("oob_shared", {}, {decl(s), let(t, tid_x()), store(s, {X(t) / 8, X(t) % 8}, t)});
  std::string m = launch_error(f, {}, 40);
  INFO(m);
  CHECK(m.find("out-of-bounds write of shared tensor 'tile'") != std::string::npos);
  CHECK(m.find("index (4, 0) is outside its shape (4, 8)") != std::string::npos);
  CHECK(m.find("thread (32, 0, 0)") != std::string::npos);
  CHECK(m.find(kFile) != std::string::npos);
}

TEST_CASE("emulator check: out-of-bounds register access") {
  Var r = tensor(dtypes::f32, {int32(4)}, "regs", Scope::Register);
  Var i = scalar(dtypes::i32, "i");
  Function f = kernel("oob_register", {}, {decl(r), loop(i, 0, 5, store(r, {i}, f32(1)))});
  std::string m = launch_error(f, {}, 8);
  INFO(m);
  CHECK(m.find("out-of-bounds write of register tensor 'regs'") != std::string::npos);
  CHECK(m.find("index (4) is outside its shape (4)") != std::string::npos);
  CHECK(m.find(kFile) != std::string::npos);
}

TEST_CASE("emulator check: pointer access outside every allocation") {
  Var a = tensor(dtypes::f32, {int32(8)}, "A"), o = tensor(dtypes::f32, {int32(8)}, "out");
  Var t = scalar(dtypes::i32, "t");
  Expr p = BinaryNode::make(BinaryOp::Add, AddressNode::make(at(a, {int32(0)})), X(t) * 2);
  Function f = kernel("oob_pointer", {a, o}, {let(t, tid_x()), store(o, {t}, X(DerefNode::make(p, here())))});
  std::vector<float> storage(64); // A at [0, 8), out at [32, 40): A + 8 is in no allocation
  std::string m = launch_error(f, {ptr(storage.data()), ptr(storage.data() + 32)}, 8);
  INFO(m);
  CHECK(m.find("invalid read through a pointer") != std::string::npos);
  CHECK(m.find("is not inside any live allocation") != std::string::npos);
  CHECK(m.find("thread (4, 0, 0)") != std::string::npos);
}

TEST_CASE("emulator check: barrier reached by only some threads") {
  Var t = scalar(dtypes::i32, "t");
  Function f = kernel("divergent_barrier", {}, {let(t, tid_x()), when(X(t) < 16, barrier())});
  std::string m = launch_error(f, {}, 64);
  INFO(m);
  CHECK(m.find("kernel 'divergent_barrier'") != std::string::npos);
  CHECK(m.find("barrier (syncthreads) reached by only some threads of the block") != std::string::npos);
  CHECK(m.find("16 of 64 live threads arrived") != std::string::npos);
  CHECK(m.find("48 missed [(16, 0, 0)") != std::string::npos);
  CHECK(m.find(kFile) != std::string::npos);
}

TEST_CASE("emulator check: a barrier after an early return of some threads is fine") {
  Var t = scalar(dtypes::i32, "t");
  Function f = kernel("exit_then_barrier", {},
                      {let(t, tid_x()), when(X(t) >= 16, ReturnStmtNode::make()), barrier()});
  CHECK(launch_error(f, {}, 64) == "");
}

TEST_CASE("emulator check: shared-memory races (HIDET_EMULATOR_RACECHECK=1)") {
  EnvScope env("HIDET_EMULATOR_RACECHECK", "1");
  Var s = tensor(dtypes::i32, {int32(32)}, "buf", Scope::Shared);
  Var o = tensor(dtypes::i32, {int32(32)}, "out");
  Var t = scalar(dtypes::i32, "t");
  SUBCASE("write-write on one address") {
    Function f = kernel("race_ww", {}, {decl(s), store(s, {int32(0)}, tid_x())});
    std::string m = launch_error(f, {}, 32);
    INFO(m);
    CHECK(m.find("shared-memory race on 'buf'") != std::string::npos);
    CHECK(m.find("thread (1, 0, 0)") != std::string::npos);
    CHECK(m.find("thread (0, 0, 0) wrote it since the last barrier") != std::string::npos);
    CHECK(m.find(kFile) != std::string::npos);
  }
  SUBCASE("read of a neighbour's element without a barrier (same statement)") {
    std::vector<std::int32_t> ov(32);
    Function f = kernel("race_rw", {o},
                        {decl(s), let(t, tid_x()), store(s, {t}, t),
                         store(s, {t}, at(s, {(X(t) + 1) % 32}))});
    std::string m = launch_error(f, {ptr(ov.data())}, 32);
    INFO(m);
    CHECK(m.find("shared-memory race on 'buf'") != std::string::npos);
  }
  SUBCASE("the same exchange with a barrier between is clean") {
    std::vector<std::int32_t> ov(32);
    Var v = scalar(dtypes::i32, "v");
    Function f = kernel("no_race", {o},
                        {decl(s), let(t, tid_x()), store(s, {t}, t), barrier(),
                         let(v, at(s, {(X(t) + 1) % 32})), barrier(), store(s, {t}, v),
                         store(o, {t}, at(s, {t}))});
    CHECK(launch_error(f, {ptr(ov.data())}, 32) == "");
    CHECK(ov[31] == 0);
    CHECK(ov[3] == 4);
  }
  SUBCASE("read of shared memory nothing wrote") {
    std::vector<std::int32_t> ov(32);
    Function f = kernel("uninit", {o}, {decl(s), let(t, tid_x()), store(o, {t}, at(s, {t}))});
    std::string m = launch_error(f, {ptr(ov.data())}, 32);
    INFO(m);
    CHECK(m.find("read of shared memory 'buf'") != std::string::npos);
    CHECK(m.find("that nothing wrote since the block started") != std::string::npos);
    CHECK(m.find("thread (0, 0, 0)") != std::string::npos);
  }
}

TEST_CASE("emulator check: step limit stops an endless loop") {
  EnvScope env("HIDET_EMULATOR_MAX_STEPS", "100000");
  Var x = scalar(dtypes::i32, "x");
  Function f = kernel("forever", {}, {let(x, 0), WhileStmtNode::make(boolean(true), set(x, X(x) + 1), here())});
  std::string m = launch_error(f, {}, 32);
  INFO(m);
  CHECK(m.find("kernel 'forever'") != std::string::npos);
  CHECK(m.find("step limit of 100000") != std::string::npos);
  CHECK(m.find("HIDET_EMULATOR_MAX_STEPS") != std::string::npos);
}

TEST_CASE("emulator check: integer division by zero") {
  Var o = tensor(dtypes::i32, {int32(8)}, "out");
  Var t = scalar(dtypes::i32, "t");
  Function f = kernel("divzero", {o}, {let(t, tid_x()), store(o, {t}, X(100) / (X(t) - 3))});
  std::vector<std::int32_t> ov(8);
  std::string m = launch_error(f, {ptr(ov.data())}, 8);
  INFO(m);
  CHECK(m.find("integer division by zero: 100 / 0 (dtype i32)") != std::string::npos);
  CHECK(m.find("thread (3, 0, 0)") != std::string::npos);
  CHECK(m.find(kFile) != std::string::npos);
}

TEST_CASE("emulator check: inline PTX is reported as unsupported") {
  Stmt asm_stmt = AsmStmtNode::make("mov.u32 %0, %laneid;", {}, {}, true, true, here());
  Function f = kernel("inline_asm", {}, {asm_stmt});
  std::string m = launch_error(f, {}, 32);
  INFO(m);
  CHECK(m.find("kernel 'inline_asm'") != std::string::npos);
  CHECK(m.find("inline PTX (asm \"mov.u32 %0, %laneid;\") cannot be emulated; run this kernel on a GPU") !=
        std::string::npos);
  CHECK(m.find(kFile) != std::string::npos);
}

TEST_CASE("emulator check: the program stays usable after a failed launch") {
  Var a = tensor(dtypes::f32, {int32(10)}, "A"), o = tensor(dtypes::f32, {int32(16)}, "out");
  Var t = scalar(dtypes::i32, "t");
  Function bad = kernel("bad", {a, o}, {let(t, tid_x()), store(o, {t}, at(a, {t}))});
  Program p(make_module({bad, naive_matmul()}));
  std::vector<float> av(10), ov(16);
  CHECK_THROWS_AS(p.launch("bad", {ptr(av.data()), ptr(ov.data())}, Dim3{}, Dim3{16, 1, 1}, 0),
                  hidet::EmulatorError);
  const int n = 20;
  std::vector<float> A(n * n, 1.0f), B(n * n, 3.0f), C(n * n, 0.0f);
  auto i32 = [](int v) { return KernelArg::integer(dtypes::i32, v); };
  p.launch("matmul", {ptr(A.data()), ptr(B.data()), ptr(C.data()), i32(n), i32(n), i32(n)},
           Dim3{1, 3, 1}, Dim3{32, 8, 1}, 0);
  for (float c : C) REQUIRE(c == 3.0f * n);
  // the failing kernel fails the same way again, and succeeds with a valid launch
  CHECK_THROWS_AS(p.launch("bad", {ptr(av.data()), ptr(ov.data())}, Dim3{}, Dim3{16, 1, 1}, 0),
                  hidet::EmulatorError);
  CHECK_NOTHROW(p.launch("bad", {ptr(av.data()), ptr(ov.data())}, Dim3{}, Dim3{10, 1, 1}, 0));
}

TEST_CASE("emulator check: bad launch arguments are ValueErrors") {
  Program p(make_module({naive_matmul()}));
  CHECK_THROWS_AS(p.launch("nope", {}, Dim3{}, Dim3{}, 0), hidet::ValueError);
  CHECK_THROWS_AS(p.launch("matmul", {}, Dim3{}, Dim3{}, 0), hidet::ValueError);
}
