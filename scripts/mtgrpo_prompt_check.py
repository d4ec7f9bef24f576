"""MT-GRPO's go/no-go before the re-run: does the zero-shot policy, sampled as in training, ever end a tool-using episode
with a bare exact answer?

GRPO can only learn the contrast it samples. Under the first prompt (a tool call as its only example, no word on the
answer's form) the 0.5B policy sampled a bare exact answer after a tool call 1 time in 56 episodes (GRPO-OR's training
episodes), so the exact-match reward never had anything to pull on. This samples `--samples` episodes of each of
`--tasks` training questions at temperature 1 under the first prompt and the current one (`SEARCH_PROMPT`: the whole
two-turn protocol, an example ending in a bare `<answer>`, and the answer asked for alone), with the small scale's
settings (Qwen2.5-Coder-0.5B, 64 tokens a turn, one document a search, capital questions). Go if at least ~15% of the
current prompt's tool-using episodes end in a bare exact answer. Writes `results/mtgrpo/prompt-check/`.

    OMP_NUM_THREADS=2 .venv/bin/python scripts/mtgrpo_prompt_check.py     # ~15 min on 2 cores
"""
import argparse, json, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the agent prompt before commit fe72add, kept here to measure against
FIRST_PROMPT = """Answer the question with the help of a search tool over a collection of country facts.
First think inside <reasoning>...</reasoning>. Then either search with <tool>your query</tool> (the result comes back inside <result>...</result>) or give your final answer with <answer>...</answer>. You can search once, then you must answer.

Example:
<reasoning>I need the capital of Peru, so I search for it.</reasoning>
<tool>Peru capital</tool>

Question: {problem_description}"""


def summary(records) -> dict:
    "Tool use and answer form of sampled search episodes."
    from sweet_rl.envs.search import answer_present, exact_match, final_answer, has_tool_result
    from sweet_rl.methods.mtgrpo import final_messages
    tool = [r for r in records if has_tool_result(r['dialogue_history'])]
    share = lambda rs, f: sum(f(r['dialogue_history'], r['task']['answers']) for r in rs) / len(rs) if rs else None
    return {'episodes': len(records), 'tool_using': len(tool),
            'tool_using_exact': share(tool, exact_match), 'tool_using_answer_present': share(tool, answer_present),
            'tool_using_answered': sum(final_answer(r['dialogue_history']) is not None for r in tool) / len(tool) if tool else None,
            'exact': share(records, exact_match), 'answer_present': share(records, answer_present),
            'final_messages': final_messages(records, top=5, chars=160)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tasks', type=int, default=20, help='training questions (a seeded subset)')
    ap.add_argument('--samples', type=int, default=8, help='episodes per question (a GRPO group)')
    ap.add_argument('--model', default='qwen2.5-coder-0.5b')
    ap.add_argument('--out', default=str(ROOT / 'results' / 'mtgrpo' / 'prompt-check'))
    a = ap.parse_args()
    from sweet_rl.base.core import atomic_write_text, write_jsonl, write_manifest
    from sweet_rl.base.models import make_backend
    from sweet_rl.methods.mtgrpo import MTGRPOConfig, online_setting
    from sweet_rl.base.rollout import RolloutConfig, run_rollouts
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    first = out / 'first_prompt.txt'; atomic_write_text(first, FIRST_PROMPT)
    agent, got, rows = make_backend(a.model), {}, []
    for name, template in (('first', str(first)), ('current', '')):
        cfg = MTGRPOConfig(model=a.model, env='search', max_new_tokens=64, seed=0,
                           setting={'top_k': 1, 'question_kinds': ['capital'], 'n_tasks': a.tasks, 'agent_template': template})
        setting = online_setting(cfg)
        t0 = time.time()
        recs = run_rollouts(setting.train_tasks, setting.make_env, agent,
                            RolloutConfig(samples_per_task=a.samples, max_new_tokens=64, temperature=1.0, seed=0, batch_size=16),
                            tag=f"prompt-check|{name}")
        got[name] = {**summary(recs), 'wall_s': round(time.time() - t0)}
        rows += [{'prompt': name, **r} for r in recs]
        print(name, json.dumps({k: v for k, v in got[name].items() if k != 'final_messages'}), flush=True)
    cur = got['current']['tool_using_exact']
    got['verdict'] = ('go' if cur is not None and cur >= 0.15 else 'no-go') + f": {cur if cur is None else round(cur, 3)} of the current prompt's tool-using episodes end in a bare exact answer (threshold 0.15)"
    got['params'] = vars(a)
    write_jsonl(out / 'episodes.jsonl', rows)
    atomic_write_text(out / 'check.json', json.dumps(got, indent=2) + '\n')
    write_manifest(out, 0, script='scripts/mtgrpo_prompt_check.py')
    print(got['verdict'])


if __name__ == '__main__':
    main()
