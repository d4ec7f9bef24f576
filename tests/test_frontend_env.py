"FrontendEnv: the vision simulator receives both screenshots through an OpenAI-compatible API; text-only backends refuse images."
import base64, http.server, io, json, threading

import pytest
from PIL import Image

from sweet_rl.base.data import sample_tasks
from sweet_rl.envs.frontend import FrontendEnv, FrontendEnvConfig
from sweet_rl.base.models import OpenAIBackend, check_conversations


class _VLMStub(http.server.BaseHTTPRequestHandler):
    "Records each request and answers like a vision-language model describing differences."
    def log_message(self, *a): pass
    def do_POST(self):
        self.server.bodies.append(json.loads(self.rfile.read(int(self.headers['Content-Length']))))
        data = json.dumps({'choices': [{'message': {'content': 'Make the header green.'}, 'finish_reason': 'stop'}],
                           'usage': {'completion_tokens': 4}}).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)


@pytest.fixture
def vlm():
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _VLMStub)
    srv.bodies = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv, f'http://127.0.0.1:{srv.server_port}/v1'
    srv.shutdown(); srv.server_close()


def test_vision_simulator_gets_both_screenshots(vlm):
    srv, url = vlm
    task = sample_tasks('frontend')[0]
    env = FrontendEnv(OpenAIBackend(url, 'vlm'), FrontendEnvConfig(simulator_mode='vision', max_turns=3))
    env.reset(task)
    obs, done = env.step('Draft:\n<html><body class="bg-blue-500"><h1>Draft</h1></body></html>')
    assert not done and obs[-1] == {'role': 'user', 'content': 'Make the header green.'}
    (body,) = srv.bodies
    parts = body['messages'][0]['content']
    assert [p['type'] for p in parts] == ['text', 'image_url', 'image_url'] and body['temperature'] == 0
    mine, ref = (Image.open(io.BytesIO(base64.b64decode(p['image_url']['url'].split(',', 1)[1]))) for p in parts[1:])
    assert mine.width == ref.width == 1280
    assert mine.getpixel((5, 5))[2] > 200  # the agent's page is blue, as rendered


def test_text_only_backends_refuse_image_messages():
    msg = [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}, {'type': 'image_url', 'image_url': {'url': 'data:,'}}]}]
    with pytest.raises(ValueError, match='text-only'):
        check_conversations([msg])
    assert check_conversations([msg], multimodal=True) == [msg]
