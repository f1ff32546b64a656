"""nbflow's layout (issue 41): the layers import one way, without cycles, files stay short,
and a private name stays in its package.

Every module under nbflow/ is parsed with ast; an import inside a function counts as much as
one at the top of the file. A module's unit is its package under nbflow/ (nbflow/ops/conv.py:
"ops") or, for a top-level file, its own name ("nbflow" for the package's face)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "nbflow"

# the layers, lowest first: a unit imports from its own layer and those below
LAYERS = [
    {"core", "argcheck"},  # the op declaration and bind, errors, dtypes, views, hooks; checks
    {"runtime"},  # devices, recycled buffers, the collectives' transport
    {"kernels"},  # numba kernels and their generators
    {"ops"},  # the op families
    {"linalg", "special", "masked", "signal", "fft"},  # PyTorch's namespaces over the ops
    {"eager"},  # Tensor and its tape, operators, GPU tensors, checking, autocast
    {"autograd"},  # the backward driver, Function, the functional API
    {"graph"},  # Program, tracing, jit, the executor, graph control flow
    {"control", "func", "data", "distributed", "distributions", "testing", "dlpack"}
    | {"array_api", "checkpoint", "safetensors_io"},  # libraries on tensors and programs
    {"nn"},
    {"optim", "utils", "compiled"},
    # the package's face, the old paths kept as re-exports, and what builds on the face
    {"nbflow", "amp", "device", "dtypes", "errors", "tensor", "onnx", "precompile", "torch_names"},
]
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}

# imports that still run up a layer, each closing a cycle (issue 41; the review's "cuts"
# table says how each is paid): (importing module, unit it reaches) -> what it fetches
KNOWN_UPWARD = {
    ("nbflow.runtime.device", "kernels"): "cuda.skeletons.contiguous for a strided host copy",
    ("nbflow.ops.factorizations", "linalg"): "solve_triangular, cholesky, eigvalsh in rules",
    ("nbflow.eager.tensor", "autograd"): "Tensor.backward",
    ("nbflow.eager.tensor", "dlpack"): "Tensor.__dlpack__",
    ("nbflow.eager.device_tensor", "dlpack"): "CudaTensor.__dlpack__",
    ("nbflow.eager.tensor", "array_api"): "Tensor.__array_namespace__",
    ("nbflow.eager.operators", "nn"): "Tensor.hardshrink and Tensor.prelu",
}
BUDGET = 800  # lines per file
# files over the budget today, capped at their current length: they may shrink, not grow
OVER_BUDGET = {
    "kernels/cuda/skeletons.py": 1777,  # the CUDA skeletons of every kernel family
    "ops/elementwise.py": 1334,  # one short declaration per elementwise op
    "ops/conv.py": 1081,  # convolutions, pools and their gradients
    "graph/serialize.py": 1230,  # the program format, its schema checks and its loader
    "eager/tensor.py": 1132,  # Tensor, the eager trace and its plans
    "ops/special.py": 1191,  # one short declaration per special function
    "array_api/__init__.py": 904,  # the Array API standard's functions
    "ops/index.py": 866,
    "ops/reduce.py": 839,
    "graph/control.py": 880,  # cond and while as ops with sub-blocks
    "autograd/function.py": 836,
    "optim/lr_scheduler.py": 808,  # torch.optim.lr_scheduler's 16 schedules, one module as torch's
}


def _modules():
    """{module name: path} of every module under nbflow/."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("nbflow", *path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _package(name, path):
    """The package a module sits in, its directory (a package's __init__: the package)."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _from_imports(name, path):
    """(module, name) of every `from module import name` in the file, relative ones resolved."""
    package = _package(name, path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            yield from ((base, a.name) for a in node.names)


def _imports(name, path, modules):
    """The nbflow modules that `name` imports, anywhere in the file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
    for base, imported in _from_imports(name, path):
        yield f"{base}.{imported}" if f"{base}.{imported}" in modules else base


def _unit(module):
    return module.split(".")[1] if "." in module else module


def _edges():
    """{(importing module, imported unit)} between different units."""
    modules = _modules()
    edges = set()
    for name, path in modules.items():
        for target in _imports(name, path, modules):
            if target.split(".")[0] == "nbflow" and _unit(target) != _unit(name):
                edges.add((name, _unit(target)))
    return edges


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in _modules()}
    assert not units - LAYER.keys(), "give the new package or file a layer in LAYERS"


def test_imports_run_down_the_layers():
    up = {e for e in _edges() if LAYER[_unit(e[0])] < LAYER.get(e[1], 0)}
    assert up <= KNOWN_UPWARD.keys(), f"imports up a layer: {sorted(up - KNOWN_UPWARD.keys())}"
    assert KNOWN_UPWARD.keys() <= up, f"paid, out of the list: {KNOWN_UPWARD.keys() - up}"


def test_no_import_cycles_between_units():
    graph = {}
    for module, unit in _edges() - KNOWN_UPWARD.keys():
        graph.setdefault(_unit(module), set()).add(unit)

    def reach(start):
        seen, stack = set(), [start]
        while stack:
            for nxt in graph.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    cycles = sorted(u for u in graph if u in reach(u))
    assert not cycles, f"units on an import cycle: {cycles}"


def test_files_keep_to_the_line_budget():
    lengths = {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _modules().values()
    }
    over = {f: n for f, n in lengths.items() if n > OVER_BUDGET.get(f, BUDGET)}
    assert not over, f"over {BUDGET} lines (or over the cap in OVER_BUDGET): {over}"


def test_nn_functional_holds_functions_only():
    """nn/functional/ (PyTorch's F) is built on the ops and imports no class of nn/modules/,
    which call it: the two halves of nn stay one way round."""
    modules = _modules()
    back = {
        (name, target)
        for name, path in modules.items()
        if name.startswith("nbflow.nn.functional")
        for target in _imports(name, path, modules)
        if target.startswith("nbflow.nn.modules")
    }
    assert not back, f"nn.functional imports nn.modules: {sorted(back)}"


def test_private_names_stay_in_their_package():
    """A name with one leading underscore belongs to its package (directory): a module imports
    it from a module of its own package only. A helper that other packages use has a public
    name in the file that owns it."""
    modules = _modules()

    def owner(source):
        return _package(source, modules[source]) if source in modules else source

    leaks = sorted(
        (name, source, imported)
        for name, path in modules.items()
        for source, imported in _from_imports(name, path)
        if imported.startswith("_")
        and not imported.startswith("__")
        and source.split(".")[0] == "nbflow"
        and owner(source) != _package(name, path)
    )
    for leak in leaks:
        print(leak)
    assert not leaks, f"private names from another package (module, source, name): {leaks}"
