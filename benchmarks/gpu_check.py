"""One-GPU check of the paper-scale path: launched training under ZeRO-3 and FSDP, memory, decoding.

Runs in ~9 minutes on one H200 with no registry access (`scripts/gpu_check.sh`, which installs the carried wheels
first), on random-weight models built from a config and tokenizer files (nothing is downloaded):
  versions           python, torch, CUDA, GPU and the packages the steps use;
  models             a 4-layer random model of SmolLM2-135M's shape (its config and tokenizer) for the training steps;
  zero3_memory       one Multi-Turn DPO step launched through configs/accelerate/deepspeed_zero3.yaml (one process) on a
                     4-layer model of Llama-3.1-8B's width, a pair of 2 x 8192 tokens: the wrapped ZeRO-3 `policy_logprobs`,
                     trainable weights, Adam and the sharded reference; the GPU's peak use (sampled from this process)
                     beside the plan's total and loading peak for the same layout;
  candidates         `sample_candidates` one engine call per state against `states_per_call` states at once, on the same
                     4-layer model: with vLLM when it imports (and the memory `close()` hands back), else the transformers
                     backend (whose per-state path is the only one: it times one batched `generate` instead);
  zero3_critic_full  `accelerate launch` through configs/accelerate/deepspeed_zero3.yaml with one process: the critic
                     fully fine-tuned for 3 steps, then resumed from its checkpoint to 5, the saved weights reloaded;
  zero3_critic_lora  the LoRA critic, 2 steps (fp32 adapters on a bf16 base, non-reentrant checkpointing: C8);
  zero3_sweet / zero3_mtdpo / zero3_rft  the actor, fully fine-tuned, 2 steps each (SWEET through TRL's DPOTrainer);
  fsdp_critic        the same launch through configs/accelerate/fsdp.yaml (FSDP2), critic full fine-tuning, 2 steps;
  memory_probe       Llama-3.1-8B's shape with 2 and 4 layers, one pair of 2 x 8192 tokens forward and backward
                     (activation checkpointing, frozen weights) through both log-prob paths: the model's full logits
                     and `token_logprobs`' chunked projection; per-layer cost extrapolated to 32 layers and set beside
                     `launch.memory_terms` (the plan of `python -m sweet_rl.runs.launch plan`);
  decode             tokens/s of `TransformersBackend` at Llama-3.1-8B's shape (32 layers), 16 copies of a 2k-token
                     prompt, batch 8 and 16, 128 new tokens: the hours S1's candidate sampling would take.
Each step's result (or its failure) is written to the JSON record as soon as it ends, and the next step still runs.

`--dry` runs the same steps on the CPU at tiny shapes, in this process: the stages through `sweet_rl.runs.launch.main`
without `accelerate launch` and without a distributed engine; the FSDP step is skipped; the record says so.

Usage: python benchmarks/gpu_check.py [--dry] [--json PATH] [--steps a,b,...] [--tokenizer DIR] [--work DIR]
"""
import argparse, contextlib, dataclasses, json, math, os, shutil, signal, subprocess, sys, tempfile, threading, time, traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
ACCELERATE = ROOT / 'configs' / 'accelerate'
STEPS = ('versions', 'models', 'zero3_memory', 'candidates', 'zero3_critic_full', 'zero3_critic_lora', 'zero3_sweet', 'zero3_mtdpo',
         'zero3_rft', 'fsdp_critic', 'memory_probe', 'decode')  # the steps the last GPU record lacks first: a 9-minute limit cuts the end
PACKAGES = ('torch', 'transformers', 'accelerate', 'peft', 'trl', 'datasets', 'deepspeed', 'vllm', 'safetensors', 'tokenizers')
LLAMA_8B = {'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'vocab_size': 128256, 'hidden_size': 4096,
            'intermediate_size': 14336, 'num_hidden_layers': 32, 'num_attention_heads': 32, 'num_key_value_heads': 8,
            'max_position_embeddings': 131072, 'rms_norm_eps': 1e-5, 'rope_theta': 500000.0, 'tie_word_embeddings': False}
TINY = {'num_hidden_layers': 2, 'hidden_size': 64, 'intermediate_size': 128, 'num_attention_heads': 4, 'num_key_value_heads': 2,
        'head_dim': 16}  # tests/conftest.py's `tiny_lm`
TOKENIZER_FILES = ('tokenizer', 'special_tokens', 'chat_template', 'generation_config')  # file name prefixes copied with a model
WIDTH = ('hidden_size', 'intermediate_size', 'num_attention_heads', 'num_key_value_heads')


