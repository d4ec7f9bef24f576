#!/usr/bin/env python3
"""Offline install of requirements (e.g. sweet_rl's `gpu` extra) on a node without internet: `build`, copy, `install`.

`build` runs on a machine with registry access and downloads exactly the wheels that `pip install REQS` would install
on the node, given what the node has: `python -m pip inspect` there (every installed distribution with its metadata,
and the node's environment markers), or `python -m pip list --format=freeze` (names and versions only).
How: each node package becomes an installed stub (a `.dist-info` with its name, version and, from `pip inspect`, its
requirements) in an empty folder, and pip resolves `install --dry-run --report` in a process whose `sys.path` is that
folder plus the standard library, with the node's wheel tags (`--platform`, `--python-version`, `--abi`) and the node's
environment markers (pip evaluates markers such as `python_version > "3.11"` against the interpreter running it, so
the runner substitutes the node's). pip thus decides as it would on the node: an installed torch 2.11.0+cu130
satisfies `torch==2.11.0` whether or not the index has that build, and torch's own pins (e.g. `cuda-toolkit==13.0.2`)
constrain the new packages. The report lists what pip would install there, and nothing else. If that replaces a node
package, `build` refuses (`--allow-replace` accepts it): from a freeze file the node packages' own requirements are
unknown, so a replacement may break one of them (`pip inspect` input makes pip account for them). `pip download
--no-deps --require-hashes` then fetches exactly the resolved files, and `manifest.json` records name, version,
filename, sha256 and size of each, with the inputs (requirements, the node file's sha256, platform, Python) and pip's
version.

A requirement that PyPI has only as source (DeepSpeed; `SOURCE_BUILDS`, or `--build-wheel NAME`) is first built into a
wheel here with `pip wheel --no-deps` (DeepSpeed with DS_BUILD_OPS=0: pure Python, its ops compiled on the node when
first used), which then resolves and downloads like the others from a local `--find-links` folder; `manifest.json`
lists it under `built_from_source`.

`install` runs on the node, with any Python that has pip (this file needs only the standard library): it checks the
folder against `manifest.json` and refuses, naming the file, any wheel that is missing, altered (size or sha256) or not
listed; then it runs `pip install --no-index --find-links DIR --only-binary=:all: REQS` with pip's configuration files
and PIP_* variables cleared, so that only the folder and what is installed can satisfy a requirement.
Arguments after `--` go to pip (`install`: e.g. `--target DIR`; `build`: index options such as `--index-url`).

    python -m pip inspect > node.json                                     # on the node
    python scripts/wheelhouse.py build --extra gpu --with-base --node node.json --platform manylinux_2_35_x86_64 --out wh
    python scripts/wheelhouse.py install wh                               # on the node, after copying wh/
"""
import argparse, configparser, datetime, hashlib, importlib.metadata, json, os, re, subprocess, sys, tempfile
from pathlib import Path

SETTINGS = Path(__file__).resolve().parents[1] / 'settings.ini'

# Started with `python -S`: sys.path is the standard library; pip's folder is added only to import pip, then the
# stub folder replaces it, and the node's environment markers replace the running interpreter's.
RUNNER = r'''
import json, sys
stdlib = [p for p in sys.path if p]
sys.path.insert(0, sys.argv[3])
from pip._internal.cli.main import main
from pip._vendor.packaging import markers
node = markers.default_environment() | json.loads(sys.argv[1])
markers.default_environment = lambda: dict(node)
sys.path[:] = [sys.argv[2]] + stdlib
sys.exit(main(sys.argv[4:]))
'''

def canonical(name): return re.sub(r'[-_.]+', '-', name).lower()
def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''): h.update(block)
    return h.hexdigest()

