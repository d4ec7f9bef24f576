"""MT-GRPO's go/no-go on the lookup task (issue 68), rollouts only: can the paper's finding show there at all?

GRPO-OR stops calling the tool only if, at the start, answering at once pays clearly more than a search whose result
the policy cannot yet use (a toy model of the first-turn decision puts the line near 2.5-3x). The lookup task
(`sweet_rl.envs.search.lookup_tasks`) sets that by construction: each question on a made-up entity carries a note that
is right `--note-accuracy` of the time, and the search returns one sentence with the right code. This samples
`--samples` episodes of each of `--tasks` training questions at temperature 1 with the small scale's policy
(Qwen2.5-Coder-0.5B, 64 tokens a turn, one document a search), under a weak prompt and a control prompt (any two of
`LOOKUP_PROMPTS`; by default 'weak' and 'current', today's), and prints the go rule:

- weak prompt: tool use >= 0.10 (groups of 8 hold tool episodes), direct exact match >= 2.5x tool-path exact match,
  and the search finds the entity in >= 0.9 of its calls;
- control prompt: tool-path exact match >= 0.5 (the ceiling is reachable).

Writes `episodes_<prompt>.jsonl` (resumed: a rerun samples only the episodes it lacks), `gonogo.json` (numbers, checks,
verdict, seeds, command, wall times) and `manifest.json` under `--out`.

    OMP_NUM_THREADS=2 .venv/bin/python scripts/mtgrpo_gonogo.py     # 40 x 8 under each prompt: ~10 min on 2 idle cores
    OMP_NUM_THREADS=1 .venv/bin/python scripts/mtgrpo_gonogo.py --tasks 2 --samples 2 --out /tmp/gonogo   # a dry run
    OMP_NUM_THREADS=2 .venv/bin/python scripts/mtgrpo_gonogo.py --weak notes --control guided --out OUT   # other prompts
"""
import argparse, json, os, shlex, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLES = {'weak': 'weak', 'control': 'current'}  # role: the default prompt (`LOOKUP_PROMPTS`) sampled in it
GO_RULE = {  # role: [(measure, comparison, threshold)]; 'direct_over_tool' is direct exact / tool-path exact
    'weak': [('tool_use', '>=', 0.10), ('direct_over_tool', '>=', 2.5), ('search_finds', '>=', 0.9)],
    'control': [('tool_exact', '>=', 0.5)],
}


def _share(hits:list):
    "Mean of 0/1 values with its count, or None for no values."
    return {'value': sum(hits) / len(hits), 'k': int(sum(hits)), 'n': len(hits)} if hits else {'value': None, 'k': 0, 'n': 0}


def summary(records:list) -> dict:
    "Tool use, exact match on each path, and how often a search found the entity, from sampled lookup episodes."
    from sweet_rl.envs.search import exact_match, answer_present, final_answer, has_tool_result, tool_calls
    from sweet_rl.methods.mtgrpo import final_messages
    em = lambda r: exact_match(r['dialogue_history'], r['task']['answers'])
    tool = [r for r in records if has_tool_result(r['dialogue_history'])]
    direct = [r for r in records if not has_tool_result(r['dialogue_history'])]
    first_results = [next(res for _, res in tool_calls(r['dialogue_history']) if res is not None) for r in tool]
    out = {'episodes': len(records),
           'tool_use': _share([has_tool_result(r['dialogue_history']) for r in records]),
           'direct_exact': _share([em(r) for r in direct]),
           'tool_exact': _share([em(r) for r in tool]),
           'search_finds': _share([r['task']['entity'].lower() in res.lower() for r, res in zip(tool, first_results)]),
           'answer_in_result': _share([r['task']['answers'][0] in res for r, res in zip(tool, first_results)]),
           'tool_answer_present': _share([answer_present(r['dialogue_history'], r['task']['answers']) for r in tool]),
           # what the direct path is made of: answers that copy the note, and exact ones when the note is wrong (the model
           # cannot know a code, so this should be about 0)
           'direct_follows_note': _share([(final_answer(r['dialogue_history']) or '').strip() == r['task']['note'] for r in direct]),
           'direct_exact_note_wrong': _share([em(r) for r in direct if not r['task']['note_right']]),
           'exact': _share([em(r) for r in records]),
           'final_messages': final_messages(records, top=5, chars=160)}
    d, t = out['direct_exact']['value'], out['tool_exact']['value']
    out['direct_over_tool'] = None if d is None or not t else d / t  # no tool episode, or none exact: see the checks
    return out


def checks(summaries:dict, # prompt name: `summary` of its episodes
           roles:dict|None=None, # role ('weak', 'control'): the prompt sampled in it (default `ROLES`)
          ) -> list:
    "Each condition of the go rule with its value and whether it holds (a measure without data does not hold)."
    rows = []
    for role, rule in GO_RULE.items():
        prompt = (roles or ROLES)[role]
        if prompt not in summaries: continue
        s = summaries[prompt]
        for measure, op, threshold in rule:
            v = s[measure] if measure == 'direct_over_tool' else s[measure]['value']
            holds = v is not None and v >= threshold
            if measure == 'direct_over_tool' and v is None:  # tool episodes, none exact, while some direct answers are: no finite ratio, but the gap holds
                holds = bool(s['direct_exact']['value']) and s['tool_exact']['n'] > 0
            rows.append({'role': role, 'prompt': prompt, 'measure': measure, 'rule': f"{op} {threshold}", 'value': v, 'holds': holds})
    return rows


