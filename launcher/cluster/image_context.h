// The build context of a cluster's image: docker/'s files plus dslaunch/,
// which holds bin/ (dslaunch, dsagent and dstrain, linked with the RPATH
// $ORIGIN/../lib: see CMakeLists.txt) and lib/ (dstrain's GPU plugin where
// it was built, and the shared libraries they load, found with ldd,
// except glibc's, which the base image has, and CUDA's and the driver's,
// which a CUDA base image and the NVIDIA container toolkit bring). So the
// image needs no package of ours from any archive, and any base with glibc
// 2.36 or newer works.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/command_runner.h"

namespace ds {

// The libraries `ldd` printed that the image must carry: "name => /path
// (0x...)" lines, minus the vdso, the dynamic loader, glibc's libraries and
// CUDA's/NVIDIA's. Absolute paths, each once, in ldd's order.
std::vector<std::string> LibrariesToBundle(const std::string& ldd_output);

// The folder with Dockerfile, entrypoint.sh, sshd_config and the compose
// files: DSLAUNCH_DOCKER_DIR, else the source tree's docker/.
Result<std::string> DockerFilesDir();

// The programs the image carries: dslaunch (this executable), dsagent and
// dstrain next to it (or in the build tree's agent/ and runtime/).
Result<std::vector<std::string>> ClusterBinaries();

// Replaces `context_dir` with a fresh build context (runs ldd).
Status MakeImageContext(CommandRunner& runner, const std::string& docker_dir,
                        const std::vector<std::string>& binaries, const std::string& context_dir);

}  // namespace ds
