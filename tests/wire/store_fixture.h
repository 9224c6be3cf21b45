// A real coordinator store (a Coordinator listening on loopback, its io on a
// background thread) for tests of what talks to it: the store client, and
// dstrain moving to another store when its coordinator is taken over.
// Destroyed, it closes every connection, as a lost coordinator's would be.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "launcher/coordinator/coordinator.h"
#include "wire/hmac_auth.h"

namespace ds::testing {

struct StoreFixture {
  explicit StoreFixture(const std::string& job_id = "job1", const std::string& secret = "s3cret") {
    CoordinatorOptions o;
    o.job_id = job_id;
    o.secret = secret;
    coord = std::make_unique<Coordinator>(io, plan, o, record);
    REQUIRE(coord->Listen().ok());
    addr = coord->address();
    token = StoreToken(secret, job_id, 0);  // generation 0: no job runs here
    thread = std::thread([this] { io.run(); });
  }
  ~StoreFixture() {
    io.stop();
    thread.join();
  }
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  LaunchPlan plan;
  JobRecord record;
  std::unique_ptr<Coordinator> coord;
  std::string addr;
  std::string token;
  std::thread thread;
};

}  // namespace ds::testing
