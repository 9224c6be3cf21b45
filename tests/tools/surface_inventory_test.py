#!/usr/bin/env python3
"""Every surface declares itself (docs/security.md "Surface inventory").

Scans the sources for the calls that open a surface -- a listening socket
(listen), a file or directory created (create), a program executed (exec), a
file read as configuration or input (config) -- and fails when a file opens a
kind of surface that no row of the inventory lists for that file, or when a
row names a file that no longer exists or no longer opens that kind. A new
listener or file path then cannot land without its row (threat, guarantee,
the test that proves it).
Usage: surface_inventory_test.py SOURCE_DIR
"""
import os
import re
import sys

FOLDERS = ["common", "wire", "checkpoint_format", "agent", "launcher", "runtime", "sim", "python"]
SOURCES = (".cc", ".h", ".cu", ".py")
KINDS = {
    "listen": re.compile(r"::listen\s*\(|\bacceptor\b|::bind\s*\(|\baccept4?\s*\(|"
                         r"\bTCPStore\s*\(|\bcreate_server\s*\("),  # the last two: python/
    "create": re.compile(r"O_CREAT|\bofstream\b|\bfopen\s*\([^)]*\"[wa]|\bmkdir(at)?\s*\(|\bmkdtemp\s*\(|"
                         r"\bmkfifo\s*\(|\bWriteFileDurably\w*\s*\(|\bCopyFileDurably\w*\s*\(|"
                         r"\bReplaceOwnFile\s*\(|\bcreate_director(y|ies)\s*\("),
    "exec": re.compile(r"\bexecv\w*\s*\(|\bexecl\w*\s*\(|\bposix_spawnp?\s*\(|\bpopen\s*\("),
    "config": re.compile(r"\bReadTextFile\s*\(|\bReadTrustedTextFile\s*\(|\bReadPrivateLine\s*\("),
}
ROW_FILE = re.compile(r"`([\w./-]+\.(?:cc|h|cu|py))` \(([a-z, ]+)\)")


def scan(root):
    """relative path -> the kinds of surface the file opens (comments and strings' text aside)."""
    found = {}
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, errors="replace") as f:
                    text = f.read()
                if name.endswith(".py"):
                    text = re.sub(r'"""(.|\n)*?"""', "", re.sub(r"#[^\n]*", "", text))
                else:
                    text = re.sub(r"/\*.*?\*/", "", re.sub(r"//[^\n]*", "", text), flags=re.S)
                kinds = {k for k, pattern in KINDS.items() if pattern.search(text)}
                if kinds:
                    found[os.path.relpath(path, root)] = kinds
    return found


def inventory(root):
    """relative path -> the kinds the inventory declares for it; and the rows' problems."""
    with open(os.path.join(root, "docs", "security.md")) as f:
        doc = f.read()
    start = doc.find("## Surface inventory")
    if start < 0:
        return {}, ["docs/security.md has no '## Surface inventory' section"]
    end = doc.find("\n## ", start + 1)
    declared, problems = {}, []
    for n, line in enumerate(doc[start:end if end > 0 else len(doc)].splitlines()):
        if not line.startswith("| ") or line.startswith("| surface") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 5 or not all(cells):
            problems.append(f"inventory row '{line[:60]}...': expected 5 filled cells "
                            f"(surface, where, threat, guarantee, proved by), got {len(cells)}")
            continue
        files = ROW_FILE.findall(cells[1])
        if not files:
            problems.append(f"inventory row '{cells[0]}': its 'where' names no `file` (kinds)")
        for path, kinds in files:
            declared.setdefault(path, set()).update(k.strip() for k in kinds.split(","))
    return declared, problems


# What each kind's pattern must catch (a planted surface of each kind), so
# that the scan cannot silently stop seeing one.
PLANTED = {
    "listen": "  ::listen(fd.get(), 16);",
    "python listen": "    tcp = _dist.TCPStore(self.host, 0, world, True)",
    "create": "  std::ofstream out(dir + \"/x.html\");",
    "exec": "  ::execvp(argv[0], argv);",
    "config": "  auto text = ReadTextFile(path, \"job file\");",
}


def main():
    root = sys.argv[1]
    problems = [f"the '{k}' pattern misses the planted line {line!r}"
                for k, line in PLANTED.items() if not KINDS[k.split()[-1]].search(line)]
    found = scan(root)
    declared, row_problems = inventory(root)
    problems += row_problems
    for path, kinds in sorted(found.items()):
        missing = kinds - declared.get(path, set())
        for kind in sorted(missing):
            problems.append(f"{path}: opens a surface of kind '{kind}' that docs/security.md's surface "
                            f"inventory does not list for it; add a row (threat, guarantee, the test that "
                            f"proves it) or add '{kind}' to its row")
    for path, kinds in sorted(declared.items()):
        for kind in sorted(kinds - found.get(path, set())):
            problems.append(f"docs/security.md's surface inventory lists {path} ({kind}), but "
                            + ("there is no such file" if not os.path.exists(os.path.join(root, path))
                               else f"it opens no surface of kind '{kind}'") + "; update the row")
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"surface inventory: {len(found)} files open surfaces, every one declared")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
