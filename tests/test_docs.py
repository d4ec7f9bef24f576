"The README is a front page, and every relative link in it and in docs/ reaches a file of the repository."
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]


def relative_links(text: str) -> list[str]:
    "Targets of markdown links and images that are paths in the repository (no scheme, no bare anchor)."
    targets = re.findall(r'\]\(([^)\s]+)\)', text)
    return [t.split('#')[0] for t in targets if not re.match(r'[a-z]+:', t) and not t.startswith('#')]


def test_relative_links_resolve():
    broken = [f"{p.relative_to(ROOT)}: {t}" for p in PAGES for t in relative_links(p.read_text())
              if not (p.parent / t).exists()]
    assert not broken, broken


def test_readme_is_a_front_page():
    lines = (ROOT / 'README.md').read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/"
    linked = set(relative_links('\n'.join(lines)))
    unlinked = [p.name for p in PAGES[1:] if f'docs/{p.name}' not in linked]
    assert not unlinked, f"docs pages the README does not link to: {unlinked}"


def test_link_finder_on_a_hand_made_example():
    text = '[a](docs/x.md) ![b](../figures/y.png) [c](https://e.org/z) [d](#anchor) [e](docs/x.md#part)'
    assert relative_links(text) == ['docs/x.md', '../figures/y.png', 'docs/x.md']
