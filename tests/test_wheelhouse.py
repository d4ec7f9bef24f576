"scripts/wheelhouse.py with real pip on tiny local wheels (no index): what a build leaves out, and what install refuses."
import configparser, hashlib, json, os, shutil, subprocess, sys, zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / 'scripts' / 'wheelhouse.py'
sys.path.insert(0, str(SCRIPT.parent))
import wheelhouse

def make_wheel(folder, name, version, requires=()):
    "A minimal pure-Python wheel: one module and its metadata."
    mod, dist = name.replace('-', '_'), f"{name.replace('-', '_')}-{version}"
    meta = ['Metadata-Version: 2.1', f'Name: {name}', f'Version: {version}', *[f'Requires-Dist: {r}' for r in requires]]
    files = {f'{mod}.py': f'VERSION = {version!r}\n', f'{dist}.dist-info/METADATA': '\n'.join(meta) + '\n',
             f'{dist}.dist-info/WHEEL': 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n'}
    files[f'{dist}.dist-info/RECORD'] = ''.join(f'{f},,\n' for f in [*files, f'{dist}.dist-info/RECORD'])
    with zipfile.ZipFile(folder / f'{dist}-py3-none-any.whl', 'w') as z:
        for f, text in files.items(): z.writestr(f, text)

@pytest.fixture(scope='module')
def index(tmp_path_factory):
    "A find-links folder standing in for the registry."
    d = tmp_path_factory.mktemp('index')
    for version in ['1.0', '2.0']: make_wheel(d, 'wh-base', version)
    make_wheel(d, 'wh-app', '1.0', ['wh-base>=1.0'])
    make_wheel(d, 'wh-marked', '1.0', ['wh-base; python_version > "3.11"'])
    make_wheel(d, 'wh-lib', '1.0', ['wh-base==1.0'])
    make_wheel(d, 'wh-kern', '1.0', ['wh-base>=1.0']); make_wheel(d, 'wh-kern', '2.0', ['wh-base>=2.0'])
    make_wheel(d, 'wh-top', '1.0', ['wh-lib', 'wh-kern'])
    return d

def run(*args):
    "The script's CLI, with the machine's pip configuration (extra indexes, find-links) cleared."
    env = {k: v for k, v in os.environ.items() if not k.startswith('PIP_')} | {'PIP_CONFIG_FILE': os.devnull}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120)

def build(index, tmp_path, node_text, *reqs, flags=(), node_name='freeze.txt'):
    node = tmp_path / node_name; node.write_text(node_text)
    out = tmp_path / 'wh'
    return run('build', *reqs, '--node', str(node), '--out', str(out), *flags, '--', '--no-index', '--find-links', str(index)), out

def wheels(out): return sorted((w['name'], w['version']) for w in json.loads((out / 'manifest.json').read_text())['wheels'])

@pytest.fixture(scope='module')
def built(index, tmp_path_factory):
    "wh-app for an empty node: wh-app and wh-base 2.0."
    r, out = build(index, tmp_path_factory.mktemp('built'), '', 'wh-app')
    assert r.returncode == 0, r.stderr
    return out

def test_build_leaves_out_what_the_node_has(index, built, tmp_path):
    assert wheels(built) == [('wh-app', '1.0'), ('wh-base', '2.0')]
    r, out = build(index, tmp_path, 'wh-base==1.0\npip==26.3\n', 'wh-app')
    assert r.returncode == 0, r.stderr
    assert wheels(out) == [('wh-app', '1.0')]
    assert sorted(p.name for p in out.iterdir()) == ['manifest.json', 'wh_app-1.0-py3-none-any.whl']

def test_manifest_sums_and_sizes(built):
    manifest = json.loads((built / 'manifest.json').read_text())
    for w in manifest['wheels']:
        data = (built / w['filename']).read_bytes()
        assert (w['sha256'], w['size']) == (hashlib.sha256(data).hexdigest(), len(data))
    assert manifest['requirements'] == ['wh-app'] and manifest['node']['packages'] == 0 and manifest['pip']

def test_build_refuses_to_replace_a_node_package(index, tmp_path):
    r, out = build(index, tmp_path, 'wh-base==0.5\n', 'wh-app')
    assert r.returncode != 0 and 'wh-base 0.5 -> 2.0' in r.stderr and not out.exists()

@pytest.mark.parametrize('python,want', [('3.11', [('wh-marked', '1.0')]), ('3.12', [('wh-base', '2.0'), ('wh-marked', '1.0')])])
def test_markers_are_evaluated_for_the_nodes_python(index, tmp_path, python, want):
    "wh-marked needs wh-base only on Python > 3.11, whichever Python runs the build."
    r, out = build(index, tmp_path, '', 'wh-marked', flags=('--python-version', python))
    assert r.returncode == 0, r.stderr
    assert wheels(out) == want

def test_pip_inspect_keeps_the_node_packages_requirements(index, tmp_path):
    "A freeze hides that wh-lib needs wh-base 1.0 (so wh-kern 2.0 would replace it); pip inspect shows it."
    r, _ = build(index, tmp_path, 'wh-lib==1.0\nwh-base==1.0\n', 'wh-top')
    assert r.returncode != 0 and 'wh-base 1.0 -> 2.0' in r.stderr
    inspect = {'version': '1', 'environment': {}, 'installed': [
        {'metadata': {'name': 'wh-lib', 'version': '1.0', 'requires_dist': ['wh-base==1.0']}},
        {'metadata': {'name': 'wh-base', 'version': '1.0'}}]}
    inspect['environment'] = wheelhouse.node_markers('x86_64', '%d.%d' % sys.version_info[:2])
    r, out = build(index, tmp_path, json.dumps(inspect), 'wh-top', node_name='inspect.json')
    assert r.returncode == 0, r.stderr
    assert wheels(out) == [('wh-kern', '1.0'), ('wh-top', '1.0')]