@dataclasses.dataclass
class Shapes:
    "What each step runs at: the GPU check's shapes, or the dry run's."
    train_layers:int=4 # layers of the random training model (SmolLM2-135M's shape otherwise)
    train_overrides:dict=dataclasses.field(default_factory=dict) # config fields changed besides the layers
    probe_config:dict=dataclasses.field(default_factory=lambda: dict(LLAMA_8B)) # the memory probe's shape
    decode_config:dict=dataclasses.field(default_factory=lambda: dict(LLAMA_8B)) # the decoder's (its vocabulary covers the tokenizer's)
    probe_layers:tuple=(2, 4) # layers of the two probe models
    probe_tokens:int=8192 # tokens of each of the pair's two sequences
    decode_layers:int=32
    decode_prompt_tokens:int=2048
    decode_new_tokens:int=128
    decode_prompts:int=16
    decode_batches:tuple=(8, 16)
    critic_sittings:tuple=(3, 5) # the full fine-tuned critic's launches: steps at the end of each (the second resumes)
    actor_steps:int=2
    step_timeout_s:int=150 # one launched stage (or probe) at most
    wide_layers:int=4 # layers of the 8B-width model of `zero3_memory` and `candidates` (the tokenizer's vocabulary)
    wide_overrides:dict=dataclasses.field(default_factory=lambda: {**{k: LLAMA_8B[k] for k in WIDTH}, 'head_dim': 128}) # its width
    candidate_states:int=16 # states of `candidates`
    candidate_n:int=16 # candidates per state
    candidate_tokens:int=256 # new tokens per candidate at most

GPU = Shapes()
DRY = Shapes(train_layers=2, train_overrides={k: v for k, v in TINY.items() if k != 'num_hidden_layers'},
             probe_config={**LLAMA_8B, **TINY, 'vocab_size': 4096}, probe_tokens=384, decode_config={**LLAMA_8B, **TINY, 'vocab_size': 49152},
             decode_layers=2, decode_prompt_tokens=64, decode_new_tokens=8, decode_prompts=4, decode_batches=(2, 4), critic_sittings=(1, 2),
             actor_steps=1, step_timeout_s=120, wide_layers=2, wide_overrides={k: v for k, v in TINY.items() if k != 'num_hidden_layers'},
             candidate_states=4, candidate_n=4, candidate_tokens=8)
# the shares of the paper's candidate sampling (S1): offline states x candidates x new tokens at most
CANDIDATE_STATES, CANDIDATES, CANDIDATE_TOKENS = 7000, 16, 1024


class Skipped(Exception): "A step that cannot run here; its message says why."
class StepTimeout(Exception): pass


class Record:
    "The JSON record of one check: written again, atomically, whenever a step starts or ends."
    def __init__(self, path:Path, header:dict): self.path, self.data = Path(path), {**header, 'steps': {}}; self.write()
    def write(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f'.{self.path.name}.tmp')
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + '\n'); os.replace(tmp, self.path)
    def step(self, name:str, **values): self.data['steps'][name] = values; self.write()


@contextlib.contextmanager
def time_limit(seconds:int):
    "Raise `StepTimeout` in this (main) thread after `seconds`."
    def stop(*_): raise StepTimeout(f"over {seconds} s")
    old = signal.signal(signal.SIGALRM, stop); signal.alarm(seconds)
    try: yield
    finally: signal.alarm(0); signal.signal(signal.SIGALRM, old)


class Context:
    "What the steps share: the arguments, the work folder, the device, the shapes and the models built so far."
    def __init__(self, args):
        self.args, self.dry = args, args.dry
        self.shapes = DRY if args.dry else GPU
        self.device = 'cpu' if args.dry else 'cuda'
        self.work = Path(args.work or tempfile.mkdtemp(prefix='gpu_check_'))
        self.tokenizer = Path(args.tokenizer) if args.tokenizer else default_tokenizer_dir()
        self.train_model = None  # folder of the random training model (step `models`)
        self.wide_model = None  # folder of the 8B-width model (steps `zero3_memory`, `candidates`)


def default_tokenizer_dir() -> Path:
    "The carried folder `gpucheck/tokenizer` (scripts/gpu_check.sh prepare), else SmolLM2-135M in sweet_rl's model cache."
    carried = ROOT / 'gpucheck' / 'tokenizer'
    if (carried / 'config.json').is_file(): return carried
    from sweet_rl.base.models import resolve_model_path
    return resolve_model_path('smollm2-135m', fetch=False)


