"""MT-GRPO's go/no-go for the paper's "GRPO-OR stops calling the tool": which questions can the base model answer
without the tool, and what does a noisy tool do to the two paths?

The paper trains on TriviaQA, where Qwen2.5-7B answers many questions unaided, so an outcome-only reward can favour
answering at once. On our capital questions the 0.5B model answered 12.5% of held-out questions zero-shot (mostly by
repeating the country's name) and the tool always returned the right document: searching dominates and GRPO-OR never
stopped calling it. This measures, per question kind of `sweet_rl.envs.search.QUESTION_KINDS`:

1. unaided: greedy exact match with no tool offered (`SearchEnvConfig(single_turn=True)`, `UNAIDED_PROMPT`);
2. with the tool at each `--noise` (`SearchTool(noise=p)`: a query's result is random documents with probability p),
   `--samples` episodes per question at temperature 1 under `SEARCH_PROMPT`, as GRPO samples them: the share that
   search, and exact match on each path (searched or answered at once).

Go for a run of the three modes on a kind if its unaided exact match is at least ~0.3 and, at some noise level, the
answered-at-once path scores about as well as the searching one (then outcome reward alone has a reason to drop the
tool). Writes `results/mtgrpo/unaided-check/`.

    OMP_NUM_THREADS=2 .venv/bin/python scripts/mtgrpo_unaided_check.py     # ~15 min on 2 cores
"""
import argparse, json, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rates(records) -> dict:
    "Exact match overall and on each path: episodes that got a tool result, and those answered without one."
    from sweet_rl.envs.search import exact_match, has_tool_result
    searched = [r for r in records if has_tool_result(r['dialogue_history'])]
    direct = [r for r in records if not has_tool_result(r['dialogue_history'])]
    share = lambda rs: round(sum(exact_match(r['dialogue_history'], r['task']['answers']) for r in rs) / len(rs), 3) if rs else None
    return {'episodes': len(records), 'searched': len(searched), 'exact': share(records),
            'exact_searched': share(searched), 'exact_direct': share(direct)}


def main():
    from sweet_rl.envs.search import QUESTION_KINDS
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kinds', default=','.join(QUESTION_KINDS), help='comma-separated question kinds')
    ap.add_argument('--tasks', type=int, default=24, help='training questions per kind (a seeded subset)')
    ap.add_argument('--samples', type=int, default=4, help='episodes per question with the tool, at temperature 1')
    ap.add_argument('--noise', default='0,0.5', help='comma-separated tool noise levels')
    ap.add_argument('--model', default='qwen2.5-coder-0.5b')
    ap.add_argument('--out', default=str(ROOT / 'results' / 'mtgrpo' / 'unaided-check'))
    a = ap.parse_args()
    from sweet_rl.base.core import atomic_write_text, write_jsonl, write_manifest
    from sweet_rl.base.models import make_backend
    from sweet_rl.base.rollout import RolloutConfig, env_factory, run_rollouts
    from sweet_rl.envs.search import SearchTool
    from sweet_rl.methods.mtgrpo import MTGRPOConfig, online_setting
    kinds, levels = [k.strip() for k in a.kinds.split(',') if k.strip()], [float(x) for x in a.noise.split(',') if x.strip()]
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    agent, got, rows, t0 = make_backend(a.model), {}, [], time.time()
    for kind in kinds:
        tasks = online_setting(MTGRPOConfig(model=a.model, env='search', seed=0,  # the seeded subset training draws
                                            setting={'top_k': 1, 'question_kinds': [kind], 'n_tasks': a.tasks})).train_tasks
        got[kind] = {'questions': len(tasks)}
        unaided = run_rollouts(tasks, env_factory('search', SearchTool(top_k=1), single_turn=True), agent,
                               RolloutConfig(max_new_tokens=64, temperature=0.0, seed=0, batch_size=16), tag=f'unaided|{kind}')
        got[kind]['unaided'] = rates(unaided)
        rows += [{'kind': kind, 'arm': 'unaided', **r} for r in unaided]
        for p in levels:
            recs = run_rollouts(tasks, env_factory('search', SearchTool(top_k=1, noise=p, seed=0)), agent,
                                RolloutConfig(samples_per_task=a.samples, max_new_tokens=64, temperature=1.0, seed=0, batch_size=16),
                                tag=f'tool|{kind}|{p}')
            got[kind][f'tool_noise_{p}'] = rates(recs)
            rows += [{'kind': kind, 'arm': f'tool_noise_{p}', **r} for r in recs]
        print(kind, json.dumps(got[kind]), f'{time.time() - t0:.0f} s', flush=True)
    got['params'], got['wall_s'] = vars(a), round(time.time() - t0)
    write_jsonl(out / 'episodes.jsonl', rows)
    atomic_write_text(out / 'check.json', json.dumps(got, indent=2) + '\n')
    write_manifest(out, 0, script='scripts/mtgrpo_unaided_check.py')
    for kind in kinds:
        u = got[kind]['unaided']['exact']
        print(f"{kind:20s} unaided {u:.2f}  " + '  '.join(
            f"noise {p}: searched {got[kind][f'tool_noise_{p}']['searched']}/{got[kind][f'tool_noise_{p}']['episodes']} "
            f"exact {got[kind][f'tool_noise_{p}']['exact_searched']} vs direct {got[kind][f'tool_noise_{p}']['exact_direct']}" for p in levels))


if __name__ == '__main__':
    main()
