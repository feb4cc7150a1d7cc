"""The shape of the code: lfcli -> pipelines -> models -> kernels, no import circles, no
private names across modules.

Every `import` and `from ... import` of the package is read with `ast`, at module level and
inside functions alike (an import inside a function is still a dependency; it only hides a
circle until the function runs), relative and absolute. Three rules:

* layers: lfcli (the CLI and the Python API) may import pipelines, models and kernels;
  pipelines may import models (and reaches the attention kernels through models); models
  may import kernels; kernels nothing of lfcli. A layer never imports one above it.
* no circles between modules, whichever way they are spelt.
* no private name (a leading underscore) imported from another module, nor read off an
  imported module (`readers._walk`): what one module offers another is public.

And the house rules of docs/architecture.md: no module over 500 lines nor function over ~80;
no task's name tested, used as a table's key, listed or passed to a call (a registry look-up,
a `task=` keyword, a table's row) outside its home under lfcli.pipelines.tasks; and every import inside a function says why in a comment (an
optional dependency, or a heavy one kept lazy for `lfcli --help`).
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 has no tomllib: package_dirs falls back on the folders' names
    tomllib = None

ROOT = Path(__file__).resolve().parents[1]

# Which package may import which: each layer calls only the ones below it, and pipelines reach
# the kernels through models (models re-exports the backend choice pipelines need). Inside
# pipelines the rooms are layers too (io <- view <- infer <- eval <- train <- tasks), above the small
# modules at pipelines' top (errors, wording, progress, registry), which import no room. `tasks`
# holds one home per task, over the shared machinery of the rooms below it.
PACKAGES = ("lfcli", "lfcli.pipelines", "lfcli.models", "lfcli.kernels")  # pyproject's package-dir
ROOMS = ("lfcli.pipelines.io", "lfcli.pipelines.view", "lfcli.pipelines.infer", "lfcli.pipelines.eval", "lfcli.pipelines.train",
         "lfcli.pipelines.tasks")
LAYERS = PACKAGES + ROOMS
MAY_IMPORT = {
    "lfcli": set(LAYERS),
    "lfcli.pipelines": {"lfcli.pipelines", "lfcli.models"},
    **{room: {"lfcli.pipelines", *ROOMS[: k + 1], "lfcli.models"} for k, room in enumerate(ROOMS)},
    "lfcli.models": {"lfcli.models", "lfcli.kernels"},
    "lfcli.kernels": {"lfcli.kernels"},
}


# -- the checker (its own tests are at the bottom) --------------------------------------------
def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """pyproject.toml's package-dir: import name -> folder (lfcli.models -> models/)."""
    if tomllib is not None:
        table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        mapping = table["tool"]["setuptools"]["package-dir"]
    else:  # lfcli.models -> models/, as pyproject.toml says
        mapping = {name: name.split(".")[-1] for name in PACKAGES}
    return {name: root / folder for name, folder in mapping.items()}


