#include "launcher/config/selection.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

Hostfile ThreeHosts() {
  auto r = ParseHostfile("w0 slots=4\nw1 slots=4\nw2 slots=2\n", "hf");
  REQUIRE(r.ok());
  return *r;
}

// "w0:0,1 w1:0,1,2,3" for compact assertions.
std::string Show(const std::vector<SelectedHost>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    out += (out.empty() ? "" : " ") + h.host.name + ":";
    for (size_t i = 0; i < h.slots.size(); ++i) out += (i ? "," : "") + std::to_string(h.slots[i]);
  }
  return out;
}

std::string Select(const SelectionOptions& o) {
  auto r = SelectHosts(ThreeHosts(), o);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return Show(*r);
}

std::string ErrorOf(const SelectionOptions& o) {
  auto r = SelectHosts(ThreeHosts(), o);
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

TEST_CASE("selection: everything by default, in hostfile order") {
  CHECK(Select({}) == "w0:0,1,2,3 w1:0,1,2,3 w2:0,1");
}

TEST_CASE("selection: --include as documented (DeepSpeed drops hosts here)") {
  CHECK(Select({.include = "w0"}) == "w0:0,1,2,3");
  CHECK(Select({.include = "w0@w1"}) == "w0:0,1,2,3 w1:0,1,2,3");
  CHECK(Select({.include = "w0:0,2@w1"}) == "w0:0,2 w1:0,1,2,3");
  CHECK(Select({.include = "w0@w1:0,2"}) == "w0:0,1,2,3 w1:0,2");
  CHECK(Select({.include = "w2@w0:3,1"}) == "w0:1,3 w2:0,1");  // hostfile order, slots ascending
  CHECK(Select({.include = "w0:1@w0"}) == "w0:0,1,2,3");        // the whole host wins
  CHECK(Select({.include = "w0:1@w0:2"}) == "w0:1,2");          // repeated host: slots merge
}

TEST_CASE("selection: --exclude") {
  CHECK(Select({.exclude = "w1"}) == "w0:0,1,2,3 w2:0,1");
  CHECK(Select({.exclude = "w0:0,2@w2"}) == "w0:1,3 w1:0,1,2,3");
  CHECK(Select({.exclude = "w2:0,1"}) == "w0:0,1,2,3 w1:0,1,2,3");  // all slots gone: host gone
}

TEST_CASE("selection: --num_nodes and --num_gpus") {
  CHECK(Select({.num_nodes = 2}) == "w0:0,1,2,3 w1:0,1,2,3");
  CHECK(Select({.num_gpus = 2}) == "w0:0,1 w1:0,1 w2:0,1");
  CHECK(Select({.exclude = "w0", .num_nodes = 1, .num_gpus = 1}) == "w1:0");
  CHECK(Select({.include = "w0:1,3@w1", .num_gpus = 2}) == "w0:1,3 w1:0,1");
  // With --include they narrow (DeepSpeed refuses the combination).
  CHECK(Select({.include = "w0@w1@w2", .num_nodes = 2}) == "w0:0,1,2,3 w1:0,1,2,3");
}

TEST_CASE("selection: errors") {
  CHECK(ErrorOf({.include = "w0", .exclude = "w1"}) ==
        "--include and --exclude cannot be used together; use one of them");
  CHECK(ErrorOf({.include = "w9"}) == "--include: unknown host 'w9' (did you mean 'w0'?); hosts in hf: w0, w1, w2");
  CHECK(ErrorOf({.exclude = "zzzzzz"}) == "--exclude: unknown host 'zzzzzz'; hosts in hf: w0, w1, w2");
  CHECK(ErrorOf({.include = "w2:2"}) == "--include: host 'w2' has 2 slots (0-1), got slot 2");
  CHECK(ErrorOf({.include = "w2:-1"}) == "--include: host 'w2' has 2 slots (0-1), got slot -1");
  CHECK(ErrorOf({.include = "w0:x"}) == "--include 'w0:x': expected a slot number, got 'x'");
  CHECK(ErrorOf({.include = "w0:1,"}) == "--include 'w0:1,': expected a slot number, got ''");
  CHECK(ErrorOf({.include = "w0:"}) == "--include 'w0:': expected slot numbers after 'w0:'");
  CHECK(ErrorOf({.include = "w0@@w1"}) == "--include 'w0@@w1': empty host between '@' separators");
  CHECK(ErrorOf({.exclude = "w0@w1@w2"}) == "--exclude 'w0@w1@w2' leaves no hosts");
  CHECK(ErrorOf({.num_nodes = 4}) == "--num_nodes 4: only 3 host(s) selected");
  CHECK(ErrorOf({.num_nodes = 0}) == "--num_nodes: expected a positive number, got 0");
  CHECK(ErrorOf({.num_gpus = 3}) == "--num_gpus 3: host 'w2' has only 2 selected slot(s)");
  CHECK(ErrorOf({.num_gpus = 0}) == "--num_gpus: expected a positive number, got 0");
}

TEST_CASE("selection: IPv6 hosts in brackets") {
  auto hf = ParseHostfile("[fe80::1] slots=2\n[fe80::2] slots=2\n", "hf");
  REQUIRE(hf.ok());
  auto r = SelectHosts(*hf, {.include = "[fe80::1]:1@[fe80::2]"});
  REQUIRE(r.ok());
  CHECK(Show(*r) == "fe80::1:1 fe80::2:0,1");
  auto bad = SelectHosts(*hf, {.include = "[fe80::1"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "--include '[fe80::1': missing ']' in '[fe80::1'");
}

}  // namespace
}  // namespace ds
