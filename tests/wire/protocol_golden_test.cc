// The bytes of every message of wire/protocol.h, pinned (wire_format.md): one
// instance of each type with every field set to a value unlike its default is
// encoded and compared against the bytes the hand-written codecs produced
// before the field lists (issue 43); decoding those bytes and encoding again
// gives them back (so Decode reads every field); each shorter prefix is
// "truncated <Msg> payload" and one byte more is "<Msg> payload has 1
// trailing bytes", word for word. A change here is a wire change: the
// version in wire_format.h moves with it.
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "wire/hmac_auth.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

struct Golden {
  const char* name;
  Bytes encoded;                                        // today's Encode() of the sample
  std::function<Result<Bytes>(const Bytes&)> reencode;  // Decode, then Encode
  const char* hex;                                      // the pinned bytes
};

template <class M>
Golden Pin(const char* name, const M& m, const char* hex) {
  auto reencode = [](const Bytes& b) -> Result<Bytes> {
    DS_ASSIGN_OR_RETURN(M d, M::Decode(b));
    return d.Encode();
  };
  return Golden{name, m.Encode(), reencode, hex};
}

const SnapshotId kId{"6b0735a0c0ffee00", 9, 2, "0badf00d", "0123456789abcdef"};
const ShardEntry kEntry{123456789012, 7, kId, 4, 2, (uint64_t{1} << 40) + 5};

