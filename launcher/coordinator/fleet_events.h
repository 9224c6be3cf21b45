// FleetEvents: what the coordinator tells the owner of the agents' processes
// (AgentFleet, launcher/fleet/) about them. It is the only way anything flows
// from the coordinator up to the fleet; the fleet calls the Coordinator
// directly (enroll, abort, start agents), so the two never hold callbacks
// into each other. The coordinator is given it at Start() and calls it on
// its io thread only; implementations must not block (the coordinator's
// thread never waits on a peer).
#pragma once

#include "wire/protocol.h"

namespace ds {

class FleetEvents {
 public:
  virtual ~FleetEvents() = default;
  // `node`'s agent registered: the first time, or a new agent rejoining.
  virtual void OnAgentRegistered(int node) = 0;
  // `node`'s registered agent was lost (its link closed, it fell silent, or
  // it did not confirm a stop): the fleet may start a new one there.
  virtual void OnAgentLost(int node) = 0;
  // `node`'s link closed while its coordinator did not lead (coordinator
  // failover): not lost yet, the agent may come back to this coordinator
  // once it leads again, with the key it holds.
  virtual void OnAgentAway(int /*node*/) {}
  // Agent `parent` reports that the command starting another node's agent
  // ended (the launch tree).
  virtual void OnAgentEnded(int parent, const msg::AgentEnded& ended) = 0;
};

// For a coordinator whose agents nobody starts or takes back (dssim's
// simulated agents, the listener's tests).
class NoFleetEvents final : public FleetEvents {
 public:
  void OnAgentRegistered(int) override {}
  void OnAgentLost(int) override {}
  void OnAgentEnded(int, const msg::AgentEnded&) override {}
};

}  // namespace ds
