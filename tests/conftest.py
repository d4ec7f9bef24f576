"Shared by the tests: the guard that no test writes into the committed paper results or figures; a fake cluster for the paper preset."
import hashlib, json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = [ROOT / 'figures', ROOT / 'results']


def _snapshot() -> dict:
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in COMMITTED if d.is_dir() for p in sorted(d.rglob('*')) if p.is_file()}


@pytest.fixture(scope='session', autouse=True)
def committed_outputs_untouched():
    "Fail the session if any test created, changed or removed a file under figures/ or results/."
    before = _snapshot()
    yield
    after = _snapshot()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"tests must not write into figures/ or results/; touched: {changed[:10]}"


# published architectures (config.json only: nothing else is read)
LLAMA = {'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'vocab_size': 128256, 'max_position_embeddings': 131072,
         'rms_norm_eps': 1e-5, 'tie_word_embeddings': False}
ARCHS = {
    'Llama-3.1-8B-Instruct': {**LLAMA, 'hidden_size': 4096, 'intermediate_size': 14336, 'num_hidden_layers': 32,
                              'num_attention_heads': 32, 'num_key_value_heads': 8},
    'Llama-3.1-70B-Instruct': {**LLAMA, 'hidden_size': 8192, 'intermediate_size': 28672, 'num_hidden_layers': 80,
                               'num_attention_heads': 64, 'num_key_value_heads': 8},
    'Qwen2-VL-7B-Instruct': {'architectures': ['Qwen2VLForConditionalGeneration'], 'model_type': 'qwen2_vl',
                             'text_config': {'model_type': 'qwen2_vl_text', 'hidden_size': 3584, 'intermediate_size': 18944,
                                             'num_hidden_layers': 28, 'num_attention_heads': 28, 'num_key_value_heads': 4,
                                             'vocab_size': 152064, 'rope_scaling': {'type': 'mrope', 'mrope_section': [16, 24, 24]}},
                             'vision_config': {'depth': 32, 'embed_dim': 1280, 'hidden_size': 3584, 'num_heads': 16,
                                               'mlp_ratio': 4, 'patch_size': 14, 'spatial_merge_size': 2}},
}


@pytest.fixture
def paper_cluster(tmp_path, monkeypatch):
    "Model folders with only their config.json, the data layout, and the environment the paper preset reads."
    models = tmp_path / 'models'
    for name, cfg in ARCHS.items():
        (models / name).mkdir(parents=True); (models / name / 'config.json').write_text(json.dumps(cfg))
    (models / 'clip-vit-base-patch32').mkdir()
    data = tmp_path / 'colbench'; data.mkdir()
    (tmp_path / 'frontend_offline.jsonl').write_text('')
    env = {'SWEET_RL_MODELS': str(models), 'SWEET_RL_DATA': str(data), 'SWEET_RL_FRONTEND_DATA': str(tmp_path / 'frontend_offline.jsonl'),
           'SWEET_RL_SIMULATOR_URL': 'http://simulator:8000/v1', 'SWEET_RL_VLM_SIMULATOR_URL': 'http://vlm:8000/v1'}
    for k, v in env.items(): monkeypatch.setenv(k, v)
    return tmp_path, env


SENTINEL_LOSS = 12345.0


@pytest.fixture
def tag_checkpoint():
    """Mark the losses logged in a Trainer checkpoint with a sentinel. A run that really resumes from that checkpoint
    carries the checkpoint's log forward, so its log shows the sentinel; a run that silently starts over does not."""
    def tag(checkpoint:Path) -> float:
        f = Path(checkpoint) / 'trainer_state.json'
        state = json.loads(f.read_text())
        marked = [r for r in state['log_history'] if 'loss' in r]
        assert marked, f"{f}: no logged loss to mark"
        for r in marked: r['loss'] = SENTINEL_LOSS
        f.write_text(json.dumps(state))
        return SENTINEL_LOSS
    return tag


@pytest.fixture(scope='session')
def tiny_lm(tmp_path_factory) -> str:
    """Folder of a 2-layer, 64-wide causal LM with SmolLM2's tokenizer and chat template and seeded random weights: its
    forward pass is about 18 times cheaper than SmolLM2-135M's. For tests of plumbing (resuming, launching, files, shapes), never of learning."""
    import shutil
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from sweet_rl.base.models import resolve_model_path
    src = resolve_model_path('smollm2-135m')
    cfg = AutoConfig.from_pretrained(src)
    for k, v in dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16).items(): setattr(cfg, k, v)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp('tiny-lm')
    AutoModelForCausalLM.from_config(cfg).save_pretrained(out)
    for f in src.iterdir():  # tokenizer, chat template, generation config
        if f.name.startswith(('tokenizer', 'special_tokens', 'chat_template', 'generation_config')): shutil.copy(f, out / f.name)
    return str(out)