std::vector<Golden> Messages() {
  std::vector<Golden> g;
  g.push_back(Pin("Hello", Hello{wire::Role::kPeer, "node-3", "job-7", 3},
          "03000000066e6f64652d33000000056a6f622d3700000003"));
  g.push_back(Pin("Challenge", Challenge{{1, 2, 3, 0xff}},
          "00000004010203ff"));
  g.push_back(Pin("Auth", Auth{{0xaa, 0x00, 0xbb}},
          "00000003aa00bb"));
  g.push_back(Pin("AuthOk", AuthOk{{0x10, 0x20}},
          "000000021020"));
  g.push_back(Pin("Error", Error{6, "bad token for node 2"},
          "000000060000001462616420746f6b656e20666f72206e6f64652032"));
  g.push_back(Pin("Register", Register{2, "w2", "w2.cluster", "10.0.0.3", "eth1", {"10.0.0.3", "fd00::3"}, 64, 8,
                                       4242, "10.0.0.3:29555", {{"NCCL_DEBUG", "INFO"}, {"PATH", "/usr/bin"}}},
          "000000020000000277320000000a77322e636c75737465720000000831302e302e302e330000000465746831000000020000"
          "000831302e302e302e3300000007666430303a3a330000004000000008000010920000000e31302e302e302e333a32393535"
          "35000000020000000a4e43434c5f444542554700000004494e464f0000000450415448000000082f7573722f62696e"));
  g.push_back(Pin("Reserve", Reserve{5, 29500},
          "000000050000733c"));
  g.push_back(Pin("Reserved", Reserved{5, 29501, "port 29500 in use"},
          "000000050000733d00000011706f727420323935303020696e20757365"));
  Assign a;
  a.generation = 4;
  a.argv = {"python3", "-u", "train.py"};
  a.working_dir = "/work";
  a.master_addr = "10.0.0.1";
  a.stop_grace_ms = 7000;
  a.hang_timeout_ms = 90000;
  a.workers = {{4, 0, {{"RANK", "4"}}}, {5, 1, {{"RANK", "5"}, {"LOCAL_RANK", "1"}}}};
  a.local_rank_arg = 1;
  a.local_rank_at = 3;
  a.bind_cores = 1;
  a.core_list = "0-3,8-11";
  a.omp_from_binding = 1;
  a.pty_columns = 132;
  a.pty_rows = 43;
  a.preload = {"torch", "numpy.linalg"};
  g.push_back(Pin("Assign", a,
          "000000040000000300000007707974686f6e33000000022d7500000008747261696e2e7079000000052f776f726b00000008"
          "31302e302e302e3100001b5800015f90000000020000000400000000000000010000000452414e4b00000001340000000500"
          "000001000000020000000452414e4b00000001350000000a4c4f43414c5f52414e4b0000000131010100000008302d332c38"
          "2d31310100000003000000840000002b0000000200000005746f7263680000000c6e756d70792e6c696e616c67"));
  g.push_back(Pin("WorkerStarted", WorkerStarted{4, 5, 31337},
          "000000040000000500007a69"));
  g.push_back(Pin("Output", Output{4, 5, 2 | kOutputProgress, "epoch 1: 50%"},
          "0000000400000005820000000c65706f636820313a20353025"));
  g.push_back(Pin("WorkerExited", WorkerExited{4, 5, 31337, 3, 11, 1, 1, "ValueError: boom", "Traceback\n  x\n"},
          "000000040000000500007a69000000030000000b01010000001056616c75654572726f723a20626f6f6d0000000e54726163"
          "656261636b0a2020780a"));
  g.push_back(Pin("SnapshotSetup", SnapshotSetup{"/ckpt", 3, "peer-key", "6b0735a0"},
          "000000052f636b70740000000300000008706565722d6b6579000000083662303733356130"));
  g.push_back(Pin("SnapshotReady", SnapshotReady{"10.0.0.3:4000", "/dev/shm/job", "no space"},
          "0000000d31302e302e302e333a343030300000000c2f6465762f73686d2f6a6f62000000086e6f207370616365"));
  g.push_back(Pin("SnapshotHeld",
                  SnapshotHeld{{kEntry, ShardEntry{1, 0, SnapshotId{"a", 1, 0, "1", "fedcba9876543210"}, 0, 1, 0}},
                               {kEntry},
                               {1, 2, 3, 4, 5, 6, 7, 8}},
          "000000020000001cbe991a140000000700000010366230373335613063306666656530300000000902000000083062616466"
          "3030640000001030313233343536373839616263646566000000040200000100000000050000000000000001000000000000"
          "0001610000000100000000013100000010666564636261393837363534333231300000000001000000000000000000000001"
          "0000001cbe991a14000000070000001036623037333561306330666665653030000000090200000008306261646630306400"
          "0000103031323334353637383961626364656600000004020000010000000005000000000000000100000000000000020000"
          "00000000000300000000000000040000000000000005000000000000000600000000000000070000000000000008"));
  g.push_back(Pin("Fetch", Fetch{3, 400, kId, {{2, 5, "10.0.0.6:4000"}, {3, 1, "10.0.0.2:4000"}}},
          "0000000300000000000001900000001036623037333561306330666665653030000000090200000008306261646630306400"
          "000010303132333435363738396162636465660000000200000002000000050000000d31302e302e302e363a343030300000"
          "0003000000010000000d31302e302e302e323a34303030"));
  g.push_back(Pin("Fetched", Fetched{3, 400, "0123456789abcdef", uint64_t{1} << 33, 900, "shard 1: refused"},
          "0000000300000000000001900000001030313233343536373839616263646566000000020000000000000384000000107368"
          "61726420313a2072656675736564"));
  g.push_back(Pin("Replicate", Replicate{2, {{1, "a:1"}, {2, "b:2"}}, {"a:1", "b:2", "c:3"}},
          "00000002000000020000000100000003613a310000000200000003623a320000000300000003613a3100000003623a320000"
          "0003633a33"));
  g.push_back(Pin("SnapshotPlan",
                  SnapshotPlan{400, {{300, "0123456789abcdef"}, {-1, ""}}, {400, "fedcba9876543210"},
                               {{350, "00000000000000aa"}}},
          "000000000000019000000002000000000000012c0000001030313233343536373839616263646566ffffffffffffffff0000"
          "00000000000000000190000000106665646362613938373635343332313000000001000000000000015e0000001030303030"
          "303030303030303030306161"));
  g.push_back(Pin("ShardPut", ShardPut{kEntry, 0xdeadbeef, "{\"step\": 1}"},
          "0000001cbe991a14000000070000001036623037333561306330666665653030000000090200000008306261646630306400"
          "0000103031323334353637383961626364656600000004020000010000000005deadbeef0000000b7b2273746570223a2031"
          "7d"));
  g.push_back(Pin("ShardData", ShardData{{9, 8, 7, 6, 5}},
          "000000050908070605"));
  g.push_back(Pin("ShardGet", ShardGet{400, "0123456789abcdef", 2},
          "0000000000000190000000103031323334353637383961626364656600000002"));
  StartAgents s;
  s.agents = {{9, "n9", {"ssh", "-T", "n9"}, "token-of-n9"}, {4000000000u, "", {}, ""}};
  g.push_back(Pin("StartAgents", s,
          "0000000200000009000000026e390000000300000003737368000000022d54000000026e390000000b746f6b656e2d6f662d"
          "6e39ee6b2800000000000000000000000000"));
  g.push_back(Pin("AgentEnded", AgentEnded{7, 255, 9, "ssh: Connection refused"},
          "00000007000000ff00000009000000177373683a20436f6e6e656374696f6e2072656675736564"));
  Progress p;
  p.generation = 3;
  p.ranks = {{6, 1201, 250000, 180000, 256000, 230, 1200, 0.4123, 1000, 0.875},
             {7, -1, 0, -1, -1, -1, -1, 0, -1, std::numeric_limits<double>::infinity()}};
  g.push_back(Pin("Progress", p,
          "00000003000000020000000600000000000004b1000000000003d090000000000002bf20000000000003e800000000000000"
          "00e600000000000004b03fda631f8a0902de00000000000003e83fec00000000000000000007ffffffffffffffff00000000"
          "00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff0000000000000000ffffffffffff"
          "ffff7ff0000000000000"));
  g.push_back(Pin("Reshape",
                  Reshape{5, 400, kId, 6, {{3, 2}, {4, 3}}, {{2, 5, "10.0.0.6:4000"}}, 20000, "10.0.0.9:29400", "tok"},
          "0000000500000000000001900000001036623037333561306330666665653030000000090200000008306261646630306400"
          "0000103031323334353637383961626364656600000006000000020000000300000002000000040000000300000001000000"
          "02000000050000000d31302e302e302e363a3430303000004e200000000e31302e302e302e393a323934303000000003746f6b"));
  g.push_back(Pin("Reshaped", Reshaped{5, {{2, 1, ""}, {3, 0, "no shard"}}, "gather failed", 1234},
          "00000005000000020000000201000000000000000300000000086e6f2073686172640000000d676174686572206661696c65"
          "64000004d2"));
  g.push_back(Pin("WorkerHung", WorkerHung{5, 3, 61000},
          "00000005000000030000ee48"));
  g.push_back(Pin("DumpStacks", DumpStacks{5, 15000},
          "0000000500003a98"));
  g.push_back(Pin("Stacks", Stacks{5, {{0, 100, "gdb", "#0 main"}, {1, 101, "", "ptrace refused"}}},
          "0000000500000002000000000000006400000003676462000000072330206d61696e0000000100000065000000000000000e"
          "7074726163652072656675736564"));
  g.push_back(Pin("WorkerReshape", WorkerReshape{5, 2, 6, 400, "0123456789abcdef", "10.0.0.9:29400", "tok"},
          "00000005000000020000000600000000000001900000001030313233343536373839616263646566"
          "0000000e31302e302e302e393a323934303000000003746f6b"));
  g.push_back(Pin("WorkerReshaped", WorkerReshaped{5, 1, "ok", 777},
          "0000000501000000026f6b00000309"));
  g.push_back(Pin("Stop", Stop{8},
          "00000008"));
  g.push_back(Pin("Stopped", Stopped{8},
          "00000008"));
  g.push_back(Pin("Ping", Ping{uint64_t{1} << 63 | 5, 12345},
          "80000000000000050000000000003039"));
  g.push_back(Pin("Shutdown", Shutdown{-3},
          "fffffffd"));
  g.push_back(Pin("Fenced", Fenced{0x0102030405060708, 17, {0, 0, 0, 5}},
          "0102030405060708000000110000000400000005"));
  g.push_back(Pin("Resume", Resume{7, 1, 16, {{0, 100}, {1, 101}}},
          "0000000701000000000000001000000002000000000000006400000001" "00000065"));
  g.push_back(Pin("Coordinators", Coordinators{{"h:1", "g:22"}},
          "0000000200000003683a3100000004" "673a3232"));
  g.push_back(Pin("Attached", Attached{"a\nb", {"h:1"}},
          "00000003610a620000000100000003683a31"));
  g.push_back(Pin("AttachLine", AttachLine{3, "w1", 1, 2, "hi"},
          "000000030000000277310000000102000000026869"));
  g.push_back(Pin("AttachStatus", AttachStatus{"s"},
          "0000000173"));
  g.push_back(Pin("AttachEnd", AttachEnd{-3, "x"},
          "fffffffd0000000178"));
  g.push_back(Pin("Joined", Joined{7, 9},
          "0000000700000009"));
  g.push_back(Pin("StoreSet", StoreSet{"rdzv/1", {0, 1, 2}},
          "0000000672647a762f3100000003000102"));
  g.push_back(Pin("StoreGet", StoreGet{"rdzv/1", 30000},
          "0000000672647a762f3100007530"));
  g.push_back(Pin("StoreAdd", StoreAdd{"count", -2},
          "00000005636f756e74fffffffffffffffe"));
  g.push_back(Pin("StoreWait", StoreWait{{"a", "b"}, 5000},
          "000000020000000161000000016200001388"));
  g.push_back(Pin("StoreOk", StoreOk{},
          ""));
  g.push_back(Pin("StoreValue", StoreValue{{'v', 0}},
          "000000027600"));
  g.push_back(Pin("StoreInt", StoreInt{-9000000000},
          "fffffffde78ee600"));
  return g;
}

