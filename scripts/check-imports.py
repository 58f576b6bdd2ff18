#!/usr/bin/env python3
"""Holds every module's imports to docs/architecture.md's module table ("May import").

Reads the table's rows: a row's first cell names the module (`Gateway`, or `LoadGen` (`tollgate-load`)),
its last cell what it may import: backticked names are project modules, plain words are packages.
Then every `import` in Sources/<Module>/**/*.swift must be a listed project module, a listed package
(or a module that package ships), or a system module. A row that says "every module above" or "the
modules it measures" (the command line and the benchmarks) is not checked. Exits 1 naming each
offending file and import.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Modules of the toolchain and the OS: any module may use them.
SYSTEM = {"Foundation", "FoundationNetworking", "FoundationEssentials", "Glibc", "Darwin", "Dispatch", "Synchronization", "_Concurrency"}
# The modules each package named in the table ships (a table names the package once).
PACKAGES = {
    "Hummingbird": {"Hummingbird", "HummingbirdCore", "HTTPTypes"},
    "HummingbirdAuth": {"HummingbirdAuth"},
    "NIO": {"NIOCore", "NIOPosix", "NIOHTTP1", "NIOHTTPTypes", "NIOHTTPTypesHTTP1", "NIOSSL", "NIOConcurrencyHelpers"},
    "Metrics": {"Metrics", "CoreMetrics"},
    "Prometheus": {"Prometheus"},
    "ServiceLifecycle": {"ServiceLifecycle", "UnixSignals"},
    "Logging": {"Logging"},
    "Yams": {"Yams"},
    "Mustache": {"Mustache"},
    "PostgresNIO": {"PostgresNIO"},
    "ArgumentParser": {"ArgumentParser"},
    "AsyncHTTPClient": {"AsyncHTTPClient"},
}
UNCHECKED = ("every module above", "the modules it measures")
IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public\s+|internal\s+|package\s+|private\s+|fileprivate\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


def table_rows(text):
    section = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        module = re.match(r"`([A-Za-z]+)`", cells[0]).group(1)
        yield module, cells[-1]


def allowed(cell):
    names = set(re.findall(r"`([A-Za-z]+)`", cell))
    # Plain words outside backticks and parentheses: the packages.
    plain = re.sub(r"\([^)]*\)", "", re.sub(r"`[^`]*`", "", cell))
    for word in re.findall(r"[A-Za-z]+", plain):
        names |= PACKAGES.get(word, set())
    return names


def main():
    text = (ROOT / "docs/architecture.md").read_text()
    rows = dict(table_rows(text))
    problems = []
    for module, cell in rows.items():
        folder = ROOT / "Sources" / module
        if not folder.is_dir():
            problems.append(f"docs/architecture.md names module {module}, which has no Sources/{module}")
            continue
        if cell.startswith(UNCHECKED) or any(phrase in cell for phrase in UNCHECKED):
            continue
        may = allowed(cell) | SYSTEM
        for path in sorted(folder.rglob("*.swift")):
            for imported in IMPORT.findall(path.read_text()):
                if imported not in may and imported != module:
                    problems.append(f"{path.relative_to(ROOT)}: imports {imported}, which docs/architecture.md's row for {module} does not allow")
    missing = {p.name for p in (ROOT / "Sources").iterdir() if p.is_dir() and any(p.rglob("*.swift"))} - set(rows)
    for module in sorted(missing):
        problems.append(f"Sources/{module} has no row in docs/architecture.md's module table")
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"imports: {len(rows)} modules follow docs/architecture.md")


if __name__ == "__main__":
    main()
