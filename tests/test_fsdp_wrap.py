"""FSDP2 shards a critic with a scalar head layer by layer, as it shards a causal LM.

accelerate's transformer wrap policy (configs/accelerate/fsdp.yaml: TRANSFORMER_BASED_WRAP) reads the layer classes from
the root module's `_no_split_modules`. A value, regression or vision critic's root is our `HeadModel`, which had none,
so the policy wrapped nothing and only the root was sharded: every forward gathered the whole model."""
import os
from unittest import mock

import pytest
import torch

from accelerate.utils import FullyShardedDataParallelPlugin
from accelerate.utils.fsdp_utils import fsdp2_prepare_auto_wrap_policy
from sweet_rl.methods.critic import Critic, CriticConfig
from sweet_rl.runs.launch import ACCELERATE_CONFIGS, launcher_env
from sweet_rl.methods.vision_critic import VisionHeadModel


def _wrapped(model) -> list[str]:
    "Class names of the modules the shipped FSDP config's wrap policy gives their own shard unit."
    with mock.patch.dict(os.environ, launcher_env(ACCELERATE_CONFIGS / 'fsdp.yaml')):  # the plugin reads the launcher's variables
        plugin = FullyShardedDataParallelPlugin()
    policy = fsdp2_prepare_auto_wrap_policy(plugin, model)
    return [type(m).__name__ for m in model.modules() if policy(m)]


@pytest.mark.parametrize('head,lora', [('sweet', True), ('sweet', False), ('value', True), ('value', False), ('regression', True)])
def test_every_decoder_layer_is_a_shard_unit(tiny_lm, head, lora):
    critic = Critic.build(CriticConfig(model=tiny_lm, head=head, lora=lora, dtype='float32'), 'cpu')
    assert _wrapped(critic.model) == ['LlamaDecoderLayer'] * 2  # tiny_lm has 2 layers


def test_the_vision_critics_layers_are_shard_units():
    from transformers import AutoModel, Qwen2VLConfig
    cfg = Qwen2VLConfig(text_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=512, rope_scaling={'type': 'mrope', 'mrope_section': [2, 3, 3]}),
                        vision_config=dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, mlp_ratio=2, patch_size=14, spatial_merge_size=2))
    torch.manual_seed(0)
    wrapped = _wrapped(VisionHeadModel(AutoModel.from_config(cfg), 64))
    assert wrapped.count('Qwen2VLDecoderLayer') == 2 and wrapped.count('Qwen2VLVisionBlock') == 2, wrapped
