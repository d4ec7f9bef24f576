"Packaging invariants: pins agree everywhere, nbdev settings as the project needs, paths independent of the cwd."
import configparser, os, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _settings():
    cfg = configparser.ConfigParser(delimiters=['='])
    cfg.read(ROOT / 'settings.ini')
    return cfg['DEFAULT']

def _cpu_pins(s):
    "The CPU set-up's exact versions: the requirements, with `cpu_pins` for those that are ranges (scripts/setup.sh)."
    pins = dict(r.split('==') for r in s['cpu_pins'].split())
    return [f"{name}=={pins[name]}" if name in pins else r
            for r in s['requirements'].split() for name in [re.match(r'[A-Za-z0-9_.\-]+', r)[0]]]

def test_environment_yml_has_the_same_pins():
    s = _settings()
    want = set(_cpu_pins(s) + s['serve_requirements'].split() + s['exports_requirements'].split() + s['dev_requirements'].split())
    got = set(re.findall(r'^\s+- ([A-Za-z0-9_.\-]+==[^\s]+)\s*$', (ROOT / 'environment.yml').read_text(), re.M))
    assert got == want, f"only in environment.yml: {got - want}; only in settings.ini: {want - got}"

def test_numeric_dependencies_are_pinned():
    "Every numeric dependency is exact on CPU; the ranges (where the GPU node differs) admit their CPU pins."
    from packaging.requirements import Requirement
    s = _settings()
    reqs = dict(r.split('==') for r in _cpu_pins(s))
    for pkg in ['torch', 'torchvision', 'transformers', 'trl', 'peft', 'accelerate', 'papermill', 'matplotlib',
                'pandas', 'open_clip_torch', 'playwright', 'gguf', 'nbdev', 'fastcore', 'execnb', 'numpy']:
        assert pkg in reqs, f"settings.ini: {pkg} has no exact CPU version (== in requirements, or in cpu_pins)"
    assert (reqs['nbdev'], reqs['fastcore'], reqs['execnb']) == ('2.4.14', '1.14.5', '0.1.18')
    ranges = {Requirement(r).name: Requirement(r).specifier for r in s['requirements'].split()}
    for pin in s['cpu_pins'].split():
        name, version = pin.split('==')
        assert name in ranges and ranges[name].contains(version), f"settings.ini: cpu_pins {pin} is outside requirements' {name}{ranges.get(name)}"
        assert '==' not in str(ranges[name]), f"settings.ini: {name} is in cpu_pins, so its requirement should be a range"
    assert all(ranges[n].contains(v) for n, v in [('torch', '2.11.0+cu130'), ('torchvision', '0.26.0'), ('numpy', '2.3.5')])

def test_nbdev_settings():
    s = _settings()
    assert s['lib_name'] == s['lib_path'] == 'sweet_rl'
    assert s['allowed_cell_metadata_keys'] == 'tags'
    assert {'notest', 'slow', 'gpu'} <= set(s['tst_flags'].split())

def test_vllm_is_optional_and_not_imported():
    code = "import sys, sweet_rl, sweet_rl.base.core; import importlib; [importlib.import_module(m) for m in " \
           "('.'.join(('sweet_rl',) + p.relative_to(sweet_rl.base.core.PKG_DIR).with_suffix('').parts) " \
           "for p in sweet_rl.base.core.PKG_DIR.rglob('*.py') if not p.stem.startswith('_'))]; " \
           "assert 'vllm' not in sys.modules, 'vllm imported at import time'"
    subprocess.run([sys.executable, '-c', code], check=True, cwd='/')

def test_paths_do_not_depend_on_cwd(tmp_path):
    out = subprocess.run([sys.executable, '-c', 'from sweet_rl.base.core import PKG_DIR, REPO_ROOT; print(PKG_DIR); print(REPO_ROOT)'],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert Path(out[0]) == ROOT / 'sweet_rl' and Path(out[1]) == ROOT

def test_wheel_builds_without_warnings_and_carries_every_file(tmp_path):
    "The wheel pip builds holds every module and every file under sweet_rl/assets, and setuptools warns about nothing."
    import shutil, zipfile, pytest, setuptools
    if int(setuptools.__version__.split('.')[0]) < 77: pytest.skip('pyproject.toml builds with setuptools >= 77')
    src = tmp_path / 'src'  # a copy, so that the build leaves no build/ or egg-info in the checkout
    shutil.copytree(ROOT / 'sweet_rl', src / 'sweet_rl', ignore=shutil.ignore_patterns('__pycache__', '*.pyc', '.ipynb_checkpoints'))
    for f in ['setup.py', 'settings.ini', 'pyproject.toml', 'MANIFEST.in', 'README.md']: shutil.copy(ROOT / f, src / f)
    r = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-index', '--no-build-isolation',
                        '-w', str(tmp_path / 'whl'), str(src)], capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert 'Warning:' not in out, out  # e.g. "License classifiers are deprecated", "Package 'sweet_rl.assets...' is absent"
    with zipfile.ZipFile(next((tmp_path / 'whl').glob('sweet_rl-*.whl'))) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith('.dist-info/METADATA'))).decode()
    pkg = src / 'sweet_rl'
    want = {f.relative_to(src).as_posix() for f in pkg.rglob('*') if f.is_file() and (f.suffix == '.py' or 'assets' in f.parts)}
    assert {'sweet_rl/envs/frontend.py', 'sweet_rl/assets/colbench/backend_tasks/test.jsonl',
            'sweet_rl/assets/frontend/tailwindcss-browser-4.3.4.js'} <= want
    assert want <= names, f"missing from the wheel: {sorted(want - names)}"
    assert 'License-Expression: Apache-2.0' in meta.splitlines() and 'Classifier: License ::' not in meta
