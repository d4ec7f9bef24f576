"""Tests of the frontend's page side in sweet_rl.base.render (`nbs/04_render.ipynb`) that need Chromium: offline rendering and
similarity metrics on rendered pages. The URL helpers, config errors, CLIP without weights and win rate are checked in
the notebook; HTML extraction (sweet_rl.envs.frontend) in `nbs/11_frontend.ipynb`."""
import asyncio, hashlib, io, socket, threading, time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sweet_rl.base.core import read_jsonl
from sweet_rl.base.render import (
    PLACEHOLDER_RGB, ClipSimilarity, ClipWeightsMissing, RenderError, Renderer, is_greenish, render_references, similarity_metric)

TW = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">'
SHARED_DEV = Path('/work/shared/colbench/frontend_dev.jsonl')


def frontend_tasks() -> list[dict]:
    "The bundled frontend sample (via sweet_rl.base.data when it provides it), else the shared development file."
    try:
        from sweet_rl.base.data import sample_tasks
        return [{'ground_truth': t.ground_truth} for t in sample_tasks('frontend')]
    except Exception:
        if not SHARED_DEV.exists(): pytest.skip('no frontend tasks available')
        return [r for _, r in read_jsonl(SHARED_DEV)][:10]


def digest(img) -> str: return hashlib.sha256(img.tobytes() if isinstance(img, Image.Image) else img).hexdigest()


@pytest.fixture(scope='module')
def renderer():
    with Renderer(pages=2) as r: yield r


# ---------------------------------------------------------------- rendering

def test_reference_page_is_styled_offline(renderer):
    tasks = frontend_tasks()
    html = tasks[0]['ground_truth']
    img = renderer.render(html)
    assert img.width == 1280 and img.height >= 720
    # every bundled reference gets Tailwind styling: its render differs from the same page without Tailwind
    with Renderer(tailwind='none', pages=1) as bare:
        plain = bare.render_many([t['ground_truth'] for t in tasks])
    styled = renderer.render_many([t['ground_truth'] for t in tasks])
    assert all(digest(a) != digest(b) for a, b in zip(styled, plain))


def test_tailwind_colours_from_pixels(renderer):
    page = TW + ('<body class="bg-gray-100"><header class="bg-green-500 h-16"></header>'
                 '<div class="bg-indigo-600 h-16 w-1/2"></div><div class="bg-black bg-opacity-50 h-16"></div>'
                 '<div class="bg-teal-500 h-16"></div></body>')
    img = renderer.render(page)
    assert is_greenish(img.getpixel((10, 8)))
    assert np.allclose(img.getpixel((10, 8)), (16, 185, 129), atol=3)       # v2 green-500
    assert np.allclose(img.getpixel((10, 72)), (79, 70, 229), atol=3)       # v2 indigo-600, left half
    assert np.allclose(img.getpixel((1000, 72)), (243, 244, 246), atol=3)   # right half: body gray-100
    assert np.allclose(img.getpixel((10, 136)), (122, 122, 123), atol=3)    # black at 50% over gray-100
    assert np.allclose(img.getpixel((10, 200)), (243, 244, 246), atol=3)    # teal is not a v2 colour: no style


def test_placeholder_images_and_frames(renderer):
    page = ('<body style="margin:0"><img src="https://picsum.photos/id/48/120/80" style="display:block">'
            '<iframe src="https://maps.example.com/embed" width="200" height="100" style="border:0;display:block"></iframe></body>')
    img = renderer.render(page)
    assert img.getpixel((60, 40)) == PLACEHOLDER_RGB
    assert img.getpixel((130, 40)) == (255, 255, 255)                        # the image is exactly 120 px wide
    assert img.getpixel((100, 130)) == PLACEHOLDER_RGB                       # the blocked frame is a grey box


def test_deterministic_and_order_preserved(renderer):
    colours = ['red', 'green', 'blue', 'yellow', 'purple', 'pink', 'gray', 'indigo']
    pages = [TW + f'<body class="bg-{c}-500"><p class="p-8">{c}</p></body>' for c in colours]
    first = renderer.render_many(pages, fmt='png')
    second = renderer.render_many(pages[::-1], fmt='png')[::-1]
    assert [digest(a) for a in first] == [digest(b) for b in second]
    assert len({digest(a) for a in first}) == len(colours)
    assert Image.open(io.BytesIO(first[1])).convert('RGB').getpixel((5, 5)) == (16, 185, 129)


def test_history_does_not_change_a_page(renderer):
    tasks = frontend_tasks()
    with Renderer(pages=1) as fresh:
        alone = fresh.render(tasks[-1]['ground_truth'])
    renderer.render_many([t['ground_truth'] for t in tasks])  # the shared compiler has now seen every class
    assert digest(renderer.render(tasks[-1]['ground_truth'])) == digest(alone)


class _Listener:
    "A TCP server on 127.0.0.1 that counts connections (the page must never reach it)."
    def __init__(self):
        self.sock = socket.socket(); self.sock.bind(('127.0.0.1', 0)); self.sock.listen(16); self.sock.settimeout(0.2)
        self.port, self.hits, self.stop = self.sock.getsockname()[1], 0, False
        self.thread = threading.Thread(target=self.run, daemon=True); self.thread.start()
    def run(self):
        while not self.stop:
            try: conn, _ = self.sock.accept()
            except OSError: continue
            self.hits += 1; conn.close()
    def close(self): self.stop = True; self.thread.join(2); self.sock.close()


