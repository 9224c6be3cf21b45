// --rdzv-conf (launcher/join/rdzv_conf.h): torchrun's defaults, the keys
// dslaunch acts on, torchrun's other keys listed as ignored, and every bad
// form named as typed.
#include "launcher/join/rdzv_conf.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

std::string ErrorOf(const std::string& text) {
  auto c = ParseRendezvousConf("--rdzv_conf", text);
  REQUIRE_FALSE(c.ok());
  return c.status().message();
}

TEST_CASE("rdzv conf: torchrun's defaults, its keys and durations", "[unit]") {
  auto d = ParseRendezvousConf("--rdzv-conf", "");
  REQUIRE(d.ok());
  CHECK(d->join_timeout == 600.0);
  CHECK(d->last_call_timeout == 30.0);
  CHECK_FALSE(d->is_host.has_value());
  auto c = ParseRendezvousConf("--rdzv-conf", "join_timeout=20,last_call_timeout=500ms,is_host=False,read_timeout=60");
  REQUIRE(c.ok());
  CHECK(c->join_timeout == 20.0);
  CHECK(c->last_call_timeout == 0.5);
  CHECK(c->is_host == false);
  CHECK(c->ignored == std::vector<std::string>{"read_timeout"});
}

TEST_CASE("rdzv conf: bad forms are named as typed", "[unit]") {
  CHECK(ErrorOf("join_timeout") ==
        "--rdzv_conf: expected KEY=VALUE,... (join_timeout, last_call_timeout, is_host), got 'join_timeout'");
  CHECK(ErrorOf("join_timeout=soon") ==
        "--rdzv_conf 'join_timeout=soon': expected a duration between 1ms and 24h, such as 30 or 30s, got 'soon'");
  CHECK(ErrorOf("last_call_timeout=0") ==
        "--rdzv_conf 'last_call_timeout=0': expected a duration between 1ms and 24h, such as 30 or 30s, got '0'");
  CHECK(ErrorOf("is_host=maybe") == "--rdzv_conf 'is_host=maybe': expected true or false, got 'maybe'");
  CHECK(ErrorOf("join_timout=5") ==
        "--rdzv_conf: unknown key 'join_timout' (did you mean 'join_timeout'?) (dslaunch reads join_timeout, "
        "last_call_timeout and is_host)");
}

}  // namespace
}  // namespace ds