def modules_of(packages: dict[str, Path]) -> dict[str, Path]:
    """Every module of the packages and their sub-packages: dotted name -> file (a package is
    its __init__.py)."""
    found = {}
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if any(p.startswith(".") or p == "__pycache__" for p in parts):
                continue
            dotted = ".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])
            if (folder.joinpath(*parts[:-1]) / "__init__.py").is_file() or len(parts) == 1:
                found[dotted] = path
    return found


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that `name` (a dotted import path) lands in: the longest match."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str | None, int]]:
    """(imported module, name taken from it or None, line) for each import of ours in `path`,
    with private attributes read off an imported module as names taken from it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    found: list[tuple[str, str | None, int]] = []
    bound: dict[str, str] = {}  # local name -> our module it refers to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _owner(alias.name, modules)
                if target is not None:
                    found.append((target, None, node.lineno))
                    if alias.asname:
                        bound[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:  # `from . import readers`: the module itself
                    found.append((submodule, None, node.lineno))
                    bound[alias.asname or alias.name] = submodule
                    continue
                target = _owner(source, modules)
                if target is not None:
                    found.append((target, alias.name, node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            found.append((bound[node.value.id], node.attr, node.lineno))
    return [(target, name, line) for target, name, line in found if target != module]


def _layer(module: str, layers: tuple[str, ...]) -> str:
    return max((layer for layer in layers if module == layer or module.startswith(layer + ".")), key=len)


def _is_private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def find_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each as a path that
    walks its circle, for the message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_circle_path(group, graph) for group in groups]


def _circle_path(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One circle through the group's first module: a -> b -> ... -> a."""
    members, start = set(group), group[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return paths[node] + [start]
            if nxt in members and nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    return group


def architecture_problems(packages: dict[str, Path], layers: tuple[str, ...] = LAYERS,
                          may_import: dict[str, set[str]] = MAY_IMPORT) -> list[str]:
    """Every breach of the three rules, one line each (empty: the code keeps them)."""
    modules = modules_of(packages)
    problems, graph = {}, {module: set() for module in modules}  # a dict: each problem once, in order
    for module, path in modules.items():
        where = path.relative_to(path.parents[1])
        for target, name, line in imports_of(module, path, modules):
            graph[module].add(target)
            if _layer(target, layers) not in may_import[_layer(module, layers)]:
                problems[f"{where}:{line}: {module} imports {target}, which its layer may not import"] = None
            if _is_private(name):
                problems[f"{where}:{line}: {module} takes the private name {name} from {target}"] = None
    for circle in find_circles(graph):
        problems["import circle: " + " -> ".join(circle)] = None
    return list(problems)


# -- the package keeps the rules --------------------------------------------------------------
def test_the_package_keeps_its_layers_without_circles_or_private_names():
    packages = package_dirs()
    assert set(packages) == set(PACKAGES), "a package was added or renamed: give it its place in LAYERS and MAY_IMPORT"
    if tomllib is not None:  # every installed package (the rooms and their folders too) has its layer
        listed = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
        assert set(LAYERS) <= set(listed), "a layer is not installed: list it in pyproject.toml's packages"
        stray = [p for p in listed if not any(p == layer or p.startswith(layer + ".") for layer in LAYERS)]
        assert not stray, f"{stray}: a package was added or renamed: give it its place in LAYERS and MAY_IMPORT"
    assert len(modules_of(packages)) > 40  # the checker reads the real tree
    problems = architecture_problems(packages)
    assert not problems, "\n".join(problems)


# -- the checker catches what it is for ------------------------------------------------------
def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _toy(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """A two-layer package `top` (folder top/) over `top.low` (folder low/), checked."""
    _write(tmp_path, {"top/__init__.py": "", "low/__init__.py": "", **files})
    packages = {"top": tmp_path / "top", "top.low": tmp_path / "low"}
    return architecture_problems(packages, ("top", "top.low"), {"top": {"top", "top.low"}, "top.low": {"top.low"}})


# Small packages, each clean or with breaches of one kind, and what the checker says of them.
CASES = {
    "clean": ({
        "top/cli.py": "from .low import base\nfrom top.low.base import helper\n",
        "low/base.py": "def helper():\n    from . import util\n    return util.value\n",
        "low/util.py": "value = 1\n",
    }, []),
    "a circle held open inside a function": ({
        "low/a.py": "from .b import thing\n",
        "low/b.py": "thing = 1\n\ndef late():\n    from top.low import a\n    return a\n",
    }, ["import circle: top.low.a -> top.low.b -> top.low.a"]),
    "a circle through an import at the bottom of a file": ({
        "top/cli.py": "app = object()\n\nfrom . import commands  # noqa: E402\n",
        "top/commands.py": "from .cli import app\n",
    }, ["import circle: top.cli -> top.commands -> top.cli"]),
    "an upward import inside a function": ({
        "top/cli.py": "VERSION = '1'\n",
        "low/jobs.py": "def record():\n    from top.cli import VERSION\n    return VERSION\n",
    }, ["low/jobs.py:2: top.low.jobs imports top.cli, which its layer may not import"]),
    "private names across modules": ({
        "low/readers.py": "def _walk():\n    pass\n",
        "low/writers.py": "from .readers import _walk\n",
        "low/engine.py": "from . import readers\n\nreaders._walk()\n",
        "low/own.py": "def _mine():\n    pass\n\n_mine()\n",  # its own private names are its business
    }, ["low/engine.py:3: top.low.engine takes the private name _walk from top.low.readers",
        "low/writers.py:1: top.low.writers takes the private name _walk from top.low.readers"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_checker_on_small_packages(tmp_path, case):
    files, expected = CASES[case]
    assert sorted(_toy(tmp_path, files)) == expected


# -- size and task names ---------------------------------------------------------------------
MAX_MODULE_LINES = 500  # a module past this is split where a reader would look for the parts
MAX_FUNCTION_LINES = 80  # a function past this is split into named steps
HOMES = "lfcli.pipelines.tasks"


def _registered_tasks() -> tuple[str, ...]:
    from lfcli.pipelines import registry  # the registered names, so that a new task is checked too

    return registry.tasks()


TASK_NAMES = _registered_tasks()


def size_problems(packages: dict[str, Path]) -> list[str]:
    """Modules over MAX_MODULE_LINES lines and functions over MAX_FUNCTION_LINES."""
    problems = []
    for module, path in modules_of(packages).items():
        where = path.relative_to(path.parents[1])
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n") + (not text.endswith("\n"))
        if lines > MAX_MODULE_LINES:
            problems.append(f"{where}: {lines} lines (at most {MAX_MODULE_LINES}: split it at a seam)")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{where}:{node.lineno}: {node.name} has {length} lines (at most {MAX_FUNCTION_LINES})")
    return problems


def _names_in(node: ast.AST) -> list[str]:
    """The task names a literal holds: a string, or a tuple, list or set of strings."""
    elements = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [e.value for e in elements if isinstance(e, ast.Constant) and e.value in TASK_NAMES]


def _task_name_problem(node: ast.AST) -> str | None:
    """What is wrong with `node` outside the homes, if it names a task: a test of a task's name
    (`task == "qa"`, `task in ("qa", ...)`), a table keyed by task names, a list of them, or a
    task's name passed to a call (`registry.get("qa")`, a table row `Head(..., "qa")`,
    `BundledTaskModel(task="qa")`)."""
    if isinstance(node, ast.Compare):
        named = [n for side in (node.left, *node.comparators) for n in _names_in(side)]
        return f"tests the task name {named[0]!r}" if named else None
    if isinstance(node, ast.Dict):
        keys = list(dict.fromkeys(n for k in node.keys if k is not None for n in _names_in(k)))
        return f"a table keyed by task names ({', '.join(keys)})" if len(keys) >= 2 else None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        named = list(dict.fromkeys(_names_in(node)))
        return f"a list of task names ({', '.join(named)})" if len(named) >= 2 else None
    if isinstance(node, ast.Call):
        for value in [*node.args, *(k.value for k in node.keywords)]:
            named = _names_in(value) if isinstance(value, ast.Constant) else []
            if named:
                return f"passes the task name {named[0]!r} to a call"
    return None


def task_name_problems(packages: dict[str, Path], homes: str = HOMES) -> list[str]:
    """Outside the tasks' homes, every place that names a task (_task_name_problem): what is
    particular to a task belongs in its home, found through the registry."""
    problems = []
    for module, path in modules_of(packages).items():
        if module == homes or module.startswith(homes + "."):
            continue
        where = path.relative_to(path.parents[1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            problem = _task_name_problem(node)
            if problem:
                problems.append(f"{where}:{node.lineno}: {problem}")
    return problems


def unexplained_imports(packages: dict[str, Path]) -> list[str]:
    """Imports inside functions without a word of why (a comment on the import, or on another
    import of the same run of import lines): imports go at the top of a module, except an
    optional dependency and the few heavy ones kept lazy so that `lfcli --help` stays fast."""
    problems = []
    for module, path in modules_of(packages).items():
        where = path.relative_to(path.parents[1])
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        for node in ast.walk(ast.parse(text, str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            imports = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
            spans = sorted((n.lineno, n.end_lineno) for n in imports)
            runs: list[list[int]] = []  # runs of adjacent import statements: [first, last]
            for first, last in spans:
                if runs and first == runs[-1][1] + 1:
                    runs[-1][1] = last
                else:
                    runs.append([first, last])
            for first, last in runs:
                if not any("#" in line for line in lines[first - 1:last]):
                    problems.append(f"{where}:{first}: an import inside a function with no comment saying why")
    return sorted(set(problems))


def test_no_module_or_function_too_long():
    problems = size_problems(package_dirs())
    assert not problems, "\n".join(problems)


def test_no_benchmark_function_too_long():
    """The benchmarks are read as often as the package: the same ~80 lines a function."""
    root = Path(__file__).resolve().parents[1] / "benchmarks"
    problems = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"benchmarks/{path.name}:{node.lineno}: {node.name} has {length} lines")
    assert not problems, "\n".join(problems)


def test_imports_inside_functions_say_why():
    problems = unexplained_imports(package_dirs())
    assert not problems, "\n".join(problems)


def test_no_task_name_tested_outside_the_tasks_homes():
    problems = task_name_problems(package_dirs())
    assert not problems, "\n".join(problems)


def test_the_size_and_task_name_checks_catch_what_they_are_for(tmp_path):
    long_body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    _write(tmp_path, {
        "top/__init__.py": "",
        "top/runner.py": f"def run(task):\n    if task == 'qa':\n        return 1\n{long_body}",
        "top/table.py": "LR = {'classify': 1, 'qa': 2}\nok = {'classify': 1}\nBY = {('classify', 'x'): 1, ('qa', 'x'): 2}\n",
        "top/calls.py": "registry.get('qa')\nModel(name='x', task='corefs')\nHead('X', 'classify')\nget(task)\n"
                        "NAMES = ('embed', 'qa')\n",
        "top/big.py": "x = 1\n" * (MAX_MODULE_LINES + 1),
        "top/tasks/__init__.py": "",
        "top/tasks/qa.py": "def mine(task):\n    return task in ('qa', 'corefs')\n",
        "top/lazy.py": "def f():\n    import json\n\n\ndef g():\n    import torch  # lazy: --help\n    import os\n",
    })
    packages = {"top": tmp_path / "top"}
    assert [p.split(":")[0] for p in size_problems(packages)] == ["top/big.py", "top/runner.py"]
    assert sorted(task_name_problems(packages, homes="top.tasks")) == [
        "top/calls.py:1: passes the task name 'qa' to a call",
        "top/calls.py:2: passes the task name 'corefs' to a call",
        "top/calls.py:3: passes the task name 'classify' to a call",
        "top/calls.py:5: a list of task names (embed, qa)",
        "top/runner.py:2: tests the task name 'qa'",
        "top/table.py:1: a table keyed by task names (classify, qa)",
        "top/table.py:3: a table keyed by task names (classify, qa)",
    ]
    assert unexplained_imports(packages) == ["top/lazy.py:2: an import inside a function with no comment saying why"]
