"The committed paper tables and figures are exactly what the committed results render to, and the README shows them."
from pathlib import Path

import pytest

from sweet_rl.pipeline import (ARTIFACTS, FIGURES_DIR, PAPER_NBS_DIR, RESULTS_DIR, ROOT, notebook_path, readme_section,
                               render_artifacts)

needs_results = pytest.mark.skipif(not all((RESULTS_DIR / f'{a}.csv').is_file() for a in ARTIFACTS),
                                   reason='no committed results yet (run `make reproduce SCALE=small`)')


@needs_results
def test_rerendering_committed_results_is_byte_identical(tmp_path):
    out = tmp_path / 'figures'
    render_artifacts(RESULTS_DIR, out, runs_dir=tmp_path / 'runs')
    made = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in FIGURES_DIR.iterdir() if p.name != 'README.md')
    assert made == committed, (made, committed)
    different = [n for n in made if (out / n).read_bytes() != (FIGURES_DIR / n).read_bytes()]
    assert not different, f"re-rendered files differ from the committed ones: {different}"


@needs_results
def test_readme_results_section_is_current():
    assert readme_section() in (ROOT / 'README.md').read_text(), "run `python -m sweet_rl.pipeline readme` and commit"


def test_every_artifact_has_a_notebook_and_a_study():
    for a in ARTIFACTS:
        assert (ROOT / 'nbs' / 'paper' / f'{a}.ipynb').is_file() and (ROOT / 'studies' / f'{a}.yaml').is_file(), a
        assert notebook_path(a) == PAPER_NBS_DIR / f'{a}.ipynb' and not (ROOT / 'nbs' / f'{a}.ipynb').exists(), a