def random_model(config_dir:Path, out:Path, layers:int, overrides:dict|None=None, seed:int=0) -> Path:
    "A folder with a seeded random-weight model of `config_dir`'s config (`layers` layers, `overrides`) and its tokenizer files."
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.from_pretrained(config_dir)
    for k, v in {**(overrides or {}), 'num_hidden_layers': layers}.items(): setattr(cfg, k, v)
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(cfg).save_pretrained(out)
    for f in Path(config_dir).iterdir():
        if f.name.startswith(TOKENIZER_FILES): shutil.copy(f, out / f.name)
    return out


def config_model(config:dict, layers:int, device:str, dtype=torch.bfloat16):
    "A random-weight causal LM of `config` with `layers` layers, built directly on `device`."
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(**{**config, 'num_hidden_layers': layers})
    torch.manual_seed(0)
    with torch.device(device): return AutoModelForCausalLM.from_config(cfg, dtype=dtype).eval()


# ---- steps ----

def step_versions(ctx:Context) -> dict:
    import importlib.metadata, platform
    def version(p):
        try: return importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError: return None
    out = {'python': platform.python_version(), 'platform': platform.platform(), 'packages': {p: version(p) for p in PACKAGES},
           'cuda': torch.version.cuda, 'cuda_available': torch.cuda.is_available(), 'carried_wheels': os.environ.get('GPU_CHECK_CARRIED', '')}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        out['gpu'] = {'name': p.name, 'memory_gib': round(p.total_memory / 2 ** 30, 1), 'count': torch.cuda.device_count()}
    return out


def step_models(ctx:Context) -> dict:
    s = ctx.shapes
    ctx.train_model = random_model(ctx.tokenizer, ctx.work / 'train_model', s.train_layers, s.train_overrides)
    from sweet_rl.runs.launch import model_facts
    return {'tokenizer': str(ctx.tokenizer), 'path': str(ctx.train_model), 'layers': s.train_layers,
            'parameters': model_facts(str(ctx.train_model))['parameters']}


def launch_command(ctx:Context, stage:str, config:Path, data:Path, out:Path, max_steps:int, accelerate:str) -> list[str]:
    "`accelerate launch --config_file configs/accelerate/ACCELERATE --num_processes 1 -m sweet_rl.runs.launch STAGE ...`."
    return [sys.executable, '-m', 'accelerate.commands.launch', '--config_file', str(ACCELERATE / accelerate), '--num_processes', '1',
            '-m', 'sweet_rl.runs.launch', stage, '--config', str(config), '--data', str(data), '--out', str(out),
            '--max-steps', str(max_steps), '--no-progress']


def run_launch(ctx:Context, cmd:list[str], out:Path) -> dict:
    "Run one launched stage: in a subprocess (GPU), or its `sweet_rl.runs.launch` part in this process (dry: no launcher, CPU)."
    t0 = time.perf_counter()
    if ctx.dry:
        from sweet_rl.runs.launch import main
        main(cmd[cmd.index('sweet_rl.runs.launch') + 1:] + ['--cpu'])
    else:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / 'launch.log', 'a') as log:  # its own session: a timeout ends the launcher and the ranks it started
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
            try: rc = proc.wait(timeout=ctx.shapes.step_timeout_s)
            finally:
                if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL); proc.wait()
        if rc != 0:
            raise RuntimeError(f"exit code {rc}; log {out / 'launch.log'}:\n{(out / 'launch.log').read_text(errors='replace')[-3000:]}")
    return {'launch_seconds': round(time.perf_counter() - t0, 1)}


def logged_losses(out:Path) -> list[float]:
    return [r['loss'] for r in map(json.loads, (out / 'train_log.jsonl').read_text().splitlines()) if 'loss' in r]


def changed_share(saved:Path, fresh) -> float:
    "Share of the saved tensors that differ from those of a freshly built model (the training changed and saved them)."
    from safetensors.torch import load_file
    state, ref = load_file(str(saved / 'weights.safetensors')), fresh.trainable_state()
    return sum(not torch.equal(state[k].float(), ref[k].float().cpu()) for k in state) / max(len(state), 1)


def free(*_):
    import gc
    gc.collect()
    if torch.cuda.is_available(): torch.cuda.empty_cache()


def _critic_data(ctx:Context) -> Path:
    from sweet_rl.base.core import write_jsonl
    from sweet_rl.methods.critic import synthetic_trajectories
    path = ctx.work / 'trajectories.jsonl'
    if not path.is_file(): write_jsonl(path, synthetic_trajectories(8, seed=0))
    return path


def _critic_config(ctx:Context, lora:bool, save_steps:int):
    from sweet_rl.methods.critic import CriticConfig
    return CriticConfig(model=str(ctx.train_model), lora=lora, dtype='float32' if ctx.dry else 'auto', lr=1e-3 if lora else 1e-4,
                        batch_size=1, grad_accum=1, warmup_ratio=0.0, max_length=1024, gradient_checkpointing=True, save_steps=save_steps,
                        save_minutes=None, save_total_limit=1, logging_steps=1)


