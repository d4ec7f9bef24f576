"""CUDA check of the training and scoring code paths in bf16 (run it on a GPU machine; CPU stays the tested default).

Builds a small Llama from a config (default: SmolLM2-135M's, 4 layers, random weights: the packaged weights cannot be
carried to a lent GPU machine) and runs, on CUDA in bf16:
  1. critic training (LoRA, Eq. 2-3) on synthetic trajectories, then held-out pair accuracy;
  2. cached vs full candidate scoring (N=16 after a ~1,500-token context), in bf16 and in float32;
  3. batched generation throughput of the actor backend;
  4. per-turn DPO with TRL (sweet), RFT and Multi-Turn DPO steps, with the pair margin before and after;
  5. the smoke pipeline of nbs/train_actor.ipynb as library calls: scripted offline episodes in the real backend
     environment (simulated human on the GPU, unit tests in the sandbox), critic, candidates, scores, pairs, per-turn
     DPO, and evaluation rollouts of the trained policy.
Prints one JSON object (commit it to benchmarks/results/ with the date and the machine).

Usage: python benchmarks/cuda_check.py --config-dir DIR_WITH_config.json_AND_TOKENIZER [--layers 4] [--json out.json]
"""
import argparse, json, platform, sys, tempfile, time
from pathlib import Path

import torch


def tiny_model(config_dir:Path, out:Path, layers:int, seed:int=0) -> Path:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    cfg = AutoConfig.from_pretrained(config_dir)
    cfg.num_hidden_layers = layers
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(cfg).save_pretrained(out)
    AutoTokenizer.from_pretrained(config_dir).save_pretrained(out)
    return out


