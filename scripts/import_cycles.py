"""Module import cycles inside one crate (issue 24: "no import cycles inside any crate").

    python3 scripts/import_cycles.py schedule/src      # prints each cycle, then the count

Builds the file-level graph of a crate's `src/`: an edge A -> B when file A names a path that
resolves to module file B (`crate::x::..`, `super::x`, `self::x`), outside comments and
`#[cfg(test)] mod tests`. References to the crate root (`lib.rs`) are not edges: every module
names the root's types. Exits 1 when it finds a cycle.

A rough reader of Rust, not a parser: it resolves a path to the longest prefix that is a module
file, and does not follow `use` re-exports. It found the schedule <-> lowering loops (9 cycles)
that issue 24 describes before they were untied; since 2026-12-03 every crate has none.
"""
import os
import re
import sys


def module_path(root, path):
    parts = os.path.relpath(path, root)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def edges_of(root):
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(directory, name)
                files[module_path(root, path)] = path

    def resolve(parts):
        for n in range(len(parts), -1, -1):
            if tuple(parts[:n]) in files:
                return tuple(parts[:n])
        return None

    edges = {}
    pattern = r"\b(crate|super(?:::super)*|self)::((?:[a-z_][a-z_0-9]*::)*[A-Za-z_][A-Za-z_0-9]*)"
    for module, path in files.items():
        text = re.sub(r"//[^\n]*", "", open(path).read())
        text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", text, flags=re.S)
        out = set()
        for prefix, rest in re.findall(pattern, text):
            if prefix == "crate":
                base = []
            elif prefix == "self":
                base = list(module)
            else:
                base = list(module)[: len(module) - prefix.count("super")]
            target = resolve(base + rest.split("::"))
            if target is not None and target not in (module, ()):
                out.add(target)
        edges[module] = out
    return edges


def cycles_of(edges):
    found = set()

    def walk(node, stack):
        for succ in edges.get(node, ()):
            if succ in stack:
                cycle = stack[stack.index(succ):]
                i = cycle.index(min(cycle))
                found.add(tuple(cycle[i:] + cycle[:i]))
            elif len(stack) < 12:
                walk(succ, stack + [succ])

    for node in edges:
        walk(node, [node])
    return sorted(found)


def main():
    cycles = cycles_of(edges_of(sys.argv[1]))
    name = lambda m: "::".join(m)
    for cycle in cycles:
        print(" -> ".join(name(m) for m in cycle + (cycle[0],)))
    print(f"{len(cycles)} cycles")
    sys.exit(1 if cycles else 0)


if __name__ == "__main__":
    main()