def critic_launch(ctx:Context, name:str, lora:bool, accelerate:str, steps:tuple) -> dict:
    "Train the critic through one launch per entry of `steps` (each resuming the last checkpoint), then reload what it saved."
    from sweet_rl.methods.critic import Critic, make_pairs, synthetic_trajectories
    if ctx.train_model is None: raise Skipped("no training model (step `models` did not run)")
    out, data = ctx.work / name, _critic_data(ctx)
    config = _critic_config(ctx, lora, save_steps=steps[0]); config.save(ctx.work / f'{name}.json')
    res, sittings = {'engine': 'none (dry: one CPU process, no launcher)' if ctx.dry else accelerate}, []
    for i, n in enumerate(steps):
        if i:  # resume: the saved result of the last sitting goes, its checkpoint stays and is marked
            shutil.rmtree(out / 'critic')
            ckpt = sorted((out / 'checkpoints').glob('checkpoint-*'), key=lambda p: int(p.name.split('-')[-1]))[-1]
            mark_checkpoint(ckpt)
            res['resumed_from'] = ckpt.name
        cmd = launch_command(ctx, 'critic', ctx.work / f'{name}.json', data, out, n, accelerate)
        sittings.append({'max_steps': n, **run_launch(ctx, cmd, out)})
    res['command'] = ' '.join(cmd[1:]); res['sittings'] = sittings
    losses = logged_losses(out)
    res['losses'] = [round(l, 4) for l in losses]
    if len(steps) > 1:  # the second sitting's log starts with the checkpoint's marked losses and trains only the steps after it
        res['resumed'] = losses[:steps[0]] == [SENTINEL] * steps[0] and len(losses) == steps[-1]
    assert all(math.isfinite(l) for l in losses if l != SENTINEL), f"non-finite loss: {losses}"
    critic = Critic.load(out / 'critic', ctx.device)
    scores = critic.turn_scores(synthetic_trajectories(2, seed=1))
    res['reloaded'] = {'turn_scores_finite': all(bool(torch.isfinite(s).all()) for s in scores),
                       'pair_accuracy': critic.pair_accuracy(make_pairs(synthetic_trajectories(4, seed=1)))['pair_accuracy']}
    del critic; free()
    fresh = Critic.build(config, 'cpu'); res['reloaded']['changed_share'] = changed_share(out / 'critic', fresh); del fresh; free()
    if len(steps) > 1 and not res['resumed']: raise AssertionError(f"the second sitting did not resume: losses {losses}")
    if not res['reloaded']['turn_scores_finite']: raise AssertionError("the reloaded critic gives non-finite scores")
    return res


SENTINEL = 12345.0

def mark_checkpoint(ckpt:Path):
    "Mark the losses logged in a checkpoint: a run that resumes from it carries them into its log (tests/conftest.py's `tag_checkpoint`)."
    f = ckpt / 'trainer_state.json'
    state = json.loads(f.read_text())
    for r in state['log_history']:
        if 'loss' in r: r['loss'] = SENTINEL
    f.write_text(json.dumps(state))


def actor_rows(method:str) -> list[dict]:
    "Two training rows of each actor method (cf. benchmarks/cuda_check.py)."
    p1, p2 = [{'role': 'user', 'content': 'Greet me.'}], [{'role': 'user', 'content': 'Ask me a question.'}]
    say = lambda p, text: p + [{'role': 'assistant', 'content': text}]
    if method == 'sweet': return [{'prompt': p1, 'chosen': 'Hello! How can I help?', 'rejected': 'No.'},
                                  {'prompt': p2, 'chosen': 'What are you working on?', 'rejected': 'Fine.'}]
    if method == 'mtdpo': return [{'chosen': say(p1, 'Hello! How can I help?'), 'rejected': say(p1, 'No.')},
                                  {'chosen': say(p2, 'What are you working on?'), 'rejected': say(p2, 'Fine.')}]
    return [{'conversation': say(p1, 'Hello! How can I help?')}, {'conversation': say(p2, 'What are you working on?')}]


