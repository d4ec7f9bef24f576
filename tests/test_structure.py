"""The library's shape, read from its source: data flows one way through the layers below, no module takes another's
private names, no method is attached to a class by assignment, `__all__` exports no bare generic names, and the
environments are plugins: nothing outside `envs/` imports one or compares a name with an environment's."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / 'sweet_rl'
# Four floors, one folder each: base/ (what every method stands on), envs/ (the environments), methods/ (the
# trainers and scorers), runs/ (evaluation, launch, studies). A folder imports only its own and lower folders.
FOLDERS = ['base', 'envs', 'methods', 'runs']
# Within the folders, each module may import only modules of an earlier layer.
LAYERS = [['base.core'], ['base.data', 'base.models', 'base.sandbox'], ['base.protocol', 'base.render'],
          ['base.train', 'base.rollout'],
          ['envs.backend', 'envs.frontend', 'envs.search', 'envs.taxi', 'envs.explore'],
          ['envs.clarify'],  # clarify builds on the backend environment's evaluator
          ['envs.testbed'],  # the credit testbed: clarify's episode protocol with varied families
          ['methods.critic'], ['methods.vision_critic'], ['methods.scorers'],
          ['methods.actor', 'methods.mtgrpo', 'methods.reflect'],
          ['runs.evaluate'], ['runs.credit'], ['runs.credit_study'], ['runs.launch'], ['runs.offline'], ['runs.critic_run', 'runs.mtgrpo_run', 'runs.reflect_run'], ['runs.pipeline'], ['runs.exports']]
LEVEL = {m: i for i, layer in enumerate(LAYERS) for m in layer}
GENERIC = {'score', 'inputs', 'run', 'main', 'plan', 'select', 'figure', 'expand', 'collect', 'unwrap', 'checkpoints',
           'describe', 'close', 'render', 'embed'}
KNOWN_GENERIC = {('runs.launch', 'main'), ('runs.pipeline', 'main'), ('base.models', 'main')}  # the command-line entry points


def modules() -> dict:
    "Module name ('envs.backend') -> parsed source, for every generated module of the package."
    out = {}
    for p in sorted(PKG.rglob('*.py')):
        name = '.'.join(p.relative_to(PKG).with_suffix('').parts)
        if name == '_modidx' or name.endswith('__init__'): continue
        out[name] = ast.parse(p.read_text(), str(p))
    return out


def package_imports(name:str, tree:ast.Module) -> list[tuple[str, list[str], int]]:
    "`(module imported, names taken, line)` for every import of another sweet_rl module, at any depth."
    out, pkg = [], name.split('.')[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = pkg[:len(pkg) - node.level + 1] if node.level > 1 else pkg
                target = '.'.join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith('sweet_rl.'): target = node.module[len('sweet_rl.'):]
            else: continue
            out.append((target, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name[len('sweet_rl.'):], [], node.lineno) for a in node.names if a.name.startswith('sweet_rl.')]
    return out


MODULES = modules()


def test_every_module_has_a_layer():
    assert set(MODULES) == set(LEVEL), f"add new modules to LAYERS: {sorted(set(MODULES) ^ set(LEVEL))}"


def test_layers_follow_the_folders():
    "The layers climb the folders in order: base's layers first, runs' last."
    folders = [FOLDERS.index(layer[0].split('.')[0]) for layer in LAYERS]
    assert all({m.split('.')[0] for m in layer} == {FOLDERS[f]} for layer, f in zip(LAYERS, folders)), LAYERS
    assert folders == sorted(folders), folders


def plugin_loads(init:Path, node) -> bool:
    "The docstring, and `from . import <modules>` in `envs/__init__.py`: the plugin package loads its environments."
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant): return True
    return init.parent.name == 'envs' and isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module


def test_package_faces_define_nothing():
    "A folder's `__init__.py` holds no code: a name lives in one module, imported from there."
    for init in PKG.rglob('__init__.py'):
        body = [n for n in ast.parse(init.read_text()).body
                if not (isinstance(n, ast.Assign) and init.parent == PKG) and not plugin_loads(init, n)]
        assert not body, f"{init.relative_to(PKG.parent)} defines or imports something: keep folders' faces empty"


@pytest.mark.parametrize('name', sorted(MODULES))
def test_imports_run_one_way(name):
    "A module imports only modules of earlier layers: no cycle, no reach up or sideways (function-level imports too)."
    bad = [(t, line) for t, _, line in package_imports(name, MODULES[name]) if t in LEVEL and LEVEL[t] >= LEVEL[name]]
    assert not bad, f"sweet_rl.{name} imports {bad}: layer {LEVEL[name]} may import layers below it only"


@pytest.mark.parametrize('name', sorted(MODULES))
def test_no_private_imports_across_modules(name):
    bad = [(t, n, line) for t, names, line in package_imports(name, MODULES[name]) for n in names if n.startswith('_')]
    assert not bad, f"sweet_rl.{name} imports private names of other modules: {bad}"


@pytest.mark.parametrize('name', sorted(MODULES))
def test_no_methods_attached_by_assignment(name):
    "`Class.method = function` at module level hides a method from its class: `@patch` (fastcore) says what it is."
    classes = {n.name for n in MODULES[name].body if isinstance(n, ast.ClassDef)}
    bad = []
    for node in MODULES[name].body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in classes:
                        bad.append((f"{e.value.id}.{e.attr}", node.lineno))
    assert not bad, f"sweet_rl.{name}: attributes assigned to classes after their definition: {bad}"


@pytest.mark.parametrize('name', sorted(MODULES))
def test_all_exports_no_bare_generic_names(name):
    exported = next((ast.literal_eval(n.value) for n in MODULES[name].body if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == '__all__' for t in n.targets)), [])
    bad = [n for n in exported if n in GENERIC and (name, n) not in KNOWN_GENERIC]
    assert not bad, f"sweet_rl.{name} exports generic names {bad}: a `from sweet_rl.{name} import *` would shadow them"


def multiline_docstrings(tree:ast.Module) -> list[str]:
    "Names of the functions and classes whose docstring runs over more than one line."
    return [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and '\n' in (ast.get_docstring(n, clean=False) or '').strip()]


@pytest.mark.parametrize('name', sorted(MODULES))
def test_docstrings_are_one_line(name):
    "A docstring says what a definition does in one line; why and how belong in the notebook's prose around it."
    bad = multiline_docstrings(MODULES[name])
    assert not bad, f"sweet_rl.{name}: multi-line docstrings on {bad}: keep one line, move the rest into the notebook's markdown"


def test_the_checks_catch_what_they_claim(tmp_path):
    "The same checks on a small bad module find its upward import, private import and attached method."
    bad = ast.parse("from ..methods.critic import _pair_batch\nfrom sweet_rl.methods.actor import Actor\nclass A: pass\n"
                    "def f(self): pass\nA.f = f\n")
    imports = package_imports('base.train', bad)
    assert [(t, LEVEL[t] >= LEVEL['base.train']) for t, _, _ in imports] == [('methods.critic', True), ('methods.actor', True)]
    assert [n for _, names, _ in imports for n in names if n.startswith('_')] == ['_pair_batch']
    assert any(isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Attribute) for n in bad.body)
    assert multiline_docstrings(ast.parse('def f():\n    """One.\n    Two."""\ndef g():\n    "One."\n')) == ['f']


# Environments are plugins: each registers itself (`register_env`) in its module under envs/, and base/, methods/ and
# runs/ reach one only through the registry. Two studies of one environment are the known exceptions, and the
# evaluation's record shapes still carry ColBench's names; each entry must still be needed (a fix removes it).
ENV_FREE = ('base', 'methods', 'runs')
KNOWN_ENV_USERS = {'runs.credit': 'the credit study of the clarify environment',
                   'runs.credit_study': 'the credit study of the clarify testbed',
                   'runs.evaluate': "record shapes named like ColBench's kinds; candidate_rewards runs the backend's tests"}


def registered_envs() -> set:
    "Every kind the environments' modules register: the first argument of each `register_env` call under envs/."
    return {n.args[0].value for name, tree in MODULES.items() if name.startswith('envs.') for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, 'id', None) == 'register_env' and n.args
            and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)}


def env_uses(name:str, tree:ast.Module, kinds:set) -> list:
    "`(what, line)` for each import of an environment (statement or importlib string) and each comparison with a kind."
    out = [(f"imports {t}", line) for t, _, line in package_imports(name, tree) if t == 'envs' or t.startswith('envs.')]
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith('sweet_rl.envs'):
            out.append((f"names module {n.value!r}", n.lineno))
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            consts = [c for s in sides for c in (s.elts if isinstance(s, (ast.Tuple, ast.List, ast.Set)) else [s])
                      if isinstance(c, ast.Constant) and c.value in kinds]
            out += [(f"compares with environment {c.value!r}", n.lineno) for c in consts]
    return out


LIBRARY_ENVS = {'backend', 'frontend', 'search', 'lookup', 'clarify', 'taxi', 'explore'}


def test_the_environments_register_themselves():
    assert registered_envs() >= LIBRARY_ENVS, registered_envs()


@pytest.mark.parametrize('name', sorted(m for m in MODULES if m.split('.')[0] in ENV_FREE))
def test_no_environment_below_the_registry(name):
    "base/, methods/ and runs/ neither import an environment (statically or by an importlib string) nor compare a name with one."
    found = env_uses(name, MODULES[name], registered_envs() | LIBRARY_ENVS)
    if name in KNOWN_ENV_USERS: assert found, f"sweet_rl.{name} no longer uses an environment: drop it from KNOWN_ENV_USERS"
    else: assert not found, f"sweet_rl.{name} knows environments by name: {found}; give the environment's spec that knowledge"


def test_the_environment_check_catches_what_it_claims():
    bad = ast.parse("from ..envs.taxi import TaxiConfig\nimport importlib\nimportlib.import_module('sweet_rl.envs.search')\n"
                    "def f(kind, task):\n    if kind == 'frontend' or task.kind in ('backend', 'mine'): return 1\n    return kind == 'plain'\n")
    found = env_uses('methods.x', bad, {'backend', 'frontend'})
    assert [w for w, _ in found] == ['imports envs.taxi', "names module 'sweet_rl.envs.search'",
                                     "compares with environment 'frontend'", "compares with environment 'backend'"], found
