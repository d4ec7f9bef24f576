"""Go/no-go for the asking arm of the clarify actor comparison: is there something for training to teach the 0.5B
policy, and does it already sample what it would be taught?

In the asking arm (`nbs/15_clarify.ipynb`, "The asking arm") the policy only talks: it may ask one question about one
slot, at a cost of 0.1, or hand over; a scripted writer turns the replies into the code. Three tasks in four carry a
cue sentence that points at the slot off its default with probability 0.75. This samples the zero-shot policy
(`ClarifyAsker` around Qwen2.5-Coder-0.5B-Instruct; `--prompt ask`: `ASK_PROMPT`, a question in its own words;
`--prompt menu`: `MENU_PROMPT`, one of the family's questions, listed in a seeded order) on training tasks, at temperature 1 (what offline
data and RFT would see) and greedily (the zero-shot row of the actor table), and sets it beside three non-learned
policies on the same tasks: hand over at once, a random slot, and the cue rule (the best policy without the reference).

Fixed before running: **go** if (1) the cue rule's reward is at least 0.10 above the sampled zero-shot policy's (room
to learn), and (2) on cued tasks the sampled policy asks about the cued slot alone in at least 10% of episodes and does
something else in at least 10% (both sides of the contrast that DPO and RFT learn from occur). Writes
`results/clarify/ask-gonogo/<prompt>/` (`gonogo.json`, `episodes.jsonl`).

    OMP_NUM_THREADS=2 .venv/bin/python scripts/clarify_ask_gonogo.py --prompt menu     # ~6 min on 2 cores
"""
import argparse, json, time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COST = 0.1


def first_move(record) -> dict:
    "What the policy's first message did (`credit.ask_move`), whether a question held code, and the episode's scores."
    from sweet_rl.runs.credit import ask_move
    first = next(m['content'] for m in record['dialogue_history'] if m['role'] == 'assistant')
    move = ask_move(record)
    return {**move, 'code': move['kind'] != 'hand_over' and ('def ' in first or '```' in first),
            'reward': record['reward'], 'tests_passed': record['tests_passed'], 'success': record['success']}


def summary(records) -> dict:
    "Reward, tests passed, and how first moves split, over all episodes and over those of cued tasks."
    rows = [first_move(r) for r in records]
    cued, uncued = [r for r in rows if r['cued']], [r for r in rows if not r['cued']]
    mean = lambda rs, k: round(sum(r[k] for r in rs) / len(rs), 4) if rs else None
    return {'episodes': len(rows), 'reward': mean(rows, 'reward'), 'tests_passed': mean(rows, 'tests_passed'),
            'success': mean(rows, 'success'), 'first_moves': dict(Counter(r['kind'] for r in rows).most_common()),
            'code_in_question': mean(rows, 'code'),  # a question that holds code (a hand-over's text is the writer's)
            'cued_tasks': {'episodes': len(cued), 'asked_cue_alone': mean(cued, 'asked_cue'), 'asked_off_default_alone': mean(cued, 'asked_off'),
                           'reward': mean(cued, 'reward')},
            'uncued_tasks': {'episodes': len(uncued), 'hand_over': mean([{'h': r['kind'] == 'hand_over'} for r in uncued], 'h'),
                             'reward': mean(uncued, 'reward')}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tasks', type=int, default=96, help='training tasks (seeded; 12 per family)')
    ap.add_argument('--samples', type=int, default=4, help='episodes per task at temperature 1')
    ap.add_argument('--max-new-tokens', type=int, default=48, help="the policy's budget for its message")
    ap.add_argument('--model', default='qwen2.5-coder-0.5b')
    ap.add_argument('--prompt', default='menu', choices=['ask', 'menu'], help="the policy's prompt: a free question, or one of the listed ones")
    ap.add_argument('--out', default='', help='output folder (default: results/clarify/ask-gonogo/<prompt>)')
    a = ap.parse_args()
    a.out = a.out or str(ROOT / 'results' / 'clarify' / 'ask-gonogo' / a.prompt)
    from sweet_rl.base.core import atomic_write_text, write_jsonl, write_manifest
    from sweet_rl.envs.clarify import ClarifyAsker, CueRule, ScriptedClarifier, generate_cued_tasks
    from sweet_rl.base.models import TransformersBackend
    from sweet_rl.base.rollout import RolloutConfig, env_factory, run_rollouts
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    tasks = generate_cued_tasks(a.tasks, seed=0)
    make = env_factory('clarify', max_turns=2, one_slot=True, question_cost=COST, prompt=a.prompt)
    got, episodes, started = {}, [], time.time()
    rules = {'hand_over': ScriptedClarifier(p_ask=0.0), 'random_slot': ScriptedClarifier(p_ask=1.0, max_questions=1), 'cue_rule': CueRule()}
    for name, policy in rules.items():
        got[name] = summary(run_rollouts(tasks, make, ClarifyAsker(policy), RolloutConfig(seed=0), progress=False))
    policy = ClarifyAsker(TransformersBackend(a.model, batch_size=16))
    for name, cfg in (('zero_shot_sampled', RolloutConfig(samples_per_task=a.samples, max_new_tokens=a.max_new_tokens, temperature=1.0, seed=0, batch_size=16)),
                      ('zero_shot_greedy', RolloutConfig(samples_per_task=1, max_new_tokens=a.max_new_tokens, temperature=0.0, seed=0, batch_size=16))):
        t0 = time.time()
        recs = run_rollouts(tasks, make, policy, cfg, progress=True)
        got[name] = {**summary(recs), 'seconds': round(time.time() - t0, 1)}
        episodes += [{'condition': name, **r} for r in recs]
    s = got['zero_shot_sampled']
    room = got['cue_rule']['reward'] - s['reward']
    asked, other = s['cued_tasks']['asked_cue_alone'], 1 - s['cued_tasks']['asked_cue_alone']
    verdict = {'room': round(room, 4), 'asked_cue_alone': asked, 'did_otherwise': round(other, 4),
               'go': bool(room >= 0.10 and asked >= 0.10 and other >= 0.10)}
    record = {'prompt': a.prompt, 'tasks': a.tasks, 'samples': a.samples, 'max_new_tokens': a.max_new_tokens, 'model': a.model, 'question_cost': COST,
              'seconds': round(time.time() - started, 1), 'verdict': verdict, **got}
    write_jsonl(out / 'episodes.jsonl', episodes)
    atomic_write_text(out / 'gonogo.json', json.dumps(record, indent=1) + '\n')
    write_manifest(out, seed=0, script='scripts/clarify_ask_gonogo.py', args=vars(a))
    print(json.dumps(record, indent=1))


if __name__ == '__main__':
    main()
