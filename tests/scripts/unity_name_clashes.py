#!/usr/bin/env python3
"""Names that two files of one unity batch both give internal linkage.

A unity build (CMAKE_UNITY_BUILD) compiles a target's files in batches, one translation unit per
batch: every anonymous namespace of a batch is then one namespace, and every static function is in
one file scope. Two files that define the same name there with the same signature no longer
compile; with other parameter types they still do, and a file later in the batch may then call the
other file's overload instead of its own without a word. So no name may be defined at internal
linkage (in an anonymous namespace, or static at namespace scope) by two files of one batch.

  unity_name_clashes.py BUILD_DIR    checks every batch CMake generated under BUILD_DIR
  unity_name_clashes.py --self-test  the check itself, on batches written for the purpose

Reads the sources with Universal Ctags (its JSON output). Exit code: 0 when no batch has a clash,
1 when one has (each clash named with its batch, name and the files and lines that define it),
2 when the check cannot run.
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

# "unity_<n>_cxx.cxx" under "<target>.dir/Unity/", each line of it an #include of one source.
UNITY_GLOB = "**/CMakeFiles/*.dir/Unity/unity_*_c*.c*"
INCLUDE = re.compile(r'^#include "(?P<path>[^"]+)"\s*$')
ANONYMOUS_NAMESPACE = re.compile(r"(^|::)__anon[0-9a-f]+$")
# Test macros that Ctags reads as functions: each TEST(...) makes a class of a name of its own.
MACROS_READ_AS_FUNCTIONS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"}


class CheckError(Exception):
    pass


def ctags_program():
    for name in ("ctags-universal", "universal-ctags", "ctags"):
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            candidate = os.path.join(folder, name)
            if os.access(candidate, os.X_OK):
                version = subprocess.run([candidate, "--version"], capture_output=True, text=True).stdout
                if version.startswith("Universal Ctags"):
                    return candidate
    raise CheckError("no Universal Ctags on the PATH (Debian: apt-get install universal-ctags; "
                     "scripts/setup.sh installs it)")


def unity_batches(build_dir):
    """{batch file: [its sources, in order]} for every batch under build_dir."""
    batches = {}
    for batch in sorted(glob.glob(os.path.join(build_dir, UNITY_GLOB), recursive=True)):
        if batch.endswith((".o", ".d", ".obj")):
            continue
        with open(batch, encoding="utf-8") as f:
            sources = [m.group("path") for m in map(INCLUDE.match, f) if m]
        if sources:
            batches[batch] = sources
    return batches


def internal_names(ctags, sources):
    """{source: {name: first line}} of the functions and variables each source gives internal linkage."""
    command = [ctags, "--output-format=json", "--languages=C++", "--language-force=C++", "--kinds-C++=fpv",
               "--fields=+nsKZF", "--extras=-q", "-o", "-"] + sorted(set(sources))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CheckError(f"{ctags} failed with exit code {result.returncode}: {result.stderr.strip()}")
    names = collections.defaultdict(dict)
    for line in result.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag["name"] in MACROS_READ_AS_FUNCTIONS:
            continue
        scope, scope_kind = tag.get("scope", ""), tag.get("scopeKind")
        in_anonymous_namespace = scope_kind == "namespace" and ANONYMOUS_NAMESPACE.search(scope)
        # Ctags marks "file" a static definition, and any prototype in a source file (static or not).
        static_at_namespace_scope = tag.get("file") and tag["kind"] != "prototype" and scope_kind in (None, "namespace")
        if in_anonymous_namespace or static_at_namespace_scope:
            names[tag["path"]].setdefault(tag["name"], tag["line"])
    return names


def clashes(batches, names):
    """[(batch, name, [(source, line), ...])] for each name that two files of a batch define."""
    found = []
    for batch, sources in batches.items():
        definitions = collections.defaultdict(list)
        for source in sources:
            for name, line in names.get(source, {}).items():
                definitions[name].append((source, line))
        found += [(batch, name, places) for name, places in sorted(definitions.items()) if len(places) > 1]
    return found


def check(build_dir, out=sys.stdout):
    """The clashes in build_dir's batches, reported to out; raises CheckError where it cannot check."""
    batches = unity_batches(build_dir)
    if not batches:
        raise CheckError(f"no unity batches under {build_dir} (configured with -DCMAKE_UNITY_BUILD=ON?)")
    sources = [source for batch in batches.values() for source in batch]
    missing = [source for source in sources if not os.path.isfile(source)]
    if missing:
        raise CheckError(f"{len(missing)} source(s) named by the batches are missing, first {missing[0]}; "
                         "configure the build again")
    names = internal_names(ctags_program(), sources)
    found = clashes(batches, names)
    for batch, name, places in found:
        where = ", ".join(f"{source}:{line}" for source, line in places)
        print(f"{batch}: '{name}' has internal linkage in {len(places)} of the batch's files: {where}; "
              "in one translation unit a later file can call an earlier one's overload, so rename one",
              file=out)
    internal = sum(len(names.get(source, {})) for source in sources)
    print(f"unity_name_clashes: {len(batches)} batches, {len(sources)} sources, {internal} names at internal "
          f"linkage, {len(found)} clash(es)", file=out)
    return found


