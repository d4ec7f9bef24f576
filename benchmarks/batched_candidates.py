"""SWEET-RL's candidate sampling through `VLLMBackend`, per state (one engine call of 16 requests per state, the path
before `CandidateConfig.states_per_call`) against batched across states (`states_per_call` states' requests in one call),
in the same run, on a stand-in engine: vLLM does not run on a CPU. The stand-in is installed as the `vllm` module, so
`sample_candidates`, `VLLMBackend.complete_groups` and the prompt tokenization are the real code; only the engine's
decoding is modelled. Each call costs a fixed overhead, then the engine decodes with continuous batching: at most
`max_num_seqs` requests run at once, and one decoding step costs `step_s + seq_s` per running request (memory-bound
decoding: a step of 256 requests costs little more than a step of 16). Each request's length comes from its seed
(uniform in [0.2, 1] x max tokens), and its text is a function of its prompt tokens and seed, as a seeded vLLM request's is,
so the two paths must give the same records. The engine's modelled seconds are slept, scaled by `--time-scale`, so the
wall times are measured, with our own code's overhead in them. The engine model is an assumption, not a measurement of
vLLM: `scripts/gpu_check.sh` times the real engine when a GPU is lent. Not a test.

    python benchmarks/batched_candidates.py                     # 64 states x 16 candidates of up to 1,024 tokens
    python benchmarks/batched_candidates.py --json benchmarks/results/batched_candidates_cpu.json
"""
import argparse, heapq, json, platform, random, sys, time, types

MODEL = dict(call_overhead_s=0.05, step_s=0.012, seq_s=3e-5, max_num_seqs=256)  # 8B in bf16 on one H100: ~12 ms a step at batch 16


def request_tokens(seed:int, max_tokens:int) -> int:
    return max(1, int(max_tokens * random.Random(seed).uniform(0.2, 1.0)))


def engine_seconds(lengths:list, call_overhead_s:float, step_s:float, seq_s:float, max_num_seqs:int) -> float:
    "Modelled seconds of one engine call: continuous batching of requests of these lengths, `max_num_seqs` at a time."
    queue, running, now_step, total = list(lengths), [], 0, call_overhead_s
    while queue or running:
        while queue and len(running) < max_num_seqs: heapq.heappush(running, now_step + queue.pop(0))
        until = running[0]  # the step at which the next request finishes: until then the batch is the same
        total += (until - now_step) * (step_s + seq_s * len(running))
        now_step = until
        while running and running[0] <= now_step: heapq.heappop(running)
    return total


def stand_in_vllm(model:dict, time_scale:float, log:list):
    "A `vllm` module whose `LLM.generate` sleeps the modelled seconds (scaled) and answers from prompt tokens and seed."
    class LLM:
        def __init__(self, **kwargs): pass
        def generate(self, prompts, sampling_params=None, lora_request=None, use_tqdm=True):
            lengths = [request_tokens(sp['seed'], sp['max_tokens']) for sp in sampling_params]
            seconds = engine_seconds(lengths, **model)
            time.sleep(seconds * time_scale)
            log.append({'requests': len(prompts), 'modelled_s': seconds})
            text = lambda p, sp: f"{random.Random(str((p['prompt_token_ids'], sp['seed']))).random():.12f}"
            out = lambda p, sp, n: types.SimpleNamespace(text=text(p, sp), token_ids=[0] * n, finish_reason='stop')
            return [types.SimpleNamespace(outputs=[out(p, sp, n)]) for p, sp, n in zip(prompts, sampling_params, lengths)]
        def shutdown(self): pass
    mods = {n: types.ModuleType(n) for n in ('vllm', 'vllm.inputs', 'vllm.lora', 'vllm.lora.request')}
    mods['vllm'].LLM, mods['vllm'].SamplingParams = LLM, lambda **kw: kw
    mods['vllm.inputs'].TokensPrompt = lambda **kw: kw
    mods['vllm.lora.request'].LoRARequest = lambda *a: a
    sys.modules.update(mods)


def states(n:int, rng:random.Random) -> list:
    "Agent states shaped like ColBench's: a task prompt and a few dialogue turns (a few hundred tokens)."
    words = 'list sort value index return filter merge split default empty string number check error case'.split()
    say = lambda k: ' '.join(rng.choice(words) for _ in range(k))
    out = []
    for i in range(n):
        conv = [{'role': 'user', 'content': f"Write a Python function that {say(60)}."}]
        for _ in range(rng.randint(0, 3)):
            conv += [{'role': 'assistant', 'content': f"Should it {say(15)}?"}, {'role': 'user', 'content': f"Yes, {say(20)}."}]
        out.append({'id': f'state{i}', 'task': {}, 'history': [], 'prompt': conv})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='smollm2-135m', help='tokenizer and chat template of the prompts (no weights are loaded)')
    ap.add_argument('--states', type=int, default=64)
    ap.add_argument('--n-candidates', type=int, default=16, help='paper: 16')
    ap.add_argument('--max-new-tokens', type=int, default=1024, help='paper preset: candidate_tokens 1024')
    ap.add_argument('--states-per-call', type=int, default=64)
    ap.add_argument('--time-scale', type=float, default=0.01, help="share of the engine's modelled seconds slept")
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    log = []
    stand_in_vllm(MODEL, args.time_scale, log)
    from sweet_rl.base.models import VLLMBackend
    from sweet_rl.methods.actor import CandidateConfig, sample_candidates
    turns = states(args.states, random.Random(0))
    res, records = {}, {}
    for name, per_call in (('per_state', 1), ('batched', args.states_per_call)):
        engine, start = VLLMBackend(args.model), len(log)
        cfg = CandidateConfig(n_candidates=args.n_candidates, max_new_tokens=args.max_new_tokens, states_per_call=per_call)
        t0, c0 = time.perf_counter(), time.process_time()
        records[name] = sample_candidates(engine, turns, cfg, progress=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        calls = log[start:]
        res[name] = {'wall_s': round(wall, 3), 'our_cpu_s': round(cpu, 3), 'engine_calls': len(calls),
                     'modelled_engine_s': round(sum(c['modelled_s'] for c in calls), 1)}
        engine.close()
    p, b = res['per_state'], res['batched']
    out = dict(device=platform.processor() or 'cpu', tokenizer=args.model, states=args.states, n_candidates=args.n_candidates,
               max_new_tokens=args.max_new_tokens, states_per_call=args.states_per_call, time_scale=args.time_scale,
               engine_model=MODEL, **res, batched_over_per_state_wall=round(b['wall_s'] / p['wall_s'], 3),
               speedup=round(p['wall_s'] / b['wall_s'], 2),
               modelled_speedup=round(p['modelled_engine_s'] / b['modelled_engine_s'], 2),
               identical=records['per_state'] == records['batched'],
               target='batched faster, identical records')
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, 'w') as f: json.dump(out, f, indent=2); f.write('\n')


if __name__ == '__main__': main()
