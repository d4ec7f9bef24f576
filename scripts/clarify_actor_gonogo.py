"""Go/no-go for the clarify actor arm (per-turn DPO from the SWEET critics, Multi-Turn DPO, RFT): does asking the right
question pay off for the agent that would be trained?

An actor trained on clarify can only gain from better credit on its questions if asking, and asking about the slot
that is off its default, raises the reward of the episode it is in. This reads the committed offline episodes of the
credit study (no new generation) and tabulates mean tests passed by how many slots of the task are off default, how
many questions the episode asked, and how many off-default slots those questions reached, for two agents that ask
the same way (the scripted clarifier, p_ask 0.6, one slot a question):

- `qwen`: Qwen2.5-Coder-0.5B writes every answer (results/runs/shared/rollouts/dfee516ed485; 3 families);
- `scripted`: the answer is the code the person's replies imply (results/runs/shared/rollouts/6a50888147d7; 8 families).

Also the Monte-Carlo value of each kind of first move on the Qwen arm's held-out states (its continuations are the
Qwen agent's own), from a committed credit run. Writes `results/clarify/actor-gonogo/gonogo.json`.

    .venv/bin/python scripts/clarify_actor_gonogo.py      # seconds
"""
import json, statistics
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLLOUTS = {'qwen': 'dfee516ed485', 'scripted': '6a50888147d7'}
QWEN_CREDIT_RUN = '1942afdb5747'  # any Qwen-arm credit run: every one holds the same held-out values


def episode_row(record) -> dict:
    "Off-default slots of the task, questions the episode asked, off-default slots they reached, tests passed."
    from sweet_rl.base.data import ANSWER_MARK
    from sweet_rl.envs.backend import BackendTask
    from sweet_rl.envs.clarify import RuleHuman, task_spec
    family, spec = task_spec(BackendTask.from_dict(record['task']))
    off = {s.name for s in family.slots if spec[s.name] != s.default}
    asks = [m['content'] for m in record['dialogue_history'] if m['role'] == 'assistant' and ANSWER_MARK not in m['content']]
    asked = {n for m in asks for n in RuleHuman.asked_slots(family, m)}
    answered = any(m['role'] == 'assistant' and ANSWER_MARK in m['content'] for m in record['dialogue_history'])
    return {'off_default': len(off), 'questions': len(asks), 'reached': len(off & asked), 'answered': answered,
            'reward': record['reward']}


def table(rows) -> list[dict]:
    "Mean tests passed and count per (off-default slots, questions, off-default slots reached), episodes that answered."
    groups = defaultdict(list)
    for r in rows:
        if r['answered']: groups[(r['off_default'], r['questions'], r['reached'])].append(r['reward'])
    return [{'off_default': k[0], 'questions': k[1], 'reached': k[2], 'episodes': len(v), 'tests_passed': round(statistics.fmean(v), 3)}
            for k, v in sorted(groups.items())]


def main():
    from sweet_rl.base.core import atomic_write_text, read_jsonl
    out, shared = {}, ROOT / 'results' / 'runs' / 'shared' / 'rollouts'
    for name, rid in ROLLOUTS.items():
        rows = [episode_row(r) for _, r in read_jsonl(shared / rid / 'trajectories.jsonl')]
        cut = [r['reward'] for r in rows if not r['answered']]
        out[name] = {'rollouts': rid, 'episodes': len(rows), 'cut_without_answer': len(cut),
                     'cut_tests_passed': round(statistics.fmean(cut), 3) if cut else None, 'table': table(rows)}
    metrics = json.loads((ROOT / 'results' / 'runs' / 'credit' / QWEN_CREDIT_RUN / 'metrics.json').read_text())
    out['qwen_first_move_values'] = {'run': QWEN_CREDIT_RUN, 'values_by_kind': metrics['values_by_kind']}
    dest = ROOT / 'results' / 'clarify' / 'actor-gonogo'; dest.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest / 'gonogo.json', json.dumps(out, indent=2) + '\n')
    for name in ROLLOUTS:
        print(f"{name}: {out[name]['episodes']} episodes, {out[name]['cut_without_answer']} cut without an answer"
              f" (tests passed {out[name]['cut_tests_passed']})")
        for r in out[name]['table']: print('  ', r)


if __name__ == '__main__':
    main()
