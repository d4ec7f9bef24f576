"""Packaging for sweet_rl: every field comes from settings.ini, as in nbdev 2 projects."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read(Path(__file__).parent / 'settings.ini')
cfg = cfg['DEFAULT']

# settings.ini keeps nbdev's license key (nbdev_update_license rewrites it); the metadata carries the SPDX expression
# (PEP 639) it names, and no 'License ::' classifier: setuptools >= 77 deprecates those in favour of the expression.
licenses = {'apache2': 'Apache-2.0', 'mit': 'MIT', 'gpl2': 'GPL-2.0-only', 'gpl3': 'GPL-3.0-only', 'bsd3': 'BSD-3-Clause'}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable']
lic = licenses.get(cfg['license'], cfg['license'])  # an SPDX expression in settings.ini is used as is
# pyproject.toml asks for setuptools >= 77; an older one (pip --no-build-isolation on an old image, docs/gpu-nodes.md's offline
# GPU node) has no license_expression and gets the same SPDX id as the License field instead.
lic_meta = {'license_expression' if int(setuptools.__version__.split('.')[0]) >= 77 else 'license': lic}

def _reqs(key): return cfg.get(key, '').split()

setuptools.setup(
    name=cfg['lib_name'], version=cfg['version'], description=cfg['description'],
    **lic_meta, author=cfg['author'], author_email=cfg['author_email'],
    url=cfg['git_url'], keywords=cfg['keywords'].split(),
    classifiers=[f"Development Status :: {statuses[int(cfg['status'])]}",
                 f"Intended Audience :: {cfg['audience']}",
                 f"Natural Language :: {cfg['language']}",
                 'Programming Language :: Python :: 3'],
    # The Python packages are sweet_rl and sweet_rl.envs. sweet_rl/assets/** (ColBench task files, the vendored frontend
    # stylesheet and script, their READMEs and licence) is package data of sweet_rl, declared here alone: with
    # include_package_data, setuptools would also take those files from MANIFEST.in and warn that each assets folder is
    # an importable package absent from `packages`. MANIFEST.in still puts them (and settings.ini, README.md) in the sdist.
    packages=setuptools.find_packages(include=['sweet_rl', 'sweet_rl.*']),
    include_package_data=False, package_data={'sweet_rl': ['assets/**/*']},
    install_requires=_reqs('requirements'),
    extras_require={'dev': _reqs('dev_requirements'), 'serve': _reqs('serve_requirements'),
                    'gpu': _reqs('gpu_requirements'), 'exports': _reqs('exports_requirements')},
    python_requires=f">={cfg['min_python']}",
    long_description=(Path(__file__).parent / 'README.md').read_text(encoding='utf-8'),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={'console_scripts': cfg.get('console_scripts', '').split(),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
)