def actor_launch(ctx:Context, method:str, accelerate:str='deepspeed_zero3.yaml') -> dict:
    from sweet_rl.methods.actor import Actor, ActorConfig, pair_margins
    from sweet_rl.base.core import write_jsonl
    if ctx.train_model is None: raise Skipped("no training model (step `models` did not run)")
    name, out, steps = f'actor_{method}', ctx.work / f'actor_{method}', ctx.shapes.actor_steps
    write_jsonl(ctx.work / f'{name}.jsonl', actor_rows(method))
    config = ActorConfig(model=str(ctx.train_model), method=method, lora=False, dtype='float32' if ctx.dry else 'auto', lr=1e-4,
                         batch_size=1, grad_accum=1, warmup_ratio=0.0, max_length=1024, gradient_checkpointing=True, save_steps=1000,
                         save_minutes=None, save_total_limit=1, logging_steps=1)
    config.save(ctx.work / f'{name}.json')
    cmd = launch_command(ctx, 'actor', ctx.work / f'{name}.json', ctx.work / f'{name}.jsonl', out, steps, accelerate)
    res = {'engine': 'none (dry: one CPU process, no launcher)' if ctx.dry else accelerate, 'command': ' '.join(cmd[1:]),
           **run_launch(ctx, cmd, out)}
    losses = logged_losses(out); res['losses'] = [round(l, 4) for l in losses]
    assert losses and all(math.isfinite(l) for l in losses), f"losses {losses}"
    actor = Actor.load(out / 'actor', ctx.device)
    margins = pair_margins(actor.model, actor.tokenizer, actor_rows('sweet'))
    res['reloaded'] = {'margins': [round(float(m), 4) for m in margins], 'finite': bool(torch.isfinite(margins).all())}
    del actor; free()
    fresh = Actor.build(config, 'cpu'); res['reloaded']['changed_share'] = changed_share(out / 'actor', fresh); del fresh; free()
    if not res['reloaded']['finite']: raise AssertionError("the reloaded actor gives non-finite log-probs")
    return res


def step_zero3_critic_full(ctx): return critic_launch(ctx, 'zero3_critic_full', False, 'deepspeed_zero3.yaml', ctx.shapes.critic_sittings)
def step_zero3_critic_lora(ctx): return critic_launch(ctx, 'zero3_critic_lora', True, 'deepspeed_zero3.yaml', (2,))
def step_zero3_sweet(ctx): return actor_launch(ctx, 'sweet')
def step_zero3_mtdpo(ctx): return actor_launch(ctx, 'mtdpo')
def step_zero3_rft(ctx): return actor_launch(ctx, 'rft')

def step_fsdp_critic(ctx):
    if ctx.dry: raise Skipped("dry: FSDP2 shards only inside a process group that `accelerate launch` starts, and the dry run starts no launcher")
    return critic_launch(ctx, 'fsdp_critic', False, 'fsdp.yaml', (2,))


def peak_bytes(fn, device:str) -> tuple:
    "Run `fn()`; its peak memory above the start in bytes (CUDA: allocated; CPU: resident set, sampled) and seconds."
    if device == 'cuda':
        torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
        t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base, time.perf_counter() - t0
    import resource
    def rss(): return int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize()
    base, peak, done = rss(), [0], threading.Event()
    def watch():
        while not done.is_set(): peak[0] = max(peak[0], rss()); time.sleep(0.002)
    t = threading.Thread(target=watch, daemon=True); t.start()
    t0 = time.perf_counter(); fn(); secs = time.perf_counter() - t0
    done.set(); t.join()
    return max(peak[0] - base, 0), secs


def full_logprobs(model, ids, mask):
    "The full-logits path (`policy_logprobs` under a wrapper when the head scales its logits): every position's logits at once."
    import torch.nn.functional as F
    from sweet_rl.base.models import gather_logprobs
    return F.pad(gather_logprobs(model(input_ids=ids, attention_mask=mask).logits[:, :-1].float(), ids[:, 1:]), (1, 0))