def test_freeze_lines_must_be_pins(tmp_path):
    (tmp_path / 'freeze.txt').write_text('wh-base==1.0\nwh-app @ file:///tmp/wh_app.whl\n')
    with pytest.raises(SystemExit, match=r'freeze.txt:2: expected .name==version.'):
        wheelhouse.read_node(tmp_path / 'freeze.txt')

def test_install_from_the_folder_alone(built, tmp_path):
    r = run('install', str(built), '--', '--target', str(tmp_path / 'site'), '--quiet')
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / 'site').glob('*.dist-info')) == ['wh_app-1.0.dist-info', 'wh_base-2.0.dist-info']

def _alter(folder): p = folder / 'wh_app-1.0-py3-none-any.whl'; data = bytearray(p.read_bytes()); data[100] ^= 1; p.write_bytes(data); return p
def _remove(folder): p = folder / 'wh_base-2.0-py3-none-any.whl'; p.unlink(); return p
def _add(folder): p = folder / 'wh_extra-1.0-py3-none-any.whl'; shutil.copy(folder / 'wh_app-1.0-py3-none-any.whl', p); return p

@pytest.mark.parametrize('damage,says', [(_alter, 'altered'), (_remove, 'missing'), (_add, 'not listed in manifest.json')])
def test_install_refuses_a_changed_folder(built, tmp_path, damage, says):
    folder = tmp_path / 'wh'; shutil.copytree(built, folder)
    bad = damage(folder)
    r = run('install', str(folder), '--', '--target', str(tmp_path / 'site'))
    assert r.returncode != 0 and f'{bad}: {says}' in r.stderr, r.stderr
    assert not (tmp_path / 'site').exists()  # pip never ran

def test_install_refuses_another_python(built, tmp_path):
    folder = tmp_path / 'wh'; shutil.copytree(built, folder)
    manifest = json.loads((folder / 'manifest.json').read_text()); manifest['python_version'] = '3.99'
    (folder / 'manifest.json').write_text(json.dumps(manifest))
    r = run('install', str(folder), '--', '--target', str(tmp_path / 'site'))
    assert r.returncode != 0 and 'is for Python 3.99' in r.stderr and not (tmp_path / 'site').exists()

def test_gpu_extra_from_settings():
    "The gpu extra is the vllm that pins torch 2.11 and a DeepSpeed that works with LoRA under ZeRO-3; the base comes as is."
    assert wheelhouse.settings_requirements(['gpu'], with_base=False) == ['vllm==0.24.0', 'deepspeed>=0.19.8']
    reqs = wheelhouse.settings_requirements(['gpu'], with_base=True)
    assert reqs[-2:] == ['vllm==0.24.0', 'deepspeed>=0.19.8'] and 'torch>=2.11.0,<2.15' in reqs

FROZEN_GPU_NODE = Path(__file__).parent / 'fixtures' / 'gpu_node_py312.inspect.json'

def test_requirements_and_gpu_extra_resolve_on_a_frozen_gpu_node(tmp_path):
    "pip, with no index at all, finds sweet_rl's requirements and gpu extra satisfied by a CUDA 13 torch 2.11 node's packages."
    pkgs, markers = wheelhouse.read_node(FROZEN_GPU_NODE)
    assert pkgs['torch'][0] == '2.11.0+cu130' and pkgs['numpy'][0] == '2.3.5' and 'Requires-Dist: torch==2.11.0' in pkgs['vllm'][1]
    cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(wheelhouse.SETTINGS)
    reqs = cfg['DEFAULT']['requirements'].split() + cfg['DEFAULT']['gpu_requirements'].split()  # what setup.py declares
    assert wheelhouse.resolve(reqs, pkgs, [], markers, ['--no-index'], tmp_path) == []  # nothing to install

def test_build_makes_a_wheel_of_a_source_only_package(index, tmp_path):
    "A requirement the index has only as source (as PyPI has DeepSpeed) is built into a wheel, listed in the manifest."
    src = tmp_path / 'src'; (src / 'wh_src').mkdir(parents=True)
    (src / 'wh_src' / '__init__.py').write_text("VERSION = '1.0'\n")
    (src / 'setup.py').write_text("from setuptools import setup\nsetup(name='wh-src', version='1.0', packages=['wh_src'], install_requires=['wh-base'])\n")
    sdists = tmp_path / 'sdists'; sdists.mkdir()
    subprocess.run([sys.executable, 'setup.py', '-q', 'sdist', '-d', str(sdists)], cwd=src, check=True, capture_output=True)
    r, out = build(index, tmp_path, '', 'wh-src', flags=('--build-wheel', 'wh-src'))
    assert r.returncode != 0 and 'wh-src' in r.stderr  # the wheel-only index has no wheel of it
    r = run('build', 'wh-src', '--build-wheel', 'wh-src', '--node', str(tmp_path / 'freeze.txt'), '--out', str(tmp_path / 'wh2'),
            '--', '--no-index', '--find-links', str(index), '--find-links', str(sdists), '--no-build-isolation')
    assert r.returncode == 0, r.stderr
    assert wheels(tmp_path / 'wh2') == [('wh-base', '2.0'), ('wh-src', '1.0')]
    made = json.loads((tmp_path / 'wh2' / 'manifest.json').read_text())['built_from_source']
    assert made == [{'requirement': 'wh-src', 'env': {}, 'filename': 'wh_src-1.0-py3-none-any.whl'}]
