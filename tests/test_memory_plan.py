"""The launch plan's memory terms, each tied to the code path it models.

`sweet_rl.runs.launch.training_layout` reads the layout from the training code itself (`wants_reference`,
`reference_placement`, `logits_projection`); these tests check that the code does what the layout says, and measure
the terms that can be measured on a CPU at tiny shapes: the weights each trainer holds (counted), the reference's
sharding (ZeRO-3 and FSDP, one process), and the positions projected to the vocabulary at once (every call seen).
The bytes per projected position are checked against the committed CPU measurement of benchmarks/wrapped_logprobs.py.
"""
import copy, dataclasses, json, math, os, subprocess, sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

from sweet_rl.methods.actor import Actor, ActorConfig
from sweet_rl.methods.critic import Critic, CriticConfig
from sweet_rl.runs.launch import LOGIT_BYTES, memory_terms, model_facts, training_layout
from sweet_rl.base.train import is_sharded, policy_logprobs, reference_logprobs, reference_placement, shard_reference

ROOT = Path(__file__).resolve().parents[1]
ONE_PROCESS = {'distributed_type': 'NO', 'processes': 1}


def _bytes(module) -> int:
    return 0 if module is None else sum(p.numel() * p.element_size() for p in module.parameters())


@pytest.mark.parametrize('what,config', [
    ('critic', CriticConfig(lora=False)), ('critic', CriticConfig(lora=True)), ('critic', CriticConfig(lora=False, head='value')),
    ('actor', ActorConfig(lora=False, method='rft')), ('actor', ActorConfig(lora=False, method='mtdpo')),
    ('actor', ActorConfig(lora=True, method='sweet'))],
    ids=['critic-full', 'critic-lora', 'value-head', 'rft-full', 'mtdpo-full', 'sweet-lora'])
def test_plan_counts_the_weights_each_trainer_holds(tiny_lm, what, config):
    "The plan's weights and reference are the bytes of the models `build` makes (RFT: no reference; LoRA: the adapter off)."
    config = dataclasses.replace(config, model=tiny_lm, dtype='float32')
    built = (Critic if what == 'critic' else Actor).build(config, 'cpu')
    facts = model_facts(tiny_lm, config.lora_targets, config.lora_r)
    terms = memory_terms(facts, training_layout(what, config, ONE_PROCESS, facts))
    held = _bytes(getattr(built.model, 'backbone', built.model))  # a scalar head's own weights are a few numbers
    if config.lora: held -= facts['lora_parameters'] * 4  # the adapter is counted with the gradients, not the weights
    assert terms['weights'] == held
    assert terms['reference'] == _bytes(built.ref_model)
    assert (built.ref_model is None) == (what == 'actor' and config.method == 'rft' or config.lora or getattr(config, 'head', 'sweet') != 'sweet')


def test_rft_keeps_no_reference_in_later_rounds(tiny_lm):
    actor = Actor.build(ActorConfig(model=tiny_lm, lora=False, method='rft', dtype='float32'), 'cpu')
    assert actor.ref_model is None and actor.next_round().ref_model is None
    assert Actor.build(ActorConfig(model=tiny_lm, lora=False, method='mtdpo', dtype='float32'), 'cpu').ref_model is not None


aten = torch.ops.aten
PROJECTIONS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten._log_softmax.default, aten._log_softmax_backward_data.default}

class VocabularyRows(TorchDispatchMode):
    "The most positions one projection to the vocabulary (or its log-softmax, forward or backward) covered."
    def __init__(self, vocab): super().__init__(); self.vocab, self.most = vocab, 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in PROJECTIONS and out.shape[-1] == self.vocab: self.most = max(self.most, out.numel() // self.vocab)
        return out


@pytest.fixture
def gloo_group(tmp_path):
    dist.init_process_group('gloo', store=dist.FileStore(str(tmp_path / 'store'), 1), rank=0, world_size=1)
    try: yield
    finally: dist.destroy_process_group()


def _tiny_llama(tmp_path, **extra):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, **extra)
    folder = tmp_path / 'llama'; folder.mkdir(exist_ok=True); cfg.save_pretrained(folder)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg), str(folder)


@pytest.mark.parametrize('scaled', [False, True], ids=['chunked', 'full'])
def test_logits_term_is_what_the_wrapped_path_projects(tmp_path, gloo_group, scaled):
    "Under DDP the plan's logits term is the positions `policy_logprobs` projects at once (chunked, or all with scaled logits)."
    model, folder = _tiny_llama(tmp_path, **({'logit_scale': 2.0} if scaled else {}))
    ids = torch.randint(0, 97, (2, 12)); mask = torch.ones_like(ids)
    with VocabularyRows(97) as seen:
        policy_logprobs(torch.nn.parallel.DistributedDataParallel(model), ids, mask, chunk_size=4).sum().backward()
    facts = model_facts(folder)
    layout = training_layout('actor', ActorConfig(model=folder, method='rft', lora=False, batch_size=2, max_length=12),
                             {'distributed_type': 'MULTI_GPU', 'processes': 1}, facts)
    assert layout['projection'] == ('full' if scaled else 'chunked')
    assert memory_terms(facts, layout, chunk_size=4)['logits'] == seen.most * facts['vocab'] * LOGIT_BYTES
    assert seen.most == (2 * 12 if scaled else 2 * 4)  # the model's own logits cover the last position too