def read_node(path):
    "The node's packages {name: (version, metadata lines)} and environment markers ({} for a freeze file)."
    text = Path(path).read_text()
    if text.lstrip().startswith('{'):  # `pip inspect`: metadata of every installed distribution, and the markers
        report = json.loads(text)
        meta = [d['metadata'] for d in report['installed']]
        lines = lambda m: ([f'Requires-Dist: {r}' for r in m.get('requires_dist', [])] +
                           [f'Provides-Extra: {e}' for e in m.get('provides_extra', [])])
        return {canonical(m['name']): (m['version'], lines(m)) for m in meta}, report['environment']
    pkgs = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split('#')[0].strip()
        if not line: continue
        m = re.fullmatch(r'([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)', line)
        if not m: sys.exit(f"{path}:{n}: expected 'name==version', got {line!r} "
                           "(write the file with `python -m pip list --format=freeze`, or use `pip inspect`)")
        pkgs[canonical(m[1])] = (m[2], [])
    return pkgs, {}

def settings_requirements(extras, with_base):
    "sweet_rl's extras from settings.ini; `with_base` adds its base requirements (ranges where CPU and GPU differ)."
    cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(SETTINGS); cfg = cfg['DEFAULT']
    reqs = cfg['requirements'].split() if with_base else []
    for e in extras:
        if f'{e}_requirements' not in cfg: sys.exit(f"{SETTINGS}: no '{e}_requirements' for extra {e!r}")
        reqs += cfg[f'{e}_requirements'].split()
    return reqs

def manylinux(platform):
    "Wheel platforms a glibc-2.N Linux node accepts, best first (pip does not add the older glibc ones to a --platform)."
    m = re.fullmatch(r'manylinux_2_(\d+)_(\w+)', platform)
    if not m: sys.exit(f"--platform {platform}: expected manylinux_2_N_ARCH, N from the node's `ldd --version` (2.35 -> 35)")
    glibc, arch = int(m[1]), m[2]
    legacy = {17: ['manylinux2014'], 12: ['manylinux2010'], 5: ['manylinux1']}  # PEP 600's aliases
    return [f'{t}_{arch}' for n in range(glibc, 4, -1) for t in [f'manylinux_2_{n}', *legacy.get(n, [])]] + [f'linux_{arch}'], arch

def node_markers(arch, python_version):
    "The environment markers pip should evaluate for a Linux node of this architecture and Python."
    full = python_version if python_version.count('.') == 2 else python_version + '.0'
    return dict(sys_platform='linux', platform_system='Linux', os_name='posix', platform_machine=arch,
                python_version='.'.join(full.split('.')[:2]), python_full_version=full, implementation_name='cpython',
                implementation_version=full, platform_python_implementation='CPython')

def write_stubs(pkgs, folder):
    "One installed-looking distribution per node package: a .dist-info with its name, version (and requirements)."
    for name, (version, lines) in pkgs.items():
        d = Path(folder) / f"{name.replace('-', '_')}-{version}.dist-info"; d.mkdir()
        (d / 'METADATA').write_text('\n'.join(['Metadata-Version: 2.1', f'Name: {name}', f'Version: {version}', *lines]) + '\n')

# Packages PyPI has only as source, for which `build` makes a wheel first (with these environment variables) so that
# the folder still holds wheels only: DeepSpeed's pure-Python wheel, its CUDA ops compiled at run time (DS_BUILD_OPS=0)
SOURCE_BUILDS = {'deepspeed': {'DS_BUILD_OPS': '0'}}

def requirement_name(req): return canonical(re.match(r'[A-Za-z0-9][A-Za-z0-9._-]*', req)[0])

def build_source_wheels(reqs, builds, pip_args, folder):
    "Build `pip wheel --no-deps` wheels of the requirements named in `builds` into `folder`; their names and versions."
    made = []
    for req in reqs:
        name = requirement_name(req)
        if name not in builds: continue
        before = set(Path(folder).glob('*.whl')) if Path(folder).exists() else set()
        if subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-binary', name, '-w', str(folder),
                           *pip_args, req], env=os.environ | builds[name]).returncode:
            sys.exit(f"pip could not build a wheel of {req!r} from its source (with {builds[name]}; its message is above)")
        made += [dict(requirement=req, env=builds[name], filename=w.name) for w in set(Path(folder).glob('*.whl')) - before]
    return made

