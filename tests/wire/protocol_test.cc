// The messages issue 11 extended (wire/protocol.h): round trips with the
// new fields, values as data, and truncation anywhere in them.
#include "wire/protocol.h"

#include <catch2/catch.hpp>

namespace ds::msg {
namespace {

Assign SampleAssign() {
  Assign a;
  a.generation = 2;
  a.argv = {"python3", "-u", "train.py"};
  a.working_dir = "/work";
  a.master_addr = "10.0.0.1";
  a.workers = {{4, 0, {{"RANK", "4"}}}, {5, 1, {{"RANK", "5"}}}};
  a.local_rank_arg = 1;
  a.bind_cores = 1;
  a.core_list = "0-3,8-11";
  a.omp_from_binding = 1;
  a.local_rank_at = 3;
  a.pty_columns = 132;
  a.pty_rows = 43;
  return a;
}

TEST_CASE("protocol: Assign carries DeepSpeed's per-worker options and the pty size", "[protocol]") {
  auto m = Assign::Decode(SampleAssign().Encode());
  REQUIRE(m.ok());
  CHECK(m->local_rank_arg == 1);
  CHECK(m->bind_cores == 1);
  CHECK(m->core_list == "0-3,8-11");
  CHECK(m->omp_from_binding == 1);
  CHECK(m->local_rank_at == 3);
  CHECK(m->pty_columns == 132);
  CHECK(m->pty_rows == 43);
  REQUIRE(m->workers.size() == 2);
  CHECK(m->workers[1].local_rank == 1);
  Assign plain;
  auto p = Assign::Decode(plain.Encode());
  REQUIRE(p.ok());
  CHECK(p->local_rank_arg == 0);
  CHECK(p->bind_cores == 0);
  CHECK(p->core_list.empty());
  CHECK(p->local_rank_at == -1);
  CHECK(p->preload.empty());
}

TEST_CASE("protocol: Assign carries the warm spares' preload list", "[protocol]") {
  Assign a = SampleAssign();
  a.preload = {"torch", "numpy.linalg"};
  auto m = Assign::Decode(a.Encode());
  REQUIRE(m.ok());
  CHECK(m->preload == std::vector<std::string>{"torch", "numpy.linalg"});
  CHECK(m->local_rank_at == 3);
}

TEST_CASE("protocol: WorkerExited carries the worker's error message and trace byte for byte", "[protocol]") {
  WorkerExited e{3, 7, 1234, 1, 0, 0, 0};
  e.error_message = std::string("ValueError: \"boom\" $HOME\n\x01\xff", 29);
  e.error_trace = "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n";
  auto m = WorkerExited::Decode(e.Encode());
  REQUIRE(m.ok());
  CHECK(m->exit_code == 1);
  CHECK(m->error_message == e.error_message);
  CHECK(m->error_trace == e.error_trace);
  auto none = WorkerExited::Decode(WorkerExited{3, 7, 1234, 0, 9, 0, 0}.Encode());
  REQUIRE(none.ok());
  CHECK(none->signal == 9);
  CHECK(none->error_message.empty());
}

TEST_CASE("protocol: Output's stream is 1 or 2, optionally flagged as a progress update; nothing else", "[protocol]") {
  for (uint8_t stream : {1, 2, 0x81, 0x82}) {
    auto m = Output::Decode(Output{1, 3, stream, "\r-free text"}.Encode());
    REQUIRE(m.ok());
    CHECK(m->stream == stream);
  }
  for (uint8_t stream : {0, 3, 0x80, 0x83, 0x41, 0xff}) {
    auto m = Output::Decode(Output{1, 3, stream, "x"}.Encode());
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().message() ==
          "Output payload: stream " + std::to_string(stream) + " (expected 1 or 2, optionally | 0x80)");
  }
}

TEST_CASE("protocol: every truncation of the extended messages is refused, trailing bytes too", "[protocol]") {
  WorkerExited e{3, 7, 1234, 1, 0, 0, 0, "E: x", "trace"};
  auto cut = [](const Bytes& full, size_t n) { return Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(n)); };
  const Bytes exited = e.Encode(), assign = SampleAssign().Encode();
  for (size_t n = 0; n < exited.size(); ++n) CHECK_FALSE(WorkerExited::Decode(cut(exited, n)).ok());
  for (size_t n = 0; n < assign.size(); ++n) CHECK_FALSE(Assign::Decode(cut(assign, n)).ok());
  Bytes longer = e.Encode();
  longer.push_back(0);
  CHECK(WorkerExited::Decode(longer).status().message() == "WorkerExited payload has 1 trailing bytes");
  // An old-format WorkerExited (without the two strings) is truncated, not misread.
  Bytes old = PayloadWriter().U32(3).I32(7).I32(1234).I32(1).I32(0).U8(0).U8(0).Take();
  CHECK(WorkerExited::Decode(old).status().message() == "truncated WorkerExited payload");
}

}  // namespace
}  // namespace ds::msg