def test_logit_bytes_match_the_cpu_measurement():
    "Three float32 vocabulary tensors per position: the measured peaks of benchmarks/wrapped_logprobs.py, full and chunked."
    rec = json.loads((ROOT / 'benchmarks' / 'results' / 'wrapped_logprobs_cpu.json').read_text())
    a, peaks = rec['args'], {r['variant']: r['peak_gb'] * 2 ** 30 for r in rec['rows']}
    positions = {'full': a['batch'] * a['tokens'], 'chunked': a['batch'] * 256}
    for variant, rel in (('full', 0.05), ('chunked', 0.25)):  # the chunked peak also holds the weights' gradients
        planned = positions[variant] * a['vocab'] * LOGIT_BYTES
        assert abs(planned - peaks[variant]) <= rel * peaks[variant], (variant, planned / 2 ** 30, peaks[variant] / 2 ** 30)


class _Accelerator:  # what `shard_reference` reads of accelerate's Accelerator
    def __init__(self, kind): self.distributed_type, self.state = f'DistributedType.{kind}', type('State', (), {'deepspeed_plugin': None})()


def test_fsdp_shards_the_reference_per_layer(tmp_path, gloo_group):
    "Under FSDP the frozen copy is split like the trained model (each decoder layer and the root), and gives the same log-probs."
    from torch.distributed.fsdp import FSDPModule
    model, _ = _tiny_llama(tmp_path)
    ids = torch.randint(0, 97, (2, 12)); mask = torch.ones_like(ids); mask[1, 9:] = 0
    with torch.no_grad(): want = policy_logprobs(model, ids, mask)
    assert shard_reference(copy.deepcopy(model), _Accelerator('MULTI_GPU')) is not None  # DDP: each process keeps a copy
    assert reference_placement('MULTI_GPU') == 'copy' and reference_placement('DEEPSPEED', 2) == 'copy'
    ref = shard_reference(copy.deepcopy(model).requires_grad_(False), _Accelerator('FSDP'))
    assert is_sharded(ref) and all(isinstance(layer, FSDPModule) for layer in ref.model.layers)
    got = reference_logprobs(model, ref, ids, mask)
    torch.testing.assert_close(got[mask.bool()], want[mask.bool()], atol=1e-6, rtol=1e-6)


ZERO3_REFERENCE = '''
import json, math, os, socket, sys
with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port), RANK='0', LOCAL_RANK='0', WORLD_SIZE='1')
from sweet_rl.methods.critic import Critic, CriticConfig, synthetic_trajectories, training_examples
from sweet_rl.base.train import ExampleDataset, training_arguments, unwrap_model
cfg = CriticConfig(model=sys.argv[1], lora=False, dtype='float32', batch_size=1, grad_accum=1, lr=1e-3, save_steps=1000, logging_steps=1)
critic = Critic.build(cfg, 'cpu')
pairs = training_examples(synthetic_trajectories(2), 'sweet')
ds = {'train_micro_batch_size_per_gpu': 'auto', 'gradient_accumulation_steps': 'auto', 'train_batch_size': 'auto',
      'zero_optimization': {'stage': 3, 'stage3_param_persistence_threshold': 0}}
tr = critic.trainer_class(model=critic.model, args=training_arguments(cfg, sys.argv[2], max_steps=1, progress=False, deepspeed=ds),
                          train_dataset=ExampleDataset(pairs), data_collator=critic.collator(), processing_class=critic.tokenizer,
                          config=cfg, ref_model=critic.ref_model)
params = list(unwrap_model(tr.ref_model).parameters())
tr.train()
step = [r for r in tr.state.log_history if 'loss' in r][0]
print(json.dumps({'engine': type(tr.ref_model).__name__, 'partitioned': all(hasattr(p, 'ds_id') for p in params),
                  'whole_elements': sum(p.data.numel() for p in params), 'margin': step['margin'], 'bt': step['bt']}))
'''


def test_zero3_shards_the_critics_reference(tmp_path, tiny_lm):
    """Under ZeRO-3 the full fine-tuned critic's frozen copy is a DeepSpeed engine whose weights are partitioned (no whole
    copy left on the GPU), and at the first step it scores the pair as the trained model does (margin 0, BT loss log 2).
    Needs deepspeed (the dev and gpu extras); ~10 s on one CPU process."""
    pytest.importorskip('deepspeed', reason="deepspeed is not installed (the dev extra builds it: DS_BUILD_OPS=0 pip install -e '.[dev]')")
    (tmp_path / 'zero3_reference.py').write_text(ZERO3_REFERENCE)
    out = subprocess.run([sys.executable, str(tmp_path / 'zero3_reference.py'), tiny_lm, str(tmp_path / 'run')], cwd=tmp_path,
                         env={**os.environ, 'OMP_NUM_THREADS': '1'}, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r['engine'] == 'DeepSpeedEngine' and r['partitioned'] and r['whole_elements'] == 0, r
    assert r['margin'] == 0 and abs(r['bt'] - math.log(2)) < 1e-4, r