def step_memory_probe(ctx:Context) -> dict:
    "Activations and vocabulary projection of one pair at 2 and 4 layers, extrapolated, beside the plan's terms."
    from sweet_rl.methods.critic import CriticConfig
    from sweet_rl.runs.launch import memory_terms, model_facts, training_layout
    from sweet_rl.base.models import token_logprobs
    from sweet_rl.base.train import checkpoint_activations
    s, GiB = ctx.shapes, 2 ** 30
    L_paper = s.probe_config['num_hidden_layers']
    folder = ctx.work / 'probe_config'; folder.mkdir(exist_ok=True)
    (folder / 'config.json').write_text(json.dumps(s.probe_config))
    facts = model_facts(str(folder))
    config = CriticConfig(model=str(folder), lora=False, batch_size=1, max_length=s.probe_tokens, gradient_checkpointing=True, dtype='bfloat16')
    layout = training_layout('critic', config, {'distributed_type': 'NO', 'processes': 1}, facts)  # one pair: 2 sequences
    paths = {'chunked': token_logprobs, 'full': full_logprobs}
    res = {'shape': {k: s.probe_config[k] for k in ('hidden_size', 'intermediate_size', 'vocab_size')}, 'tokens': [2, s.probe_tokens],
           'checkpointing': True, 'weights': 'frozen (the gradients of a full fine-tuning are a separate term of the plan)',
           'measured_gib': {}, 'planned_gib': {}}
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, s.probe_config['vocab_size'], (2, s.probe_tokens), generator=g).to(ctx.device)
    mask = torch.ones_like(ids)
    for L in s.probe_layers:
        model = config_model(s.probe_config, L, ctx.device, torch.bfloat16 if not ctx.dry else torch.float32)
        model.requires_grad_(False); model.enable_input_require_grads(); model.train(); checkpoint_activations(model)
        for name, fn in paths.items():
            peak, secs = peak_bytes(lambda: fn(model, ids, mask).sum().backward(), ctx.device)
            res['measured_gib'][f'{name}_{L}'] = round(peak / GiB, 3); res.setdefault('path_seconds', {})[f'{name}_{L}'] = round(secs, 2)
        del model; free()
    lo, hi = s.probe_layers
    for name in paths:
        a, b = res['measured_gib'][f'{name}_{lo}'], res['measured_gib'][f'{name}_{hi}']
        per_layer = (b - a) / (hi - lo)
        res['measured_gib'][f'{name}_{L_paper}_extrapolated'] = round(a + (L_paper - lo) * per_layer, 3)
        res['measured_gib'][f'{name}_per_layer'] = round(per_layer, 4)
        for L in (*s.probe_layers, L_paper):
            terms = memory_terms({**facts, 'layers': L}, {**layout, 'projection': name, 'weight_bytes': 2 if not ctx.dry else 4})
            res['planned_gib'][f'{name}_{L}'] = round((terms['activations'] + terms['logits']) / GiB, 3)
        res.setdefault('measured_over_planned', {})[name] = round(res['measured_gib'][f'{name}_{L_paper}_extrapolated'] / res['planned_gib'][f'{name}_{L_paper}'], 3)
    return res


def step_decode(ctx:Context) -> dict:
    "Decoding throughput at the 8B shape: 16 candidates of one state, as `sample_candidates` asks them of `TransformersBackend`."
    from transformers import AutoTokenizer
    from sweet_rl.base.models import SamplingParams, TransformersBackend
    s = ctx.shapes
    model = config_model(s.decode_config, s.decode_layers, ctx.device, torch.bfloat16 if not ctx.dry else torch.float32)
    tok = AutoTokenizer.from_pretrained(ctx.tokenizer)
    if len(tok) > s.decode_config['vocab_size']: raise ValueError(f"the tokenizer's {len(tok)} tokens exceed the decoder's vocabulary")
    words = ' '.join(f'item{i}' for i in range(s.decode_prompt_tokens))
    prompt = tok.decode(tok(words, add_special_tokens=False)['input_ids'][:s.decode_prompt_tokens])
    convs = [[{'role': 'user', 'content': prompt}]] * s.decode_prompts
    res = {'layers': s.decode_layers, 'prompt_tokens': s.decode_prompt_tokens, 'new_tokens': s.decode_new_tokens, 'prompts': s.decode_prompts}
    for b in s.decode_batches:
        backend = TransformersBackend(model, tok, batch_size=b)
        t0 = time.perf_counter()
        outs = backend.complete(convs, SamplingParams(max_new_tokens=s.decode_new_tokens, temperature=1.0, seed=0))
        if ctx.device == 'cuda': torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        n = sum(o.num_tokens for o in outs)
        res[f'batch_{b}'] = {'seconds': round(secs, 2), 'tokens': n, 'tokens_per_s': round(n / secs, 1)}
    best = max(res[f'batch_{b}']['tokens_per_s'] for b in s.decode_batches)
    res['candidate_hours_one_gpu'] = {'states': CANDIDATE_STATES, 'candidates': CANDIDATES, 'max_new_tokens': CANDIDATE_TOKENS,
                                      'hours_at_best_rate': round(CANDIDATE_STATES * CANDIDATES * CANDIDATE_TOKENS / best / 3600, 1)}
    del model; free()
    return res


def wide_model(ctx:Context) -> Path:
    "The random model of Llama-3.1-8B's width with `wide_layers` layers and the tokenizer's vocabulary, made once."
    if ctx.wide_model is None:
        s = ctx.shapes
        ctx.wide_model = random_model(ctx.tokenizer, ctx.work / 'wide_model', s.wide_layers, s.wide_overrides)
    return ctx.wide_model


