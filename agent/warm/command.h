// The rules of warm spares (docs/usage.md "Warm spares") that need no process: which worker
// commands a spare can run, whether a spare started for one generation may
// take the next one's assignment, and whether the node has the memory for
// spares. Pure functions of their arguments; thread-safe.
//
// A spare is `<interpreter> [flags] -c <shim> ...` started with the current
// generation's environment, working directory and cores; whatever Python
// and the preloaded modules read while starting (PYTHONPATH, LD_LIBRARY_PATH,
// OMP_NUM_THREADS, the affinity mask OpenMP sizes itself by) is fixed then.
// So it may take an assignment only when that differs from its start in the
// variables dslaunch sets per generation (the env registry's worker contract
// but OMP_NUM_THREADS) and nothing else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "wire/frame_io.h"

namespace ds {

// A Python worker command cut in two: what starts the interpreter and what
// it runs.
struct PythonCommand {
  std::vector<std::string> interpreter;  // argv[0] and its flags (e.g. python3 -u)
  std::vector<std::string> target;       // script.py args... or -m module args...
};

// `argv` as a Python command: argv[0]'s file name is python, python3 or
// python3.N; then flags from -b -B -d -E -i -I -O -q -s -S -u -v -x (one or
// several in one word), -W/-X with their value; then a script or -m module.
// nullopt for anything else (-c, stdin, an unknown flag, another program).
std::optional<PythonCommand> SplitPythonCommand(const std::vector<std::string>& argv);

// What a spare started with and what an assignment asks for.
struct SpareStart {
  std::vector<std::string> interpreter;
  KeyValues env;
  std::string working_dir;
  std::vector<int> cpus;
};

// Whether dslaunch sets `name` anew each generation and nothing reads it
// at interpreter start (RANK, MASTER_PORT, DSLAUNCH_GENERATION, ...): a
// spare imports its preload without these, and may take an assignment
// that differs in them.
bool VariesPerGeneration(const std::string& name);

// Why a spare started as `started` cannot take `assigned`, in words for the
// agent's log ("PYTHONPATH differs", "the cores differ"); "" when it can.
std::string SpareMismatch(const SpareStart& started, const SpareStart& assigned);

// MemAvailable from /proc/meminfo's text, in KiB; nullopt without it.
std::optional<uint64_t> MemAvailableKiB(const std::string& meminfo);

// The documented threshold (docs/usage.md): spares start only while the node
// has kSpareHeadroomKiB plus kSpareBudgetKiB per spare available.
constexpr uint64_t kSpareHeadroomKiB = 2ull << 20;  // 2 GiB
constexpr uint64_t kSpareBudgetKiB = 1ull << 20;    // 1 GiB, above an `import torch` interpreter's RSS
// "" when `spares` spares fit in `available_kib`, else why not, in words.
std::string SparesDoNotFit(uint64_t available_kib, size_t spares);

}  // namespace ds
