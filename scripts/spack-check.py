#!/usr/bin/env python3
"""Checks the Spack recipe (packaging/spack/packages/rdmx/package.py) against
the CMake files, without Spack: the recipe is parsed with `ast`, never run.

  - it defines a CMakePackage class with a version equal to project(VERSION),
    variants, and depends_on directives;
  - every find_package / pkg_check_modules / rdmx_require_pc of the CMake
    files is a depends_on of the recipe (through DEP_MAP), and every
    depends_on is something CMake looks for;
  - a dependency CMake looks for only under an option (tests, benchmarks) is
    conditional in the recipe (`when=`), so a cluster node's build does not
    pull MPI or GoogleTest;
  - every option() of the CMake files is set in cmake_args, every
    define_from_variant names an existing option and variant, and every
    variant is used;
  - the cmake@ minimum equals cmake_minimum_required, and each language of
    project() has its depends_on ('c', 'cxx').

Usage: spack-check.py [--source-dir DIR] [--package FILE]
       spack-check.py --self-test [--source-dir DIR] [--package FILE]
The self-test feeds mutated copies (a dependency dropped, a condition
dropped, an option renamed, a CMake option or dependency added) and fails
unless the check rejects each of them.
"""
import argparse
import ast
import os
import re
import shutil
import sys
import tempfile

# What CMake looks for -> the Spack package providing it (None: part of the
# toolchain, no depends_on).
DEP_MAP = {
    "PkgConfig": "pkgconfig",
    "Threads": None,
    "libibverbs": "rdma-core",
    "librdmacm": "rdma-core",
    "hwloc": "hwloc",
    "pmix": "pmix",
    "MPI": "mpi",
    "GTest": "googletest",
    "benchmark": "benchmark",
    "nlohmann_json": "nlohmann-json",
    "ucx": "ucx",
    "Python3": "python",
}
# Spack packages a recipe may depend on that no find_package names (the
# languages are checked against project(LANGUAGES) instead).
TOOL_DEPS = {"cmake", "c", "cxx", "fortran"}
# project(LANGUAGES) -> the Spack virtual that gives the package a compiler.
LANGUAGE_DEPS = {"C": "c", "CXX": "cxx", "Fortran": "fortran"}
# Directories whose CMake files are not the project's build (consumers of an
# installed rdmx, packaging, build trees).
SKIP_DIRS = {"examples", "packaging", "debian", ".git"}
# Where a file sits implies the option that includes it.
DIR_OPTIONS = {"tests": "RDMX_BUILD_TESTS", "bench": "RDMX_BUILD_BENCH", "mpi": "RDMX_BUILD_MPI"}
FILE_OPTIONS = {os.path.join("bench", "tests.cmake"): "RDMX_BUILD_TESTS"}

OPTION_RE = re.compile(r'\boption\(\s*(RDMX_\w+)\s+"[^"]*"\s+([^)\s]+)\s*\)')
FIND_PACKAGE_RE = re.compile(r"\bfind_package\(\s*(\w+)")
PKG_CHECK_RE = re.compile(r"\bpkg_check_modules\(\s*\S+\s+([^)]*)\)")
REQUIRE_PC_RE = re.compile(r"\brdmx_require_pc\(\s*\w+\s+([\w.+-]+)")
IF_RE = re.compile(r"^\s*(if|elseif|else|endif)\s*\((.*)$", re.IGNORECASE)
PC_KEYWORDS = {"REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH"}


class CheckError(Exception):
    pass


def cmake_files(src):
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")
                         and not (rel_root == "." and d.startswith(".")))
        for f in sorted(files):
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                yield os.path.relpath(os.path.join(root, f), src)


def implied_options(rel):
    opts = set()
    top = rel.split(os.sep)[0]
    if top in DIR_OPTIONS:
        opts.add(DIR_OPTIONS[top])
    if rel in FILE_OPTIONS:
        opts.add(FILE_OPTIONS[rel])
    return opts


