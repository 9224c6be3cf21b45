#!/usr/bin/env python3
"""The library graph is the architecture (docs/architecture.md).

Configures the project into a scratch directory with `cmake --graphviz`,
reads the edges between the project's own libraries and executables, and
fails when (1) the graph has a cycle, (2) a target links one of ours that the
table below does not allow (a layer reaching up or sideways), or (3) a
target of the table no longer exists.
Usage: library_graph_test.py SOURCE_DIR SCRATCH_DIR
"""
import os
import re
import shutil
import subprocess
import sys

# target -> the project targets it may link directly. Keep in step with
# docs/architecture.md.
ALLOWED = {
    "dscommon": set(),
    "dswire": {"dscommon"},
    "dsckptformat": {"dscommon"},
    # launcher/
    # dsfailover: coordinator_spec checks coordinator.etcd with the etcd client's own endpoint parser
    "dsconfig": {"dscommon", "dstrain_config", "dsfailover"},
    "dsreport": {"dscommon"},
    "dscoordinator": {"dsconfig", "dsreport", "dswire", "dscommon"},
    # launcher/failover/: the etcd client, the per-job CA, the embedded etcd member, the leader election.
    # Only dscommon (Status, Dir, subprocess, clock, log): the coordinator will use it, it never reaches up; Boost,
    # OpenSSL and nlohmann_json are external
    "dsfailover": {"dscommon"},
    "dsspawn": {"dscommon"},
    "dsspawn_ssh": {"dsspawn", "dsconfig", "dscommon"},
    "dsspawn_slurm": {"dsspawn", "dsconfig", "dscommon"},
    "dscluster": {"dscommon"},
    "dsfleet": {"dscoordinator", "dsspawn", "dsreport", "dswire", "dscommon"},
    # launcher/join/: the per-node / join form (its PerNodeLaunch and keys, who hosts, the join client, the loopback
    # secret, node 0's spawner); the command line's side is launcher/cmd/per_node, the coordinator's join_order
    "dsjoin": {"dsspawn", "dswire", "dscommon"},
    "dscmd": {"dsjoin", "dsfleet", "dscluster", "dscoordinator", "dsfailover", "dsspawn_ssh", "dsspawn_slurm", "dsspawn", "dsreport", "dsconfig",
              "dswire", "dscommon"},
    "dslaunch": {"dscmd", "dsagent", "dstrain", "dstrain_cuda"},  # the last three: built with it, started or loaded by its workers
    # agent/
    "dsagent_control": {"dswire", "dscommon"},  # the logic alone: no socket, process or file (CONTROL_* below)
    "dsagent_workers": {"dswire", "dscommon"},
    "dsagent_warm": {"dsagent_workers", "dswire", "dscommon"},
    "dsagent_relay": {"dswire", "dscommon"},
    "dsagent_snapshots": {"dsagent_control", "dsckptformat", "dswire", "dscommon"},
    "dsagent_stacks": {"dsagent_control", "dswire", "dscommon"},
    "dsagent_tree": {"dsagent_control", "dsagent_workers", "dswire", "dscommon"},
    "dsagent_lib": {"dsagent_control", "dsagent_workers", "dsagent_warm", "dsagent_relay", "dsagent_snapshots",
                    "dsagent_stacks", "dsagent_tree", "dsckptformat", "dswire", "dscommon"},  # the shell
    "dsagent": {"dsagent_lib"},
    # runtime/
    "dsnumeric": {"dscommon"},
    "dstrain_config": {"dscommon"},
    "dsmodel": {"dstrain_config", "dsnumeric", "dscommon"},
    "dscomm": {"dsnumeric", "dswire", "dscommon"},
    "dstrain_engine": {"dscomm", "dsmodel", "dstrain_config", "dsnumeric", "dscommon"},
    "dstrain_checkpoint": {"dstrain_engine", "dsckptformat", "dswire", "dscommon"},
    "dstrain_lib": {"dstrain_checkpoint", "dstrain_engine", "dscomm", "dsmodel", "dstrain_config", "dsnumeric",
                    "dswire", "dscommon"},
    "dstrain_reshape": {"dstrain_lib", "dscomm", "dswire", "dscommon"},
    "dstrain": {"dstrain_reshape", "dstrain_lib"},
    # runtime/device/ (CUDA builds only): object files, the plugin dstrain
    # loads (resolving the rest against dstrain), a benchmark tool
    "dsdevice": set(),
    "dstrain_cuda": {"dsdevice", "dstrain"},
    "gpu_gemm_floor": {"dsdevice", "dstrain_lib"},
    # sim/: the real agent logic (AgentControl) on simulated connections against the real coordinator (a tool, not shipped)
    # dsagent_lib: the real AgentControl; dscmd: `dssim --etcd` leads the job as dslaunch's run does (job_leader.h)
    "dssim_lib": {"dsagent_lib", "dscoordinator", "dscmd", "dsconfig", "dswire", "dscommon"},
    "dssim": {"dssim_lib"},
}

# The agent must never depend on the trainer, not even through a header-only
# include (the CMake graph cannot see those): no target of the agent reaches a
# trainer library, and no file in these folders includes one of those folders.
AGENT_TARGETS = {"dsagent", "dsagent_lib", "dsagent_control", "dsagent_workers", "dsagent_warm", "dsagent_relay",
                 "dsagent_snapshots", "dsagent_stacks", "dsagent_tree"}
TRAINER_TARGETS = {"dstrain", "dstrain_lib", "dstrain_engine", "dstrain_checkpoint", "dstrain_reshape", "dscomm", "dsmodel", "dstrain_config", "dsnumeric", "dsdevice",
                   "dstrain_cuda"}