def long_pair_rows(tokenizer_dir:Path, tokens:int) -> list[dict]:
    "One Multi-Turn DPO row whose two conversations are each a little under `tokens` tokens."
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    ids = tok(' '.join(f'item{i}' for i in range(tokens)), add_special_tokens=False)['input_ids'][:tokens - 64]
    user = [{'role': 'user', 'content': tok.decode(ids)}]
    return [{'chosen': user + [{'role': 'assistant', 'content': 'Here is the function you asked for.'}],
             'rejected': user + [{'role': 'assistant', 'content': 'No.'}]}]


def step_zero3_memory(ctx:Context) -> dict:
    "One MT-DPO step through the wrapped ZeRO-3 path, trainable weights and Adam, at 2 x probe_tokens: peak use against the plan."
    from sweet_rl.base.core import write_jsonl
    from sweet_rl.methods.actor import ActorConfig
    from sweet_rl.runs.launch import estimate_memory, model_facts, training_layout
    s, GiB = ctx.shapes, 2 ** 30
    model = wide_model(ctx)
    config = ActorConfig(model=str(model), method='mtdpo', lora=False, dtype='float32' if ctx.dry else 'auto', lr=1e-6, batch_size=1,
                         grad_accum=1, warmup_ratio=0.0, max_length=s.probe_tokens, gradient_checkpointing=True, save_steps=1000,
                         save_minutes=None, save_total_limit=1, logging_steps=1)
    config.save(ctx.work / 'zero3_memory.json'); write_jsonl(ctx.work / 'zero3_memory.jsonl', long_pair_rows(ctx.tokenizer, s.probe_tokens))
    facts = model_facts(str(model))
    layout = training_layout('actor', config, {'distributed_type': 'DEEPSPEED', 'zero_stage': 3, 'processes': 1}, facts)
    plan = estimate_memory(facts, layout)
    cmd = launch_command(ctx, 'actor', ctx.work / 'zero3_memory.json', ctx.work / 'zero3_memory.jsonl', ctx.work / 'zero3_memory', 1,
                         'deepspeed_zero3.yaml')
    if ctx.device == 'cuda':  # the launched process's use, seen device-wide from here (its CUDA context and allocator cache included)
        free_now = lambda: torch.cuda.mem_get_info()[0]
        base, low, done = free_now(), [free_now()], threading.Event()
        def watch():
            while not done.is_set(): low[0] = min(low[0], free_now()); time.sleep(0.05)
        t = threading.Thread(target=watch, daemon=True); t.start()
        try: res = run_launch(ctx, cmd, ctx.work / 'zero3_memory')
        finally: done.set(); t.join()
        peak, measured = base - low[0], 'GPU memory in use (device-wide, sampled every 50 ms) above the start'
    else:
        box = {}
        peak, secs = peak_bytes(lambda: box.update(run_launch(ctx, cmd, ctx.work / 'zero3_memory')), 'cpu')
        res, measured = box, 'resident memory of this process (dry: one CPU process, float32, no engine)'
    losses = logged_losses(ctx.work / 'zero3_memory')
    assert losses and all(math.isfinite(l) for l in losses), f"losses {losses}"
    return {**res, 'command': ' '.join(cmd[1:]), 'parameters': facts['parameters'], 'tokens': [2, s.probe_tokens], 'losses': losses,
            'measured': measured, 'peak_gib': round(peak / GiB, 2), 'planned_gib': plan,
            'peak_over_planned_total': round(peak / GiB / plan['total'], 3), 'peak_over_planned_loading': round(peak / GiB / plan['loading'], 3)}