def scan_cmake(src):
    """Options (name -> default), dependencies (name -> list of sets of the
    options each occurrence sits under) and cmake_minimum_required."""
    options, deps, cmake_min = {}, {}, None
    for rel in cmake_files(src):
        stack = []  # the RDMX_* options named by each enclosing if()
        base = implied_options(rel)
        with open(os.path.join(src, rel), encoding="utf-8") as fh:
            for line in fh:
                line = line.split("#", 1)[0]
                m = IF_RE.match(line)
                if m:
                    kw, cond = m.group(1).lower(), set(re.findall(r"RDMX_BUILD_\w+", m.group(2)))
                    if kw == "if":
                        stack.append(cond)
                    elif kw == "elseif" and stack:
                        stack[-1] = cond
                    elif kw == "endif" and stack:
                        stack.pop()
                    continue
                under = set(base).union(*stack) if stack else set(base)
                m = re.search(r"cmake_minimum_required\(\s*VERSION\s+([\d.]+)", line)
                if m and cmake_min is None:
                    cmake_min = m.group(1)
                for m in OPTION_RE.finditer(line):
                    options[m.group(1)] = m.group(2)
                names = [m.group(1) for m in FIND_PACKAGE_RE.finditer(line)]
                names += [m.group(1) for m in REQUIRE_PC_RE.finditer(line)]
                for m in PKG_CHECK_RE.finditer(line):
                    names += [t for t in m.group(1).split() if t not in PC_KEYWORDS and "$" not in t]
                for n in names:
                    deps.setdefault(n, []).append(under)
    # An option whose default is whether a package was found builds
    # something that needs that package (RDMX_BUILD_MICRO: ${benchmark_FOUND}).
    for opt, default in options.items():
        m = re.fullmatch(r"\$\{(\w+)_FOUND\}", default)
        if m and m.group(1) in deps:
            deps[m.group(1)].append({opt})
    return options, deps, cmake_min


def const_str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def call_name(call):
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def parse_recipe(path):
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)
               and any(getattr(b, "id", None) == "CMakePackage" for b in n.bases)]
    if len(classes) != 1:
        raise CheckError(f"{path}: expected one class deriving from CMakePackage, found {len(classes)}")
    cls = classes[0]
    recipe = {"class": cls.name, "versions": [], "variants": set(), "depends": [], "defines": {}}
    for stmt in cls.body:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        call, name = stmt.value, call_name(stmt.value)
        first = const_str(call.args[0]) if call.args else None
        kw = {k.arg: const_str(k.value) for k in call.keywords}
        if name == "version" and first:
            recipe["versions"].append(first)
        elif name == "variant" and first:
            recipe["variants"].add(first)
        elif name == "depends_on" and first:
            recipe["depends"].append((first, kw.get("when")))
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "cmake_args"]
    if not methods:
        raise CheckError(f"{path}: class {cls.name} has no cmake_args method")
    for node in ast.walk(methods[0]):
        if isinstance(node, ast.Call) and call_name(node) in ("define", "define_from_variant") and node.args:
            opt = const_str(node.args[0])
            var = const_str(node.args[1]) if call_name(node) == "define_from_variant" and len(node.args) > 1 else None
            if opt:
                recipe["defines"][opt] = var
    return recipe


def spec_name(spec):
    m = re.match(r"[A-Za-z0-9][\w.-]*", spec.strip())
    return m.group(0) if m else spec