def test_no_network_at_all(renderer):
    srv = _Listener()
    try:
        p = srv.port
        page = f"""<html><head><link rel="stylesheet" href="http://127.0.0.1:{p}/a.css">
        <script src="http://localhost:{p}/a.js"></script></head><body>
        <img src="http://127.0.0.1:{p}/i.png"><iframe src="http://127.0.0.1:{p}/f"></iframe>
        <script>
          fetch('http://127.0.0.1:{p}/f').catch(() => 0);
          try {{ new WebSocket('ws://127.0.0.1:{p}/ws'); }} catch (e) {{}}
          try {{ new EventSource('http://127.0.0.1:{p}/es'); }} catch (e) {{}}
          navigator.sendBeacon && navigator.sendBeacon('http://127.0.0.1:{p}/b', 'x');
        </script></body></html>"""
        renderer.render(page)
        time.sleep(1.0)
        assert srv.hits == 0
    finally: srv.close()


def test_timeout_then_recovers():
    with Renderer(timeout_s=2, pages=1) as r:
        with pytest.raises(RenderError, match='did not finish within 2 s'):
            r.render('<html><body><script>for(;;){}</script></body></html>')
        assert is_greenish(r.render(TW + '<body class="bg-green-500"></body>').getpixel((3, 3)))
        res = r.render_many(['<p>a</p>', '<script>while(1){}</script>', '<p>b</p>'], errors='none')
        assert [x is None for x in res] == [False, True, False]


def test_recovers_from_page_crash_and_browser_death():
    with Renderer(pages=1, timeout_s=10) as r:
        ok = TW + '<body class="bg-green-500"></body>'
        r.render(ok)
        slot = r._all_slots[0]
        async def crash():
            try: await asyncio.wait_for(slot.cdp.send('Page.crash'), 2)  # never answers: the page is gone
            except (Exception, asyncio.TimeoutError): pass
        r._call(crash(), timeout=30)
        assert is_greenish(r.render(ok).getpixel((3, 3)))       # crashed page replaced (retried once)
        r._call(r._browser.close(), timeout=30)                # the whole browser dies
        assert is_greenish(r.render(ok).getpixel((3, 3)))
        assert r.restarts >= 1
    with pytest.raises(RenderError, match='closed'): r.render(ok)


def test_npm_mode_names_missing_package(tmp_path, monkeypatch):
    monkeypatch.setenv('SWEET_RL_CACHE', str(tmp_path))
    with Renderer(tailwind='npm', pages=1) as r:
        page = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet"><p>x</p>'
        with pytest.raises(RenderError, match=r"fetch_npm_package\('tailwindcss@2.2.19'\)"): r.render(page)


def test_render_references_cache(renderer, tmp_path, monkeypatch):
    monkeypatch.setenv('SWEET_RL_CACHE', str(tmp_path))
    tasks = frontend_tasks()[:3]
    a = render_references(tasks, renderer)
    n = renderer.rendered
    b = render_references([t['ground_truth'] for t in tasks], renderer)
    assert renderer.rendered == n and [digest(x) for x in a] == [digest(x) for x in b]
    assert len(list(tmp_path.joinpath('renders').rglob('*.png'))) == 3


# ---------------------------------------------------------------- metrics

def test_visual_similarity_properties(renderer):
    tasks = frontend_tasks()
    shots = renderer.render_many([t['ground_truth'] for t in tasks[:4]])
    vis = similarity_metric('visual')
    for s in shots: assert vis(s, s) == 1.0
    assert vis(shots[0], shots[1]) == vis(shots[1], shots[0])
    assert all(0.0 <= vis(shots[0], s) < 1.0 for s in shots[1:])
    blank = renderer.render('')
    assert all(vis(blank, s) < 0.7 for s in shots)
    assert vis.score_many([None, shots[0]], [shots[0], None]) == [0.0, 0.0]


def test_clip_open_clip_checkpoint_path(tmp_path, renderer):
    "A randomly initialised ViT-B-32 saved by the test is an explicit local checkpoint: the code path runs, scores mean nothing."
    import open_clip, torch
    torch.manual_seed(0)
    model = open_clip.create_model('ViT-B-32', pretrained=None)
    sd = {k: v.half() for k, v in model.state_dict().items()}
    torch.save(sd, tmp_path / 'vitb32.pt')
    clip = ClipSimilarity(str(tmp_path / 'vitb32.pt'))
    assert clip.describe()['backend'] == 'open_clip'
    shots = renderer.render_many([t['ground_truth'] for t in frontend_tasks()[:3]])
    emb = clip.embed(shots)
    assert emb.shape == (3, 512)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert clip(shots[0], shots[0]) == pytest.approx(1.0, abs=1e-5)
    del sd['visual.proj']
    torch.save(sd, tmp_path / 'partial.pt')
    with pytest.raises(ClipWeightsMissing, match='complete ViT-B-32 state dict'):
        ClipSimilarity(str(tmp_path / 'partial.pt'))