TEST_CASE("protocol: every message's bytes are the pinned ones", "[protocol][golden]") {
  for (const Golden& m : Messages()) {
    INFO(m.name);
    CHECK(HexEncode(m.encoded) == m.hex);
  }
}

TEST_CASE("protocol: every message decodes its pinned bytes into what encodes them again", "[protocol][golden]") {
  for (const Golden& m : Messages()) {
    INFO(m.name);
    Result<Bytes> again = m.reencode(m.encoded);
    REQUIRE(again.ok());
    CHECK(HexEncode(*again) == HexEncode(m.encoded));
  }
}

TEST_CASE("protocol: every message refuses each truncation and a trailing byte, word for word", "[protocol][golden]") {
  for (const Golden& m : Messages()) {
    INFO(m.name);
    for (size_t n = 0; n < m.encoded.size(); ++n) {
      Result<Bytes> cut = m.reencode(Bytes(m.encoded.begin(), m.encoded.begin() + static_cast<ptrdiff_t>(n)));
      REQUIRE_FALSE(cut.ok());
      CHECK(cut.status().message() == std::string("truncated ") + m.name + " payload");
    }
    Bytes longer = m.encoded;
    longer.push_back(0);
    Result<Bytes> more = m.reencode(longer);
    REQUIRE_FALSE(more.ok());
    CHECK(more.status().message() == std::string(m.name) + " payload has 1 trailing bytes");
  }
}