SELF_TEST_SOURCES = {
    # a.cpp and b.cpp: 'scale' in both anonymous namespaces (another overload in b.cpp), 'twice'
    # static in both; each file's own overloads of 'load' are no clash.
    "a.cpp": """namespace sg2 {
namespace {
float scale(float x) { return 2 * x; }
float load(const float* p) { return *p; }
double load(const double* p) { return *p; }
}  // namespace
static int twice(int x) { return 2 * x; }
float a(float x) { return scale(x) + twice(1); }
}  // namespace sg2
""",
    "b.cpp": """namespace sg2 {
namespace {
double scale(double x) { return 3 * x; }
}  // namespace
static int twice(int x) { return x + x; }
double b(double x) { return scale(x) + twice(2); }
}  // namespace sg2
""",
    # c.cpp: the same names, but public or class members, and tests: no clash with a.cpp.
    "c.cpp": """#define TEST(a, b) void a##_##b()
namespace sg2 {
float scale(float x);
struct Loader { float load(const float* p) { return *p; } };
namespace {
TEST(Scale, Twice) {}
}  // namespace
}  // namespace sg2
""",
}


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for name, text in SELF_TEST_SOURCES.items():
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        unity = os.path.join(root, "build", "CMakeFiles", "lib.dir", "Unity")
        os.makedirs(unity)
        batch_files = {"unity_0_cxx.cxx": ["a.cpp", "b.cpp"], "unity_1_cxx.cxx": ["a.cpp", "c.cpp"]}
        for batch, sources in batch_files.items():
            with open(os.path.join(unity, batch), "w", encoding="utf-8") as f:
                f.write("/* generated by CMake */\n\n")
                f.writelines(f'#include "{os.path.join(root, source)}"\n\n' for source in sources)
        found = [(os.path.basename(batch), name, [(os.path.basename(s), line) for s, line in places])
                 for batch, name, places in check(os.path.join(root, "build"))]
    expected = [("unity_0_cxx.cxx", "scale", [("a.cpp", 3), ("b.cpp", 3)]),
                ("unity_0_cxx.cxx", "twice", [("a.cpp", 7), ("b.cpp", 5)])]
    if found != expected:
        print(f"self-test: found {found}, expected {expected}", file=sys.stderr)
        return 1
    print("self-test: the two clashes of batch 0 found, none in batch 1")
    return 0


def main(argv):
    if len(argv) != 2:
        print("usage: unity_name_clashes.py BUILD_DIR | --self-test", file=sys.stderr)
        return 2
    try:
        if argv[1] == "--self-test":
            return self_test()
        return 1 if check(argv[1]) else 0
    except CheckError as error:
        print(f"unity_name_clashes: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