def check_basics(src, recipe, cmake_min):
    errors = []
    with open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"project\(\s*\w+\s+VERSION\s+([\d.]+)", text)
    langs = re.search(r"project\([^)]*\bLANGUAGES\s+([^)]*)\)", text)
    names = {spec_name(spec) for spec, _ in recipe["depends"]}
    for lang in (langs.group(1).split() if langs else ["C", "CXX"]):
        if LANGUAGE_DEPS.get(lang) not in names:
            errors.append(f"project() uses {lang}, but the recipe has no depends_on('{LANGUAGE_DEPS.get(lang)}')")
    if not recipe["versions"]:
        errors.append("the recipe declares no version()")
    elif m and m.group(1) not in recipe["versions"]:
        errors.append(f"project(VERSION {m.group(1)}) has no version() in the recipe (it has {recipe['versions']})")
    if not recipe["variants"]:
        errors.append("the recipe declares no variant()")
    if not recipe["depends"]:
        errors.append("the recipe declares no depends_on()")
    for spec, _ in recipe["depends"]:
        m = re.search(r"@([\d.]+):", spec)
        if spec_name(spec) == "cmake" and cmake_min and (not m or m.group(1) != cmake_min):
            errors.append(f"depends_on('{spec}') but cmake_minimum_required is {cmake_min}")
    return errors


def check_variants(recipe, options):
    """Every option is set in cmake_args; every variant sets an option."""
    errors = []
    for opt in sorted(options):
        if opt not in recipe["defines"]:
            errors.append(f"CMake option {opt} is not set in cmake_args (define_from_variant or define)")
    used = set()
    for opt, var in sorted(recipe["defines"].items()):
        if opt.startswith("RDMX_") and opt not in options:
            errors.append(f"cmake_args sets {opt}, which no CMake file declares with option()")
        if var is not None:
            used.add(var)
            if var not in recipe["variants"]:
                errors.append(f"cmake_args maps {opt} to variant '{var}', which the recipe does not declare")
    for var in sorted(recipe["variants"] - used):
        errors.append(f"variant '{var}' sets no CMake option (no define_from_variant)")
    return errors


def wanted_packages(deps, errors):
    """Spack package -> (always needed, options it is needed under, CMake name)."""
    wanted = {}
    for dep, occurrences in sorted(deps.items()):
        if dep == "rdmx":
            continue
        if dep not in DEP_MAP:
            errors.append(f"CMake looks for '{dep}', which the checker does not know: add it to DEP_MAP "
                          "(scripts/spack-check.py) and a depends_on to the recipe")
            continue
        pkg = DEP_MAP[dep]
        if pkg is None:
            continue
        always, allowed, _ = wanted.get(pkg, (False, set(), dep))
        wanted[pkg] = (always or any(not o for o in occurrences), allowed.union(*occurrences), dep)
    return wanted


def check_dependencies(recipe, deps):
    """CMake's dependencies against depends_on, conditions included."""
    errors = []
    wanted = wanted_packages(deps, errors)
    var_of = {var: opt for opt, var in recipe["defines"].items() if var}
    by_pkg = {}
    for spec, when in recipe["depends"]:
        by_pkg.setdefault(spec_name(spec), []).append((spec, when))
    for pkg, (always, allowed, dep) in sorted(wanted.items()):
        if pkg not in by_pkg:
            errors.append(f"CMake looks for {dep}, but the recipe has no depends_on('{pkg}')")
            continue
        for spec, when in by_pkg[pkg]:
            if always and when:
                errors.append(f"depends_on('{spec}') is only when='{when}', but CMake always needs {dep}")
            if not always and not when:
                errors.append(f"depends_on('{spec}') is unconditional, but CMake looks for {dep} only with "
                              f"{' or '.join(sorted(allowed))}: add when='+variant'")
            for var in re.findall(r"\+(\w+)", when or ""):
                if var_of.get(var) not in allowed:
                    errors.append(f"depends_on('{spec}', when='{when}'): variant '{var}' "
                                  f"({var_of.get(var, 'no option')}) is not one CMake needs {dep} for "
                                  f"({', '.join(sorted(allowed))})")
    for pkg in sorted(by_pkg):
        if pkg not in wanted and pkg not in TOOL_DEPS:
            errors.append(f"the recipe depends on '{pkg}', which no CMake file looks for")
    return errors, wanted


def check(src, package):
    recipe = parse_recipe(package)
    options, deps, cmake_min = scan_cmake(src)
    errors = check_basics(src, recipe, cmake_min) + check_variants(recipe, options)
    dep_errors, wanted = check_dependencies(recipe, deps)
    errors += dep_errors
    if errors:
        raise CheckError("\n".join(errors))
    return recipe, options, wanted


