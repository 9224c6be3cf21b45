#include "tests/launcher/cluster/fake_docker.h"

#include <fstream>
#include <sstream>

#include "tests/test_util/files.h"

namespace ds::testing {
namespace {

CommandResult Ok(std::string out = "") { return {0, std::move(out), ""}; }
CommandResult Err(std::string err) { return {1, "", std::move(err)}; }

bool Has(const std::vector<std::string>& argv, const std::string& word) {
  for (const std::string& a : argv)
    if (a == word) return true;
  return false;
}

// The value after `flag` in argv ("" if none).
std::string After(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag) return argv[i + 1];
  return "";
}

}  // namespace

int FakeDocker::Count(const std::string& text) const {
  int n = 0;
  for (const std::string& c : commands) n += c.find(text) != std::string::npos;
  return n;
}

Result<CommandResult> FakeDocker::Capture(const std::vector<std::string>& argv, const std::string&) {
  const std::string line = CommandLine(argv);
  commands.push_back(line);
  if (!fail_on.empty() && line.find(fail_on) != std::string::npos) return Err("fake failure of " + fail_on);
  if (argv[0] == "docker") return Docker(argv);
  if (argv[0] == "docker-compose") return Compose(argv);
  if (argv[0] == "ldd") {
    return Ok("\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n"
              "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n");
  }
  if (argv[0] == "ssh-keygen") {
    const std::string key = After(argv, "-f");
    WriteFile(key, "PRIVATE KEY\n");
    WriteFile(key + ".pub", "ssh-ed25519 AAAAfake " + After(argv, "-C") + "\n");
    return Ok();
  }
  return CommandResult{127, "", "cannot run " + argv[0] + ": not found in PATH\n"};
}

Result<int> FakeDocker::Passthrough(const std::vector<std::string>& argv) {
  DS_ASSIGN_OR_RETURN(CommandResult r, Capture(argv, ""));
  return r.exit_code;
}

CommandResult FakeDocker::Docker(const std::vector<std::string>& a) {
  const std::string& verb = a[1];
  if (verb == "info") return Ok(swarm + (manager ? " true" : " false") + " 192.0.2.2\n");
  if (verb == "swarm" && a[2] == "init") {
    if (swarm == "active") return Err("This node is already part of a swarm.");
    swarm = "active", manager = true;
    networks.insert({"ingress", "docker_gwbridge"});
    overlays.insert("ingress");
    return Ok();
  }
  if (verb == "swarm" && a[2] == "leave") {
    swarm = "inactive", manager = false;
    for (const std::string& n : overlays) networks.erase(n);
    overlays.clear();
    return Ok();
  }
  if (verb == "swarm" && a[2] == "join-token") return Ok("SWMTKN-fake\n");
  std::set<std::string>* kind = verb == "network" ? &networks : verb == "volume" ? &volumes
                              : verb == "image" ? &images : nullptr;
  if (kind != nullptr && a[2] == "inspect") {
    const std::string& name = a.back();
    if (!kind->count(name)) return Err("Error: No such " + verb + ": " + name);
    return Ok(verb == "network" && overlays.count(name) ? "overlay true\n" : "bridge false\n");
  }
  if (kind != nullptr && a[2] == "create") {
    kind->insert(a.back());
    if (Has(a, "overlay")) overlays.insert(a.back());
    return Ok();
  }
  if (kind != nullptr && a[2] == "rm") {
    if (!kind->erase(a.back())) return Err("Error: No such " + verb + ": " + a.back());
    overlays.erase(a.back());
    return Ok();
  }
  if (verb == "network" && a[2] == "ls") {
    std::string out;
    for (const std::string& n : overlays) out += n + "\n";
    return Ok(out);
  }
  if (verb == "service") return Ok();
  if (verb == "images") {  // the cluster's images by label; the fake's ids are the tags
    std::string out;
    for (const std::string& i : images) out += i + "\n";
    return Ok(out);
  }
  if (verb == "build") {
    images.insert(After(a, "--tag"));
    return Ok();
  }
  if (verb == "inspect") {  // container states
    std::string out;
    for (size_t i = 4; i < a.size(); ++i) out += "/" + a[i] + (containers.count(a[i]) ? " running \n" : " exited \n");
    return Ok(out);
  }
  if (verb == "ps") {  // the cluster's containers by label
    std::string out;
    for (const std::string& c : containers) out += c + "\n";
    return Ok(out);
  }
  if (verb == "rm") {
    containers.erase(a.back());
    return Ok();
  }
  if (verb == "exec") return Ok("3 of 3 hosts ready\n");
  if (verb == "run") {
    if (!networks.count(After(a, "--network")) && !attachable_elsewhere.count(After(a, "--network")))
      return Err("network " + After(a, "--network") + " not found");
    containers.insert(After(a, "--name"));
    return Ok();
  }
  if (verb == "start") return containers.insert(a.back()), Ok();
  if (verb == "container" && a[2] == "inspect") return containers.count(a.back()) ? Ok() : Err("Error: No such container: " + a.back());
  return Err("fake docker: unknown command " + CommandLine(a));
}

// up: starts the services of nodes.yml (their container_name lines) and the
// controller unless services are named; down: removes them all.
CommandResult FakeDocker::Compose(const std::vector<std::string>& a) {
  const std::string project = After(a, "--project-name");
  if (Has(a, "down")) {
    containers.clear();
    return Ok();
  }
  if (!Has(a, "up")) return Err("fake docker-compose: unknown command");
  std::string nodes_yml;
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == "-f" && a[i + 1].find("nodes.yml") != std::string::npos) nodes_yml = ReadFile(a[i + 1]);
  std::istringstream lines(nodes_yml);
  for (std::string line; std::getline(lines, line);) {
    const std::string key = "    container_name: ";
    if (line.rfind(key, 0) == 0 && !wont_start.count(line.substr(key.size()))) containers.insert(line.substr(key.size()));
  }
  // Services named after `up` (not flags): only those, so no controller.
  bool named = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != "up") continue;
    for (size_t j = i + 1; j < a.size(); ++j) named = named || a[j].rfind("--", 0) != 0;
  }
  if (!named) containers.insert(project + "-controller");
  return Ok();
}

}  // namespace ds::testing
