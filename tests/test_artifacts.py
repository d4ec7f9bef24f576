"The committed paper tables and figures are exactly what the committed results render to, and the README shows them."
from pathlib import Path

from sweet_rl.pipeline import (ARTIFACTS, FIGURES_DIR, PAPER_NBS_DIR, RESULTS_DIR, ROOT, notebook_path, readme_section,
                               render_artifacts)


def test_every_artifact_has_committed_results():
    "The re-rendering checks below need every artifact's results: a missing CSV is a failure, never a silent skip."
    missing = [a for a in ARTIFACTS if not (RESULTS_DIR / f'{a}.csv').is_file()]
    assert not missing, f"no committed results for {missing}: run `make reproduce SCALE=small` (or collect the study) and commit"


def test_rerendering_committed_results_is_byte_identical(tmp_path):
    out = tmp_path / 'figures'
    render_artifacts(RESULTS_DIR, out, runs_dir=tmp_path / 'runs')
    made = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in FIGURES_DIR.iterdir() if p.name != 'README.md')
    assert made == committed, (made, committed)
    different = [n for n in made if (out / n).read_bytes() != (FIGURES_DIR / n).read_bytes()]
    assert not different, f"re-rendered files differ from the committed ones: {different}"


def test_readme_results_section_is_current():
    assert readme_section() in (ROOT / 'README.md').read_text(), "run `python -m sweet_rl.pipeline readme` and commit"


def test_every_artifact_has_a_notebook_and_a_study():
    for a in ARTIFACTS:
        assert (ROOT / 'nbs' / 'paper' / f'{a}.ipynb').is_file() and (ROOT / 'studies' / f'{a}.yaml').is_file(), a
        assert notebook_path(a) == PAPER_NBS_DIR / f'{a}.ipynb' and not (ROOT / 'nbs' / f'{a}.ipynb').exists(), a


def test_a_relative_figures_dir_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    "The notebooks run in their own folder; a relative `figures_dir` must still mean the caller's folder."
    monkeypatch.chdir(tmp_path)
    files = render_artifacts(RESULTS_DIR, 'figs', ['table4'], runs_dir=tmp_path / 'runs')
    assert files and {f.parent for f in files} == {tmp_path / 'figs'}, files
    assert not (PAPER_NBS_DIR / 'figs').exists()