# Each mutation of the recipe text (old, new) that the check must reject.
RECIPE_MUTATIONS = [
    ("a library dependency dropped", 'depends_on("pmix")', ""),
    ("a test dependency made unconditional", 'depends_on("googletest", when="+tests")', 'depends_on("googletest")'),
    ("an option misspelt", '"RDMX_BUILD_MICRO", "micro"', '"RDMX_BUILD_MIKRO", "micro"'),
    ("a variant dropped", 'variant("bench", default=True, description="Build rdmx-bench and rdmx-info")', ""),
    ("an option no longer set", 'self.define("RDMX_BUILD_FUZZ", False),', ""),
    ("another version", 'version("0.1.0")', 'version("0.0.9")'),
    ("MPI under a variant that does not need it", 'depends_on("mpi", when="+tests")', 'depends_on("mpi", when="+lto")'),
    ("a language's compiler dropped", 'depends_on("cxx", type="build")', ""),
    ("another CMake minimum", 'depends_on("cmake@3.22:"', 'depends_on("cmake@3.20:"'),
    ("a dependency CMake does not look for", 'depends_on("hwloc")', 'depends_on("hwloc")\n    depends_on("zlib")'),
]
# Each addition to the top CMakeLists.txt that the check must reject.
CMAKE_MUTATIONS = [
    ("a CMake option without a variant", 'option(RDMX_BUILD_NEW "new" OFF)\n'),
    ("a CMake dependency unknown to the recipe", "find_package(ZLIB REQUIRED)\n"),
    ("a pkg-config dependency unknown to the recipe", "pkg_check_modules(FOO REQUIRED IMPORTED_TARGET foo)\n"),
]


def copy_cmake_tree(src, dst):
    for rel in cmake_files(src):
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        shutil.copy(os.path.join(src, rel), os.path.join(dst, rel))


def self_test(src, package):
    check(src, package)  # the real recipe passes
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        text = open(package, encoding="utf-8").read()
        for what, old, new in RECIPE_MUTATIONS:
            if old not in text:
                print(f"spack-check self-test: mutation '{what}' no longer applies (no {old!r} in the recipe)")
                failures += 1
                continue
            mutated = os.path.join(tmp, "package.py")
            with open(mutated, "w", encoding="utf-8") as fh:
                fh.write(text.replace(old, new, 1))
            failures += expect_failure(what, src, mutated)
        for i, (what, addition) in enumerate(CMAKE_MUTATIONS):
            tree = os.path.join(tmp, f"src-{i}")
            copy_cmake_tree(src, tree)
            with open(os.path.join(tree, "CMakeLists.txt"), "a", encoding="utf-8") as fh:
                fh.write(addition)
            failures += expect_failure(what, tree, package)
    return failures


def expect_failure(what, src, package):
    try:
        check(src, package)
    except CheckError as e:
        print(f"spack-check self-test: rejected {what}: {str(e).splitlines()[0]}")
        return 0
    print(f"spack-check self-test: FAIL: accepted {what}")
    return 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", default=os.path.dirname(here))
    ap.add_argument("--package", default=None)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    package = a.package or os.path.join(a.source_dir, "packaging", "spack", "packages", "rdmx", "package.py")
    try:
        if a.self_test:
            failures = self_test(a.source_dir, package)
            print("spack-check self-test: " + ("OK" if failures == 0 else f"FAIL ({failures})"))
            return 1 if failures else 0
        recipe, options, wanted = check(a.source_dir, package)
    except (CheckError, OSError, SyntaxError) as e:
        print(f"spack-check: FAIL\n{e}")
        return 1
    print(f"spack-check: OK: class {recipe['class']}, versions {', '.join(recipe['versions'])}; "
          f"{len(recipe['variants'])} variants for {len(options)} CMake options; "
          f"depends on {', '.join(sorted(wanted))} (as CMake looks for them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
