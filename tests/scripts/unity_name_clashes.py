#!/usr/bin/env python3
"""Names that two files of one unity batch declare in one namespace, one of them at internal linkage.

A unity build (CMAKE_UNITY_BUILD) compiles a target's files in batches, one translation unit per
batch: the anonymous namespaces of a batch's files are then one namespace, their static functions
share one file scope, and each file sees what the files before it declared. Where two files give
one name the same signature that no longer compiles; with other parameter types it still does, and
a later file may then call the earlier one's overload instead of its own without a word. So no
name of one namespace may be declared by two files of a batch where either gives it internal
linkage (an anonymous namespace, or static).

  unity_name_clashes.py BUILD_DIR    checks every batch of the build under BUILD_DIR
  unity_name_clashes.py --self-test  the check itself, on batches written for the purpose

Reads the sources with Universal Ctags (its JSON output). Exit code: 0 when no batch has a clash,
1 when one has (each clash named with its batch, name and the files and lines that declare it),
77 (skipped) when there is no Universal Ctags, 2 when the check cannot run otherwise.
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

# "unity_<n>_cxx.cxx" (C++) or "unity_<n>_c.c" under "<target>.dir/Unity/", each line of it an
# #include of one source.
UNITY_GLOBS = ("**/CMakeFiles/*.dir/Unity/unity_*_cxx.cxx", "**/CMakeFiles/*.dir/Unity/unity_*_c.c")
INCLUDE = re.compile(r'^#include "(?P<path>[^"]+)"\s*$')
ANONYMOUS_NAMESPACE = re.compile(r"^__anon[0-9a-f]+$")  # Ctags' name of one
STATIC = re.compile(r"\bstatic\b")
# Macros (the project's are all capitals) that Ctags reads as functions, gtest's TEST(...) above all:
# each makes names of its own.
MACRO = re.compile(r"^[A-Z][A-Z0-9_]*$")


class CheckError(Exception):
    pass


class NoCtags(Exception):
    pass


def ctags_program():
    for name in ("ctags-universal", "universal-ctags", "ctags"):
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            candidate = os.path.join(folder, name)
            if os.access(candidate, os.X_OK):
                version = subprocess.run([candidate, "--version"], capture_output=True, text=True).stdout
                if version.startswith("Universal Ctags"):
                    return candidate
    raise NoCtags("no Universal Ctags on the PATH (Debian: apt-get install universal-ctags; "
                  "scripts/setup.sh installs it)")


def rules_text(build_dir):
    """The build's rules (Ninja's build.ninja, or every target's build.make), "" where there are none."""
    rules = glob.glob(os.path.join(build_dir, "build.ninja")) or \
        glob.glob(os.path.join(build_dir, "**/CMakeFiles/*.dir/build.make"), recursive=True)
    text = []
    for rule_file in rules:
        with open(rule_file, encoding="utf-8", errors="replace") as f:
            text.append(f.read())
    return "".join(text)


def unity_batches(build_dir):
    """{batch file: [its sources, in order]} for every batch of the build under build_dir: those its
    rules name (CMake leaves the files of batches that no longer exist behind)."""
    rules = rules_text(build_dir)
    batches = {}
    for batch in sorted(path for pattern in UNITY_GLOBS
                        for path in glob.glob(os.path.join(build_dir, pattern), recursive=True)):
        if rules and os.path.relpath(batch, build_dir) not in rules:
            continue
        with open(batch, encoding="utf-8") as f:
            sources = [m.group("path") for m in map(INCLUDE.match, f) if m]
        if sources:
            batches[batch] = sources
    return batches


class Place(collections.namedtuple("Place", "line internal")):
    """Where a source first names a function or variable at namespace scope, and whether it has
    internal linkage there."""


def namespace_names(ctags, sources):
    """{source: {(namespace, name): Place}} of the functions and variables that each source declares
    or defines at namespace scope; namespace without its anonymous parts ("" for the global one)."""
    command = [ctags, "--output-format=json", "--languages=C++", "--language-force=C++", "--kinds-C++=fpv",
               "--fields=+nsKZF", "--extras=-q", "-o", "-"] + sorted(set(sources))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CheckError(f"{ctags} failed with exit code {result.returncode}: {result.stderr.strip()}")
    names = collections.defaultdict(dict)
    for line in result.stdout.splitlines():
        tag = json.loads(line)
        name, scope, scope_kind = tag.get("name", ""), tag.get("scope", ""), tag.get("scopeKind")
        if tag.get("_type") != "tag" or scope_kind not in (None, "namespace") or MACRO.match(name) or \
                name.startswith("operator"):
            continue
        parts = scope.split("::") if scope else []
        in_anonymous_namespace = any(ANONYMOUS_NAMESPACE.match(part) for part in parts)
        # Ctags marks "file" a static definition, and also any prototype in a source file.
        static = STATIC.search(tag.get("pattern", "")) is not None if tag["kind"] == "prototype" else tag.get("file")
        key = ("::".join(part for part in parts if not ANONYMOUS_NAMESPACE.match(part)), name)
        known = names[tag["path"]].get(key)
        internal = bool(in_anonymous_namespace or static) or (known is not None and known.internal)
        names[tag["path"]][key] = Place(min(known.line, tag["line"]) if known else tag["line"], internal)
    return names


