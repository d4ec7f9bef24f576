"""The lookup task's go/no-go script (scripts/mtgrpo_gonogo.py) end to end with a scripted agent: its measures, the
go rule, the JSON record and resuming. No model is loaded."""
import importlib.util, json, re
from pathlib import Path

import pytest
import sweet_rl.base.models, sweet_rl.methods.mtgrpo  # what the script imports when it runs (torch, transformers): a few seconds

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location('mtgrpo_gonogo', ROOT / 'scripts' / 'mtgrpo_gonogo.py')
gonogo = importlib.util.module_from_spec(spec); spec.loader.exec_module(gonogo)


class ScriptedAgent:
    "Under the weak prompt: answers from the note, except every fourth call searches; under today's: searches, then copies the code."
    calls = 0
    def generate(self, conversations, params=None):
        out = []
        for c in conversations:
            prompt, question = c[0]['content'], c[0]['content'].split('Question:')[-1]
            if len(c) > 1: out.append('<reasoning>Found.</reasoning>\n<answer>' + re.search(r'is (\d{4})\.', c[-1]['content']).group(1))
            elif 'alone' in prompt or ScriptedAgent.calls % 4 == 0:
                out.append('<reasoning>Search.</reasoning>\n<tool>' + re.search(r'code of the (\w+)', question).group(1) + ' access code')
            else: out.append('<reasoning>Notes.</reasoning>\n<answer>' + re.search(r'notes say: (\d{4})', question).group(1))
            ScriptedAgent.calls += 1
        return out


def test_gonogo_end_to_end_and_resume(tmp_path, monkeypatch):
    monkeypatch.setattr(sweet_rl.base.models, 'make_backend', lambda name: ScriptedAgent())
    args = ['--tasks', '3', '--samples', '4', '--batch-size', '4', '--out', str(tmp_path)]
    rec = gonogo.main(args)
    saved = json.loads((tmp_path / 'gonogo.json').read_text())
    assert saved['verdict'] == rec['verdict'] and saved['seeds'] == {'seed': 0, 'entity_seed': 0}
    assert saved['command'] == 'scripts/mtgrpo_gonogo.py ' + ' '.join(args) and set(saved['wall_s']) == {'weak', 'current', 'total'}
    weak, current = saved['prompts']['weak'], saved['prompts']['current']
    assert weak['episodes'] == current['episodes'] == 12 and saved['sampled_now'] == {'weak': 12, 'current': 12}
    # today's prompt: every episode searches, finds the entity and copies the right code
    assert current['tool_use']['value'] == current['tool_exact']['value'] == current['search_finds']['value'] == 1.0
    # the weak prompt: direct answers are the notes, right as often as the notes are; searches copy the right code
    assert 0 < weak['tool_use']['value'] < 1 and weak['direct_follows_note']['value'] == 1.0
    assert weak['direct_exact_note_wrong']['value'] in (0.0, None) and weak['tool_exact']['value'] == 1.0
    assert saved['verdict'].startswith('no-go: weak: direct_over_tool')  # the tool path is as good as it gets: no gap
    assert (tmp_path / 'manifest.json').is_file() and len((tmp_path / 'episodes_weak.jsonl').read_text().splitlines()) == 12
    again = gonogo.main(args)  # resumed: nothing left to sample, the same numbers
    assert again['sampled_now'] == {'weak': 0, 'current': 0} and again['prompts']['weak']['tool_use'] == weak['tool_use']


def test_go_rule():
    share = lambda v, n=40: {'value': v, 'k': round(v * n) if v is not None else 0, 'n': n if v is not None else 0}
    def s(tool_use, direct, tool, finds):
        return {'tool_use': share(tool_use), 'direct_exact': share(direct), 'tool_exact': share(tool), 'search_finds': share(finds),
                'direct_over_tool': None if direct is None or not tool else direct / tool}
    go = {'weak': s(0.2, 0.6, 0.2, 0.95), 'current': s(0.5, 0.1, 0.6, 1.0)}
    assert gonogo.verdict(gonogo.checks(go), ['weak', 'current']) == 'go'
    assert gonogo.verdict(gonogo.checks({**go, 'weak': s(0.2, 0.6, 0.0, 0.95)}), ['weak', 'current']) == 'go'  # no exact tool episode: gap holds
    bad = gonogo.verdict(gonogo.checks({'weak': s(0.05, 0.6, 0.3, 0.8), 'current': s(0.5, 0.1, 0.4, 1.0)}), ['weak', 'current'])
    assert bad == ('no-go: weak: tool_use = 0.05 (needs >= 0.1); weak: direct_over_tool = 2.0 (needs >= 2.5); '
                   'weak: search_finds = 0.8 (needs >= 0.9); current: tool_exact = 0.4 (needs >= 0.5)')
    assert gonogo.verdict(gonogo.checks({'weak': go['weak']}), ['weak']) == 'no-go: not sampled: current'
    with pytest.raises(SystemExit): gonogo.main(['--weak', 'strong'])
    with pytest.raises(SystemExit): gonogo.main(['--weak', 'current'])  # the same prompt in both roles
    other = {'weak': 'notes', 'control': 'guided'}  # other prompts in the roles: the rule reads each role's prompt
    rows = gonogo.checks({'notes': go['current'], 'guided': go['weak']}, other)
    assert [(r['role'], r['prompt']) for r in rows] == [('weak', 'notes')] * 3 + [('control', 'guided')]
    assert gonogo.verdict(rows, ['notes', 'guided'], other) == ('no-go: notes: direct_over_tool = 0.167 (needs >= 2.5); '
                                                               'guided: tool_exact = 0.2 (needs >= 0.5)')