def resolve(reqs, pkgs, tags, markers, pip_args, tmp):
    "pip's report of what `pip install reqs` would install on the node (dicts of name, version, sha256)."
    stubs, report = Path(tmp) / 'site', Path(tmp) / 'report.json'
    stubs.mkdir(); write_stubs(pkgs, stubs)
    # pip's site folder, found without an import lookup of pip (that would switch setuptools' distutils shim off in this process)
    pip_parent = str(importlib.metadata.distribution('pip').locate_file(''))
    if subprocess.run([sys.executable, '-S', '-c', RUNNER, json.dumps(markers), str(stubs), pip_parent,
                       'install', '--dry-run', '--report', str(report), *tags, *pip_args, *reqs]).returncode:
        sys.exit(f'pip could not resolve {reqs} for the node (its message is above)')
    out = []
    for item in json.loads(report.read_text())['install']:
        info, hashes = item['metadata'], item['download_info'].get('archive_info', {}).get('hashes', {})
        if 'sha256' not in hashes: sys.exit(f"{item['download_info']['url']}: the index gave no sha256 for this file")
        out.append(dict(name=info['name'], version=info['version'], sha256=hashes['sha256']))
    return out

def build(args, pip_args):
    "Resolve for the node, refuse replacements unless allowed, download the exact files, write manifest.json."
    reqs = args.requirements + settings_requirements(args.extra, args.with_base)
    if not reqs: sys.exit('nothing to build: give requirements or --extra')
    out = Path(args.out)
    if out.exists() and any(out.iterdir()): sys.exit(f'{out}: not empty; build into a new folder')
    pkgs, env = read_node(args.node)
    python = args.python_version or env.get('python_full_version') or '%d.%d.%d' % sys.version_info[:3]
    platforms, arch = manylinux(args.platform)
    tags = ['--only-binary=:all:', *[a for t in platforms for a in ('--platform', t)], '--python-version', python,
            '--implementation', 'cp', '--abi', 'cp' + ''.join(python.split('.')[:2])]
    builds = SOURCE_BUILDS | {canonical(n): {} for n in args.build_wheel}
    with tempfile.TemporaryDirectory() as tmp:
        built = build_source_wheels(reqs, builds, pip_args, Path(tmp) / 'built')
        if built: pip_args = [*pip_args, '--find-links', str(Path(tmp) / 'built')]
        wheels = resolve(reqs, pkgs, tags, env or node_markers(arch, python), pip_args, tmp)
        replaced = [f"{w['name']} {pkgs[canonical(w['name'])][0]} -> {w['version']}"
                    for w in wheels if canonical(w['name']) in pkgs]
        if replaced and not args.allow_replace:
            sys.exit(f'{args.node}: installing {reqs} would replace packages the node has: {", ".join(replaced)} '
                     '(--allow-replace to accept)')
        pinned = Path(tmp) / 'pinned.txt'
        pinned.write_text(''.join(f"{w['name']}=={w['version']} --hash=sha256:{w['sha256']}\n" for w in wheels))
        if wheels and subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--require-hashes',
                                      '-d', str(out), *tags, *pip_args, '-r', str(pinned)]).returncode:
            sys.exit(f'pip could not download the resolved wheels into {out} (its message is above)')
    by_hash = {sha256(p): p for p in out.glob('*.whl')}
    for w in wheels:
        if w['sha256'] not in by_hash: sys.exit(f"{out}: no downloaded file has {w['name']} {w['version']}'s sha256 {w['sha256']}")
        p = by_hash[w['sha256']]
        w.update(filename=p.name, size=p.stat().st_size)
    pip_version = subprocess.run([sys.executable, '-m', 'pip', '--version'], capture_output=True, text=True).stdout.split()[1]
    manifest = dict(requirements=reqs, platform=args.platform, python_version=python, pip=pip_version, replaced=replaced,
                    built_from_source=built,
                    node=dict(file=Path(args.node).name, sha256=sha256(args.node), packages=len(pkgs),
                              format='pip inspect' if env else 'pip list --format=freeze'),
                    date=datetime.date.today().isoformat(), total_size=sum(w['size'] for w in wheels), wheels=wheels)
    out.mkdir(parents=True, exist_ok=True)
    (out / 'manifest.json').write_text(json.dumps(manifest, indent=1) + '\n')
    print(f"{out}: {len(wheels)} wheels, {manifest['total_size'] / 1e6:.1f} MB; "
          f"manifest.json sha256 {sha256(out / 'manifest.json')} (compare on the node)")