def step_candidates(ctx:Context) -> dict:
    "Per-state against batched `sample_candidates` on the 8B-width model: vLLM when it imports, else the transformers backend."
    import importlib.util
    from sweet_rl.base.models import SamplingParams, TransformersBackend
    from sweet_rl.methods.actor import CandidateConfig, sample_candidates
    s, model = ctx.shapes, wide_model(ctx)
    turns = [{'id': f'state{i}', 'task': {}, 'history': [],
              'prompt': [{'role': 'user', 'content': f"Task {i}: write a Python function that sorts a list of {i + 3} numbers."}]}
             for i in range(s.candidate_states)]
    cfg = lambda k: CandidateConfig(n_candidates=s.candidate_n, max_new_tokens=s.candidate_tokens, temperature=1.0, states_per_call=k)
    res = {'states': s.candidate_states, 'candidates': s.candidate_n, 'max_new_tokens': s.candidate_tokens}
    def timed(fn):
        t0 = time.perf_counter(); out = fn()
        if ctx.device == 'cuda': torch.cuda.synchronize()
        return out, round(time.perf_counter() - t0, 2)
    if ctx.device == 'cuda' and importlib.util.find_spec('vllm') is not None:
        from sweet_rl.base.models import VLLMBackend
        before = torch.cuda.mem_get_info()[0]
        engine = VLLMBackend(str(model), gpu_memory_utilization=0.5, max_model_len=4096, enforce_eager=True)
        res['backend'] = 'vllm'
        one, res['per_state_s'] = timed(lambda: sample_candidates(engine, turns, cfg(1), progress=False))
        many, res['batched_s'] = timed(lambda: sample_candidates(engine, turns, cfg(s.candidate_states), progress=False))
        pairs = [(a, b) for r1, r2 in zip(one, many) for a, b in zip(r1['candidates'], r2['candidates'])]
        res['identical_share'] = round(sum(a == b for a, b in pairs) / len(pairs), 3)  # seeded per request; batch-dependent rounding may differ
        held = torch.cuda.mem_get_info()[0]
        engine.close()
        res['close_gib'] = {'taken': round((before - held) / 2 ** 30, 2), 'left_after_close': round((before - torch.cuda.mem_get_info()[0]) / 2 ** 30, 2)}
    else:
        res['backend'] = 'transformers' + ('' if ctx.dry else ' (vllm does not import here)')
        backend = TransformersBackend(str(model), batch_size=s.candidate_n, device=ctx.device)
        _, res['per_state_s'] = timed(lambda: sample_candidates(backend, turns, cfg(1), progress=False))
        backend.batch_size = s.candidate_n * 4
        params = SamplingParams(max_new_tokens=s.candidate_tokens, temperature=1.0, seed=0)
        _, res['batched_s'] = timed(lambda: backend.generate([t['prompt'] for t in turns for _ in range(s.candidate_n)], params))
        res['batched_is'] = f"one generate of every state's candidates at batch {backend.batch_size} (other draws than per state)"
        del backend
    res['speedup'] = round(res['per_state_s'] / res['batched_s'], 2)
    return res


def run(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--dry', action='store_true', help='the same steps on the CPU at tiny shapes, in this process')
    ap.add_argument('--json', default=None, help='the record (default: benchmarks/results/gpu_check_{h200,dry}.json)')
    ap.add_argument('--steps', default=','.join(STEPS), help='comma-separated subset of ' + ', '.join(STEPS))
    ap.add_argument('--tokenizer', default=None, help='folder with config.json and tokenizer files (default: gpucheck/tokenizer, else the SmolLM2-135M preset)')
    ap.add_argument('--work', default=None, help='scratch folder (default: a new temporary one)')
    ap.add_argument('--commit', default=os.environ.get('GPU_CHECK_COMMIT'), help='code version to record (the GPU machine has no .git)')
    a = ap.parse_args(argv)
    steps = [s for s in a.steps.split(',') if s]
    if unknown := set(steps) - set(STEPS): ap.error(f"unknown steps {sorted(unknown)}; choose from {', '.join(STEPS)}")
    if not a.dry and not torch.cuda.is_available(): ap.error("no CUDA GPU here: run with --dry on a CPU")
    ctx = Context(a)
    path = Path(a.json or ROOT / 'benchmarks' / 'results' / f"gpu_check_{'dry' if a.dry else 'h200'}.json")
    rec = Record(path, {'command': Path(sys.executable).name + ' benchmarks/gpu_check.py ' + ' '.join(sys.argv[1:] if argv is None else argv),
                        'mode': 'dry (CPU, tiny shapes)' if a.dry else 'gpu', 'commit': a.commit or _git_commit(),
                        'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'shapes': dataclasses.asdict(ctx.shapes)})
    for name in STEPS:
        if name not in steps: continue
        rec.step(name, status='running')
        t0 = time.perf_counter()
        try:
            with time_limit(ctx.shapes.step_timeout_s * (2 if name.endswith('full') or name == 'candidates' else 1)): out = globals()[f'step_{name}'](ctx)
            rec.step(name, **{'status': 'ok', **out, 'seconds': round(time.perf_counter() - t0, 1)})
        except Skipped as e: rec.step(name, status='skipped', reason=str(e))
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt): raise
            rec.step(name, status='failed', seconds=round(time.perf_counter() - t0, 1), error=f'{type(e).__name__}: {e}'[-4000:],
                     traceback=traceback.format_exc()[-3000:])
        finally: free()
        print(f"[gpu_check] {name}: {rec.data['steps'][name]['status']}", flush=True)
    rec.data['finished'] = time.strftime('%Y-%m-%dT%H:%M:%S%z'); rec.write()
    return rec.data


def _git_commit():
    try: return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError): return None


if __name__ == '__main__': run()