def timed(fn):
    torch.cuda.synchronize(); t = time.perf_counter(); out = fn(); torch.cuda.synchronize()
    return out, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--config-dir', required=True); ap.add_argument('--layers', type=int, default=4)
    ap.add_argument('--json', default=None)
    ap.add_argument('--commit', default=None, help='code version to record (the GPU machine gets a copy without .git)')
    a = ap.parse_args(argv)
    assert torch.cuda.is_available(), 'this check needs a CUDA GPU'
    from sweet_rl.methods.actor import Actor, ActorConfig, pair_margins, train_actor
    from sweet_rl.methods.critic import Critic, CriticConfig, make_pairs, synthetic_trajectories, train_critic
    from sweet_rl.methods.scorers import score_candidates, score_candidates_full
    from sweet_rl.base.models import SamplingParams
    tmp = Path(tempfile.mkdtemp())
    path = str(tiny_model(Path(a.config_dir), tmp / 'model', a.layers))
    res = {'commit': a.commit, 'command': 'python benchmarks/cuda_check.py ' + ' '.join(argv if argv is not None else sys.argv[1:]),
           'gpu': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'python': platform.python_version(),
           'model': f"{Path(a.config_dir).name} config, {a.layers} layers, random weights"}

    # 1. critic training in bf16
    train, held = synthetic_trajectories(8, seed=0), synthetic_trajectories(8, seed=1)
    ccfg = CriticConfig(model=path, dtype='auto', lr=2e-3, batch_size=4, grad_accum=1, epochs=1)
    critic, dt = timed(lambda: train_critic(ccfg, train, tmp / 'critic', max_steps=8, progress=False))
    log = [json.loads(l) for l in (tmp / 'critic' / 'train_log.jsonl').read_text().splitlines()]
    losses = [r['loss'] for r in log if 'loss' in r]
    res['critic'] = {'dtype': str(next(critic.model.parameters()).dtype), 'steps': len(losses), 'seconds': round(dt, 2),
                     'first_loss': losses[0], 'last_loss': losses[-1], 'heldout_pair_accuracy': critic.pair_accuracy(make_pairs(held))['pair_accuracy']}

    # 2. cached vs full scoring
    t = held[0]['task'] | {'ground_truth': held[0]['task']['ground_truth'] + '\n'.join(f'# note {i}: keep it simple' for i in range(200))}
    hist = held[0]['dialogue_history'][:2]
    cands = [f'I WANT TO ANSWER:\ndef f(items):\n    return sorted(items)[:{i}]  # candidate {i} ' + 'x ' * 30 for i in range(16)]
    for name, dtype in (('bf16', 'auto'), ('float32', 'float32')):
        c = Critic.build(CriticConfig(model=path, dtype=dtype), device='cuda')
        with torch.no_grad():  # a trained-looking adapter, so policy and reference differ
            for n, p in c.model.named_parameters():
                if 'lora_B' in n: p.normal_(0, 0.02)
        full, t_full = timed(lambda: score_candidates_full(c.model, c.tokenizer, t, hist, cands))
        cached, t_cached = timed(lambda: score_candidates(c.model, c.tokenizer, t, hist, cands))
        res[f'scoring_{name}'] = {'full_s': round(t_full, 3), 'cached_s': round(t_cached, 3),
                                  'max_abs_diff': float((full - cached).abs().max()), 'score_range': float(full.abs().max())}

    # 3. generation
    actor = Actor.build(ActorConfig(model=path, method='sweet', dtype='auto'), device='cuda')
    prompts = [[{'role': 'user', 'content': f'Write a function number {i} that sorts a list.'}] for i in range(32)]
    outs, dt = timed(lambda: actor.backend(batch_size=32).complete(prompts, SamplingParams(max_new_tokens=64, seed=0)))
    res['generation'] = {'sequences': len(outs), 'tokens': sum(o.num_tokens for o in outs), 'seconds': round(dt, 2),
                         'tokens_per_s': round(sum(o.num_tokens for o in outs) / dt, 1)}

    # 4. actor methods
    p1, p2 = [{'role': 'user', 'content': 'Greet me.'}], [{'role': 'user', 'content': 'Ask me a question.'}]
    rows = [{'prompt': p1, 'chosen': 'Hello! How can I help?', 'rejected': 'No.'},
            {'prompt': p2, 'chosen': 'What are you working on?', 'rejected': 'Fine.'}]
    pairs = [{'chosen': p1 + [{'role': 'assistant', 'content': 'Hello! How can I help?'}],
              'rejected': p1 + [{'role': 'assistant', 'content': 'No.'}]}]
    convs = [{'conversation': p1 + [{'role': 'assistant', 'content': 'Hello! How can I help?'}]}]
    for method, data in (('sweet', rows), ('mtdpo', pairs), ('rft', convs)):
        cfg = ActorConfig(model=path, method=method, dtype='auto', lr=5e-3, batch_size=len(data))
        a0 = Actor.build(cfg, device='cuda')
        before = pair_margins(a0.model, a0.tokenizer, rows).mean().item() if method != 'rft' else None
        trained, dt = timed(lambda: train_actor(cfg, data, tmp / method, max_steps=4, progress=False, actor=a0))
        after = pair_margins(trained.model, trained.tokenizer, rows).mean().item() if method != 'rft' else None
        log = [json.loads(l) for l in (tmp / method / 'train_log.jsonl').read_text().splitlines()]
        res[f'actor_{method}'] = {'seconds': round(dt, 2), 'losses': [round(r['loss'], 4) for r in log if 'loss' in r],
                                  'margin_before': before, 'margin_after': after}
    # 5. the smoke pipeline
    from sweet_rl.methods.actor import CandidateConfig, offline_turns, sample_candidates, score_turns, sweet_pairs
    from sweet_rl.base.data import sample_tasks
    from sweet_rl.base.models import TransformersBackend, load_model
    from sweet_rl.base.rollout import RolloutConfig, env_factory, episode_metrics, run_rollouts, scripted_rollouts
    from sweet_rl.base.sandbox import sandbox_available
    from sweet_rl.methods.scorers import CriticScorer
    t0 = time.perf_counter()
    tasks = sorted(sample_tasks('backend'), key=lambda t: len(t.problem_description))
    sim = TransformersBackend(*load_model(path, dtype='auto', device='cuda'))
    make_env = env_factory('backend', sim, max_turns=3, simulator_max_new_tokens=48)
    offline = scripted_rollouts(tasks[2:6], make_env, samples_per_task=3, max_questions=1, progress=False)
    critic = train_critic(CriticConfig(model=path, dtype='auto', lr=1e-3, batch_size=2, grad_accum=1, epochs=1), offline,
                          tmp / 'pipe_critic', max_steps=2, progress=False)
    actor = Actor.build(ActorConfig(model=path, method='sweet', dtype='auto'), device='cuda')
    recs = sample_candidates(actor.backend(), offline_turns(offline, make_env, 0.5), CandidateConfig(n_candidates=4, max_new_tokens=32), progress=False)
    rows = sweet_pairs(recs, score_turns(CriticScorer(critic), recs, progress=False), 2)
    if rows: actor = train_actor(ActorConfig(model=path, method='sweet', dtype='auto', lr=1e-4, batch_size=2), rows, tmp / 'pipe_actor',
                                 max_steps=2, progress=False, actor=actor)
    evals = run_rollouts(tasks[:2], env_factory('backend', sim, max_turns=2), actor.backend(), RolloutConfig(max_new_tokens=48), progress=False)
    torch.cuda.synchronize()
    res['smoke_pipeline'] = {'sandbox': sandbox_available()[0], 'offline_episodes': len(offline),
                             'offline_successes': sum(r['success'] for r in offline), 'states': len(recs), 'pairs': len(rows),
                             'evaluation': episode_metrics(evals, 'backend'), 'seconds': round(time.perf_counter() - t0, 1)}
    print(json.dumps(res, indent=2))
    if a.json: Path(a.json).write_text(json.dumps(res, indent=2))
    return res


if __name__ == '__main__': main()