// Where a decoding check sits against the payload's end: a check that fails
// is the error even when the payload is also cut further on or too long, but
// not when the cut comes before what it checks; Output's stream is checked
// only once the payload matched exactly.
TEST_CASE("protocol: a decoding check's error comes where the check is", "[protocol][golden]") {
  auto cut = [](Bytes b, size_t less) { return Bytes(b.begin(), b.end() - static_cast<ptrdiff_t>(less)); };
  auto longer = [](Bytes b) {
    b.push_back(0);
    return b;
  };
  ShardEntry bad = kEntry;
  bad.id.run = "not-hex";
  const Bytes held = SnapshotHeld{{bad}, {kEntry}, {1, 2, 3, 4, 5, 6, 7, 8}}.Encode();
  CHECK(SnapshotHeld::Decode(cut(held, 1)).status().message() ==
        "SnapshotHeld payload: run id 'not-hex' is not 1 to 32 hex digits");
  CHECK(SnapshotHeld::Decode(cut(held, 8 * 8 + 1)).status().message() == "truncated SnapshotHeld payload");
  const Bytes fetch = Fetch{3, 400, bad.id, {{2, 5, "10.0.0.6:4000"}}}.Encode();
  CHECK(Fetch::Decode(cut(fetch, 1)).status().message() ==
        "Fetch payload: run id 'not-hex' is not 1 to 32 hex digits");
  CHECK(Fetch::Decode(Fetch{3, -1, bad.id, {}}.Encode()).ok());  // a fresh start's id is not looked at
  const Bytes reshape = Reshape{5, 400, bad.id, 6, {{3, 2}}, {}, 20000}.Encode();
  CHECK(Reshape::Decode(longer(reshape)).status().message() ==
        "Reshape payload: run id 'not-hex' is not 1 to 32 hex digits");
  const Bytes plan = SnapshotPlan{400, {{300, "../x"}}, {400, "fedcba9876543210"}, {}}.Encode();
  CHECK(SnapshotPlan::Decode(cut(plan, 1)).status().message() ==
        "SnapshotPlan payload: step 300 with set '../x' (expected 16 hex digits, or none for step -1)");
  CHECK(ShardPut::Decode(longer(ShardPut{bad, 1, "{}"}.Encode())).status().message() ==
        "ShardPut payload: run id 'not-hex' is not 1 to 32 hex digits");
  CHECK(ShardGet::Decode(longer(ShardGet{400, "nope", 2}.Encode())).status().message() ==
        "ShardGet payload: not a set digest");
  CHECK(ShardGet::Decode(cut(ShardGet{400, "nope", 2}.Encode(), 1)).status().message() ==
        "truncated ShardGet payload");
  const Bytes output = Output{4, 5, 7, "x"}.Encode();
  CHECK(Output::Decode(longer(output)).status().message() == "Output payload has 1 trailing bytes");
  CHECK(Output::Decode(cut(output, 1)).status().message() == "truncated Output payload");
  CHECK(Output::Decode(output).status().message() == "Output payload: stream 7 (expected 1 or 2, optionally | 0x80)");
}

}  // namespace
}  // namespace ds::msg
