// Which collectives the device engine runs over a communicator
// (runtime/device/device_comm.h ChooseDeviceComm), without a GPU (unit
// label): NCCL's own for an NCCL communicator at any world, the device alone
// at world 1, the host staging only where there are peers. Before issue 34
// item 8 every non-NCCL communicator was staged, so a single GPU copied each
// ZeRO collective down to the host and back.
#include "runtime/device/device_comm.h"

#include <catch2/catch.hpp>

namespace ds::rt::dev {
namespace {

TEST_CASE("device comm: world 1 without NCCL stays on the device, never staged", "[unit]") {
  CHECK(ChooseDeviceComm(false, 1) == DeviceCommKind::kSolo);
}

TEST_CASE("device comm: peers over a host communicator are staged, NCCL is NCCL at any world", "[unit]") {
  CHECK(ChooseDeviceComm(false, 2) == DeviceCommKind::kStaged);
  CHECK(ChooseDeviceComm(false, 5) == DeviceCommKind::kStaged);
  CHECK(ChooseDeviceComm(true, 1) == DeviceCommKind::kNccl);
  CHECK(ChooseDeviceComm(true, 8) == DeviceCommKind::kNccl);
}

}  // namespace
}  // namespace ds::rt::dev
