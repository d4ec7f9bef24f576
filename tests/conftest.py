"Guards shared by every test: no test may write into the committed paper results or figures."
import hashlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = [ROOT / 'figures', ROOT / 'results']


def _snapshot() -> dict:
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in COMMITTED if d.is_dir() for p in sorted(d.rglob('*')) if p.is_file()}


@pytest.fixture(scope='session', autouse=True)
def committed_outputs_untouched():
    "Fail the session if any test created, changed or removed a file under figures/ or results/."
    before = _snapshot()
    yield
    after = _snapshot()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"tests must not write into figures/ or results/; touched: {changed[:10]}"
