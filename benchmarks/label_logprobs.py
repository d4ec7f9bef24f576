"""Time of Reflect-RL's label scoring (`sweet_rl.methods.reflect.label_logprobs`) on real policy prompts: a left-padded batch
run as one (`alone=False`, what a GPU does) against each prompt run on its own (`alone=True`, the CPU default).

The prompts are the steps of episodes the policy plays (with reflections) at the given environment and curriculum, so
their lengths vary as in a run. Both variants score the same prompts in this process, alternating, `--repeats` times
each, without gradients (as `play` does) and with them (as `policy_update` does, mini-batches of 4); prints seconds, the
ratio against the batch measured in the same run, and the largest difference of the log-probabilities between the
two; not a test.

    python benchmarks/label_logprobs.py                               # SmolLM2-135M on Taxi's pickup curriculum
    python benchmarks/label_logprobs.py --env explore --curriculum depth1 --json benchmarks/results/label_logprobs_cpu.json
"""
import argparse, json, os, platform, time

import torch


def timed(fn) -> tuple[float, list]:
    t0 = time.perf_counter(); out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='smollm2-135m'); ap.add_argument('--env', default='taxi')
    ap.add_argument('--curriculum', default='pickup'); ap.add_argument('--episodes', type=int, default=4)
    ap.add_argument('--tokens', type=int, default=40, help='reflection budget')
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--json', help='also write the results here')
    args = ap.parse_args()
    from sweet_rl.methods.reflect import ReflectConfig, Reflector, choice_env, episode_seeds, label_logprobs, lora_lm, play
    c = ReflectConfig(env=args.env, curriculum=args.curriculum, model=args.model, reflection_model=args.model,
                      reflection_tokens=args.tokens)
    policy, tok = lora_lm(args.model, c)
    refl, rtok = lora_lm(args.model, c)
    seeds = episode_seeds(c, 'train', args.episodes)
    eps = play(policy, tok, [choice_env(c, 'train') for _ in seeds], seeds, c, Reflector(refl, rtok, args.tokens),
               generator=torch.Generator().manual_seed(0))
    steps = [s for e in eps for s in e['steps']]
    prompts, n = [s['prompt'] for s in steps], [s['n_actions'] for s in steps]
    lengths = [len(tok(p)['input_ids']) for p in prompts]

    def score(alone, grad):
        if not grad:
            with torch.no_grad(): return label_logprobs(policy, tok, prompts, n, alone=alone)
        out = []
        for b in range(0, len(prompts), 4):
            lps = label_logprobs(policy, tok, prompts[b:b + 4], n[b:b + 4], 4, alone=alone)
            torch.stack([lp[0] for lp in lps]).sum().backward(); out += [lp.detach() for lp in lps]
        policy.zero_grad(set_to_none=True)
        return out

    score(True, False)  # warm-up
    times, diffs = {}, {}
    for grad in (False, True):
        kind = 'update' if grad else 'play'
        got = {}
        for _ in range(args.repeats):
            for name, alone in (('batched', False), ('alone', True)):
                secs, got[name] = timed(lambda: score(alone, grad))
                times.setdefault(kind, {}).setdefault(name, []).append(secs)
        diffs[kind] = max(float((a - b).abs().max()) for a, b in zip(got['batched'], got['alone']))
    best = {k: {n_: min(v) for n_, v in d.items()} for k, d in times.items()}
    dtype = str(next(policy.parameters()).dtype).replace('torch.', '')
    print(f"{args.model} {dtype} LoRA, {len(prompts)} prompts of {min(lengths)}-{max(lengths)} tokens (mean "
          f"{sum(lengths) / len(lengths):.0f}), {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    print(f"{'pass':<8}{'variant':<10}{'best s':>9}{'x batched':>11}{'max |diff|':>12}")
    for k, d in best.items():
        for name, v in d.items(): print(f"{k:<8}{name:<10}{v:>9.2f}{v / d['batched']:>11.2f}{diffs[k]:>12.2e}")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': vars(args), 'python': platform.python_version(), 'torch': torch.__version__, 'dtype': dtype,
                       'prompt_tokens': lengths, 'seconds': times, 'best': best,
                       'ratio_alone': {k: d['alone'] / d['batched'] for k, d in best.items()}, 'max_abs_logprob_diff': diffs},
                      f, indent=2)


if __name__ == '__main__':
    main()