def verdict(rows:list, prompts, roles:dict|None=None) -> str:
    "'go' when every condition of the go rule holds under both prompts, else 'no-go' with the conditions that failed."
    missing = [(roles or ROLES)[r] for r in GO_RULE if (roles or ROLES)[r] not in prompts]
    failed = [f"{r['prompt']}: {r['measure']} = {r['value'] if r['value'] is None else round(r['value'], 3)} (needs {r['rule']})"
              for r in rows if not r['holds']]
    if missing: failed.append(f"not sampled: {', '.join(missing)}")
    return 'go' if not failed else 'no-go: ' + '; '.join(failed)


def _fmt(s:dict) -> str:
    one = lambda m: 'n/a' if s[m]['value'] is None else f"{s[m]['value']:.3f} ({s[m]['k']}/{s[m]['n']})"
    ratio = 'n/a' if s['direct_over_tool'] is None else f"{s['direct_over_tool']:.2f}x"
    return (f"tool use {one('tool_use')}, direct exact {one('direct_exact')}, tool-path exact {one('tool_exact')} "
            f"(direct/tool {ratio}), search finds the entity {one('search_finds')}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tasks', type=int, default=40, help='training questions (a subset seeded by --seed, the same under each prompt)')
    ap.add_argument('--samples', type=int, default=8, help='episodes per question (a GRPO group)')
    ap.add_argument('--model', default='qwen2.5-coder-0.5b', help="the policy (the small scale's MT-GRPO runs)")
    ap.add_argument('--max-new-tokens', type=int, default=64, help='agent tokens per turn (the small scale: 64)')
    ap.add_argument('--temperature', type=float, default=1.0, help='sampling temperature (training rollouts: 1)')
    ap.add_argument('--note-accuracy', type=float, default=0.7, help="share of the questions whose note is right")
    ap.add_argument('--weak', default=ROLES['weak'], help='the prompt under which the tool path should start weak (`LOOKUP_PROMPTS`)')
    ap.add_argument('--control', default=ROLES['control'], help='the prompt under which it should not (`LOOKUP_PROMPTS`)')
    ap.add_argument('--seed', type=int, default=0, help='seed of the question subset and of the sampling')
    ap.add_argument('--entity-seed', type=int, default=0, help='seed of the entities, codes, notes and split')
    ap.add_argument('--batch-size', type=int, default=16, help='episodes generated together')
    ap.add_argument('--out', default=str(ROOT / 'results' / 'mtgrpo' / 'lookup-gonogo'))
    a = ap.parse_args(argv)
    from sweet_rl.envs.search import LOOKUP_PROMPTS
    roles = {'weak': a.weak, 'control': a.control}
    if bad := [p for p in roles.values() if p not in LOOKUP_PROMPTS]: ap.error(f"unknown prompt {bad}; choose from {list(LOOKUP_PROMPTS)}")
    if a.weak == a.control: ap.error(f"--weak and --control are both {a.weak!r}: the go rule compares two prompts")
    prompts = list(roles.values())
    from sweet_rl.base.core import atomic_write_text, write_manifest
    from sweet_rl.base.models import make_backend
    from sweet_rl.base.rollout import RolloutConfig, run_rollouts
    from sweet_rl.methods.mtgrpo import MTGRPOConfig, online_setting
    out, t_start = Path(a.out), time.time()
    out.mkdir(parents=True, exist_ok=True)
    agent, got, wall, sampled = make_backend(a.model), {}, {}, {}
    for prompt in prompts:
        cfg = MTGRPOConfig(model=a.model, env='lookup', max_new_tokens=a.max_new_tokens, seed=a.seed,
                           setting={'prompt': prompt, 'note_accuracy': a.note_accuracy, 'n_tasks': a.tasks, 'top_k': 1,
                                    'entity_seed': a.entity_seed})
        setting, t0, path = online_setting(cfg), time.time(), out / f'episodes_{prompt}.jsonl'
        before = len(path.read_text().splitlines()) if path.is_file() else 0
        records = run_rollouts(setting.train_tasks, setting.make_env, agent,
                               RolloutConfig(samples_per_task=a.samples, max_new_tokens=a.max_new_tokens, temperature=a.temperature,
                                             seed=a.seed, batch_size=a.batch_size),
                               out_path=path, tag=f"lookup-gonogo|{prompt}|{a.model}")
        wall[prompt] = round(time.time() - t0, 1)  # this sitting's time, for the episodes it sampled (`sampled_now`)
        sampled[prompt] = len(path.read_text().splitlines()) - before
        got[prompt] = {**summary(records), 'setting': cfg.setting}
        print(f"{prompt}: {_fmt(got[prompt])} [{wall[prompt]:.0f} s]", flush=True)
    rows = checks(got, roles)
    record = {'verdict': verdict(rows, prompts, roles), 'checks': rows, 'go_rule': GO_RULE, 'roles': roles, 'prompts': got,
              'seeds': {'seed': a.seed, 'entity_seed': a.entity_seed}, 'params': vars(a),
              'command': ' '.join(shlex.quote(x) for x in ['scripts/mtgrpo_gonogo.py', *(sys.argv[1:] if argv is None else argv)]),
              'omp_num_threads': os.environ.get('OMP_NUM_THREADS'),
              'wall_s': {**wall, 'total': round(time.time() - t_start, 1)}, 'sampled_now': sampled}
    atomic_write_text(out / 'gonogo.json', json.dumps(record, indent=2) + '\n')
    write_manifest(out, a.seed, script='scripts/mtgrpo_gonogo.py')
    for r in rows: print(f"  {'ok  ' if r['holds'] else 'FAIL'} {r['prompt']}: {r['measure']} {r['rule']} (got {r['value']})")
    print(record['verdict'])
    return record


if __name__ == '__main__':
    main()
