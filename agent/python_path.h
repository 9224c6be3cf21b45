// The dslaunch Python package on a worker's path: the folder that holds
// dslaunch/ and dslaunch's sitecustomize.py, found beside this dsagent
// (installed: <prefix>/bin/dsagent -> <prefix>/lib/dslaunch/python; a build
// tree: build/agent/dsagent -> build/python, python/CMakeLists.txt), and
// appended to the worker's PYTHONPATH (the user's entries stay first, so a
// module of theirs of the same name wins). Pure but for the one lookup of
// /proc/self/exe; thread-safe.
#pragma once

#include <string>

namespace ds {

// The folder beside the program at `exe` (normally /proc/self/exe's target)
// that holds dslaunch/__init__.py, or "" when there is none (a dsagent
// copied alone to a node: its workers run without the package).
std::string DslaunchPythonDir(const std::string& exe);
// DslaunchPythonDir of this process, looked up once.
const std::string& OwnDslaunchPythonDir();

// `pythonpath` (the worker's PYTHONPATH; "" = unset) with `dir` appended,
// unless it is there already or `dir` is "".
std::string AppendPythonPath(const std::string& pythonpath, const std::string& dir);

}  // namespace ds