NO_INCLUDE = {"agent": "runtime/"}
# AgentControl is the agent's logic alone (docs/architecture.md): agent/control/
# includes no header that opens a socket, starts a process or touches a file,
# nor another folder of the agent, and calls none of those functions (the
# tree writes system calls as ::name); its
# frames, workers and time come through its seams (control/seams.h).
CONTROL_FOLDER = os.path.join("agent", "control")
CONTROL_INCLUDES = re.compile(r'#\s*include\s+[<"](sys/socket\.h|sys/un\.h|netinet/|arpa/|netdb\.h|poll\.h|sys/epoll\.h|'
                              r'unistd\.h|fcntl\.h|sys/wait\.h|spawn\.h|sys/stat\.h|dirent\.h|fstream|thread|'
                              r'boost/asio|common/asio\.h|common/subprocess\.h|common/files\.h|agent/(?!control/))')
CONTROL_CALLS = re.compile(r'(?<![\w.>:])::(socket|connect|accept4?|bind|fork|vfork|exec[lv]p?e?|posix_spawnp?|open|openat|'
                           r'read|write|poll|kill|killpg|waitpid|pipe2?)\s*\(')


def control_io(source):
    found = []
    for path, n, line in source_lines(source, CONTROL_FOLDER):
        code = line.split("//")[0]
        if CONTROL_INCLUDES.search(code) or (not code.lstrip().startswith("#") and CONTROL_CALLS.search(code)):
            found.append(f"{path}:{n}: AgentControl does I/O ({line.strip()}); do it behind a seam (agent/control/seams.h)")
    return found


# common/env_registry.cc is the only file that reads the environment
# (common/env_registry.h): every variable is declared there with its help.
SOURCE_FOLDERS = ["common", "wire", "checkpoint_format", "launcher", "agent", "runtime", "sim"]
ENV_READER = os.path.join("common", "env_registry.cc")

# Targets that exist only in some builds (the GPU path: cmake/cuda.cmake).
OPTIONAL = {"dsdevice", "dstrain_cuda", "gpu_gemm_floor"}


def read_graph(dot_path):
    """Returns ({node id: target name}, [(from id, to id)])."""
    names, edges = {}, []
    with open(dot_path) as f:
        for line in f:
            m = re.match(r'\s*"(node\d+)"\s*\[\s*label\s*=\s*"([^"]+)"', line)
            if m:
                names[m.group(1)] = m.group(2)
                continue
            m = re.match(r'\s*"(node\d+)"\s*->\s*"(node\d+)"', line)
            if m:
                edges.append((m.group(1), m.group(2)))
    return names, edges


def find_cycle(graph):
    state = {}  # 1 = on the stack, 2 = done

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path + [node, nxt]
            if nxt not in state:
                found = visit(nxt, path + [node])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def source_lines(source, folder):
    """(relative path, line number, line) of every C++ source in `folder`."""
    for root, _, files in os.walk(os.path.join(source, folder)):
        for name in sorted(files):
            if not name.endswith((".cc", ".h", ".cu")):
                continue
            path = os.path.join(root, name)
            with open(path, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    yield os.path.relpath(path, source), n, line


def raw_getenv_calls(source):
    return [f"{path}:{n} calls getenv; read the environment through common/env_registry.h"
            for folder in SOURCE_FOLDERS for path, n, line in source_lines(source, folder)
            if path != ENV_READER and re.search(r"\bgetenv\s*\(", line.split("//")[0])]


def forbidden_includes(source):
    """'file:line includes X' for every include NO_INCLUDE forbids."""
    found = []
    for folder, banned in NO_INCLUDE.items():
        for path, n, line in source_lines(source, folder):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m and m.group(1).startswith(banned):
                found.append(f"{path}:{n} includes {m.group(1)}")
    return found


def main():
    source, scratch = sys.argv[1], sys.argv[2]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    dot = os.path.join(scratch, "graph.dot")
    subprocess.run(["cmake", "-S", source, "-B", scratch, "-G", "Ninja", "-DDSLAUNCH_BUILD_TESTS=OFF",
                    "--graphviz=" + dot], check=True, stdout=subprocess.DEVNULL)
    names, edges = read_graph(dot)
    graph = {}
    for a, b in edges:
        src, dst = names[a], names[b]
        if src in ALLOWED and dst in ALLOWED:
            graph.setdefault(src, set()).add(dst)
    problems = []
    missing = sorted(set(ALLOWED) - OPTIONAL - set(names.values()))
    if missing:
        problems.append("targets in the table but not in the build: " + ", ".join(missing))
    cycle = find_cycle(graph)
    if cycle:
        problems.append("cycle: " + " -> ".join(cycle))
    for src in sorted(graph):
        for dst in sorted(graph[src] - ALLOWED[src]):
            problems.append(f"{src} links {dst}, which its layer may not use")
    for src in sorted(AGENT_TARGETS & set(graph)):
        for dst in sorted(reachable(graph, src) & TRAINER_TARGETS):
            problems.append(f"{src} reaches the trainer's {dst}: the agent must not depend on the trainer")
    problems += [f"{inc}: the agent must not depend on the trainer" for inc in forbidden_includes(source)]
    problems += raw_getenv_calls(source)
    problems += control_io(source)
    for p in problems:
        print("library graph: " + p)
    if not problems:
        print(f"library graph: {len(graph)} libraries, {sum(len(v) for v in graph.values())} edges, "
              "no cycle, every edge allowed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