def verify(folder):
    "The folder's files are exactly manifest.json's wheels, byte for byte; refuses naming each file that is not."
    folder = Path(folder)
    if not (folder / 'manifest.json').exists(): sys.exit(f"{folder / 'manifest.json'}: missing (made by `build`)")
    manifest = json.loads((folder / 'manifest.json').read_text())
    listed = {w['filename']: w for w in manifest['wheels']}
    problems = [f'{folder / f}: not listed in manifest.json' for f in sorted(os.listdir(folder))
                if f not in listed and f != 'manifest.json']
    for name, w in listed.items():
        p = folder / name
        if not p.exists(): problems.append(f'{p}: missing (listed in manifest.json)')
        elif (p.stat().st_size, sha256(p)) != (w['size'], w['sha256']):
            problems.append(f"{p}: altered: size {p.stat().st_size}, sha256 {sha256(p)}; "
                            f"manifest.json expects size {w['size']}, sha256 {w['sha256']}")
    if problems: sys.exit('wheelhouse check failed:\n  ' + '\n  '.join(problems))
    print(f"{folder}: {len(listed)} wheels match manifest.json (sha256 {sha256(folder / 'manifest.json')})")
    return manifest

def install(args, pip_args):
    "Check the folder, check the Python, then pip install the manifest's requirements from the folder alone."
    manifest = verify(args.folder)
    have = subprocess.run([args.python, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                          capture_output=True, text=True, check=True).stdout.strip()
    want = '.'.join(manifest['python_version'].split('.')[:2])
    if have != want: sys.exit(f"{args.python} is Python {have}; {Path(args.folder) / 'manifest.json'} is for Python {want}")
    env = {k: v for k, v in os.environ.items() if not k.startswith('PIP_')} | {'PIP_CONFIG_FILE': os.devnull}
    cmd = [args.python, '-m', 'pip', 'install', '--no-index', '--find-links', str(args.folder), '--only-binary=:all:',
           *pip_args, *manifest['requirements']]
    print(' '.join(cmd)); sys.exit(subprocess.run(cmd, env=env).returncode)

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    pip_args = argv[argv.index('--') + 1:] if '--' in argv else []
    argv = argv[:argv.index('--')] if '--' in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0]); sub = p.add_subparsers(dest='cmd', required=True)
    b = sub.add_parser('build', help='download the wheels the node lacks, with manifest.json')
    b.add_argument('requirements', nargs='*', help='requirement strings, e.g. vllm==0.24.0')
    b.add_argument('--extra', action='append', default=[], help="sweet_rl extra from settings.ini (e.g. gpu)")
    b.add_argument('--with-base', action='store_true',
                   help="also sweet_rl's base requirements from settings.ini")
    b.add_argument('--node', required=True, help="the node's `python -m pip inspect` or `pip list --format=freeze` output")
    b.add_argument('--platform', default='manylinux_2_28_x86_64',
                   help="the node's wheel platform, manylinux_2_N_ARCH with glibc 2.N from `ldd --version` there")
    b.add_argument('--python-version', help="the node's Python (default: from pip inspect, else this one's), e.g. 3.12")
    b.add_argument('--allow-replace', action='store_true', help='accept replacing packages the node has')
    b.add_argument('--build-wheel', action='append', default=[], metavar='NAME',
                   help=f"build this requirement's wheel from its source first (always: {', '.join(SOURCE_BUILDS)})")
    b.add_argument('--out', required=True, help='new folder for the wheels and manifest.json')
    i = sub.add_parser('install', help='check the folder against manifest.json, then pip install --no-index from it')
    i.add_argument('folder')
    i.add_argument('--python', default=sys.executable, help='interpreter to install into')
    args = p.parse_args(argv)
    (build if args.cmd == 'build' else install)(args, pip_args)

if __name__ == '__main__': main()