def clashes(batches, names):
    """[(batch, qualified name, [(source, Place), ...])] for each name of one namespace that two files
    of a batch declare, one of them at internal linkage."""
    found = []
    for batch, sources in batches.items():
        places = collections.defaultdict(list)
        for source in sources:
            for key, place in names.get(source, {}).items():
                places[key].append((source, place))
        for (namespace, name), where in sorted(places.items()):
            if len(where) > 1 and any(place.internal for _, place in where):
                qualified = f"{namespace}::{name}" if namespace else name
                found.append((batch, qualified, [(source, place) for source, place in where]))
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
    names = namespace_names(ctags_program(), sources)
    found = clashes(batches, names)
    for batch, name, places in found:
        where = ", ".join(f"{source}:{place.line}{' (internal)' if place.internal else ''}" for source, place in places)
        print(f"{batch}: '{name}' is declared by {len(places)} of the batch's files, at internal linkage in "
              f"{sum(place.internal for _, place in places)}: {where}; in one translation unit a later file can "
              "call an earlier one's overload, so rename one", file=out)
    internal = sum(place.internal for source in set(sources) for place in names.get(source, {}).values())
    print(f"unity_name_clashes: {len(batches)} batches, {len(sources)} sources, {internal} names at internal "
          f"linkage, {len(found)} clash(es)", file=out)
    return found


SELF_TEST_SOURCES = {
    # a.cpp and b.cpp clash thrice: 'scale' in both anonymous namespaces (another overload in b.cpp),
    # 'depth' in a namespace inside them, 'twice' static (declared so in a.cpp, then defined plainly).
    # a.cpp's own overloads of 'load', and its operator, clash with nothing.
    "a.cpp": """namespace sg2 {
namespace {
float scale(float x) { return 2 * x; }
float load(const float* p) { return *p; }
double load(const double* p) { return *p; }
struct Half {};
int operator<<(Half, int x) { return x / 2; }
namespace detail {
int depth(int x) { return x; }
}  // namespace detail
}  // namespace
static int twice(int x);
int twice(int x) { return 2 * x; }
float a(float x) { return scale(x) + twice(1) + detail::depth(1); }
}  // namespace sg2
""",
    "b.cpp": """namespace sg2 {
namespace {
double scale(double x) { return 3 * x; }
namespace detail {
long depth(long x) { return x; }
}  // namespace detail
}  // namespace
static int twice(int x) { return x + x; }
double b(double x) { return scale(x) + twice(2) + detail::depth(2L); }
}  // namespace sg2
""",
    # c.cpp against a.cpp: a public 'load' beside a.cpp's internal ones clashes; 'scale' in another
    # namespace or as a member, an operator, and what test macros make do not.
    "c.cpp": """#define TEST(a, b) void a##_##b()
#define INSTANTIATE_TEST_SUITE_P(a, b, c) int a##b = c
namespace sg2 {
double load(const double* p);
struct Loader { float scale(const float* p) { return *p; } };
namespace other {
namespace {
float scale(float x) { return x; }
}  // namespace
}  // namespace other
namespace {
struct Twice {};
int operator<<(Twice, int x) { return 2 * x; }
TEST(Scale, Twice) {}
INSTANTIATE_TEST_SUITE_P(Scale, Twice, 1);
}  // namespace
}  // namespace sg2
""",
}


def line_of(source, text):
    return next(n for n, line in enumerate(SELF_TEST_SOURCES[source].splitlines(), 1) if text in line)


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for name, text in SELF_TEST_SOURCES.items():
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        unity = os.path.join(root, "build", "CMakeFiles", "lib.dir", "Unity")
        os.makedirs(unity)
        # unity_2 is a batch the rules no longer name: left out, though it would clash.
        batch_files = {"unity_0_cxx.cxx": ["a.cpp", "b.cpp"], "unity_1_cxx.cxx": ["a.cpp", "c.cpp"],
                       "unity_2_cxx.cxx": ["b.cpp", "a.cpp"]}
        for batch, sources in batch_files.items():
            with open(os.path.join(unity, batch), "w", encoding="utf-8") as f:
                f.write("/* generated by CMake */\n\n")
                f.writelines(f'#include "{os.path.join(root, source)}"\n\n' for source in sources)
        with open(os.path.join(root, "build", "build.ninja"), "w", encoding="utf-8") as f:
            for batch in ("unity_0_cxx.cxx", "unity_1_cxx.cxx"):
                path = f"CMakeFiles/lib.dir/Unity/{batch}"
                f.write(f"build {path}.o: CXX_COMPILER__lib {path}\n")
        found = sorted((os.path.basename(batch), name, [(os.path.basename(s), place.line) for s, place in places])
                       for batch, name, places in check(os.path.join(root, "build")))
    expected = [("unity_0_cxx.cxx", "sg2::detail::depth", [("a.cpp", line_of("a.cpp", "int depth")),
                                                           ("b.cpp", line_of("b.cpp", "long depth"))]),
                ("unity_0_cxx.cxx", "sg2::scale", [("a.cpp", line_of("a.cpp", "float scale")),
                                                   ("b.cpp", line_of("b.cpp", "double scale"))]),
                ("unity_0_cxx.cxx", "sg2::twice", [("a.cpp", line_of("a.cpp", "static int twice")),
                                                   ("b.cpp", line_of("b.cpp", "static int twice"))]),
                ("unity_1_cxx.cxx", "sg2::load", [("a.cpp", line_of("a.cpp", "float load")),
                                                  ("c.cpp", line_of("c.cpp", "double load"))])]
    if found != expected:
        print(f"self-test: found {found}, expected {expected}", file=sys.stderr)
        return 1
    print("self-test: the four clashes found, nothing else, and the batch no rule names left out")
    return 0


def main(argv):
    if len(argv) != 2:
        print("usage: unity_name_clashes.py BUILD_DIR | --self-test", file=sys.stderr)
        return 2
    try:
        if argv[1] == "--self-test":
            return self_test()
        return 1 if check(argv[1]) else 0
    except NoCtags as error:
        print(f"SKIP: unity_name_clashes: {error}")
        return 77
    except CheckError as error:
        print(f"unity_name_clashes: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
