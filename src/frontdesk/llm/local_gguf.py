"""Reading SmolLM2's GGUF file: metadata, dequantized weights, the tokenizer and a transformers Llama model.

transformers can load GGUF files itself, but its loader parses the 49,152-entry vocabulary
through numpy memmaps several times and takes 20-60 s on a 2-core machine; reading the file
directly takes about a second. Only what SmolLM2-135M-Instruct.Q4_1.gguf holds is supported:
the llama architecture with F32, F16, Q8_0 and Q4_1 tensors and a GPT-2 style BPE vocabulary.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["GGUFError", "GGUFFile", "build_llama_model", "build_tokenizer", "read_gguf"]

_MAGIC = b"GGUF"
_DEFAULT_ALIGNMENT = 32
# GGUF metadata value types.
_SCALAR_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# ggml tensor types: (name, elements per block, bytes per block).
_F32, _F16, _Q4_1, _Q8_0 = 0, 1, 3, 8
_TENSOR_LAYOUT = {_F32: ("F32", 1, 4), _F16: ("F16", 1, 2), _Q4_1: ("Q4_1", 32, 20), _Q8_0: ("Q8_0", 32, 34)}
# tokenizer.ggml.token_type values of tokens that are matched whole in a prompt (control, user-defined).
_SPECIAL_TOKEN_TYPES = {3, 4}


class GGUFError(Exception):
    """The file is not a GGUF file this reader understands."""


@dataclass
class _TensorInfo:
    name: str
    shape: tuple[int, ...]  # ggml order: fastest-varying dimension first
    kind: int
    offset: int


@dataclass
class GGUFFile:
    path: Path
    metadata: dict[str, Any]
    tensors: dict[str, _TensorInfo] = field(default_factory=dict)
    data_start: int = 0

    def tensor(self, name: str) -> np.ndarray:
        """A tensor as float32, shaped like PyTorch's weight (slowest dimension first)."""
        info = self.tensors.get(name)
        if info is None:
            raise GGUFError(f"{self.path.name} has no tensor {name!r}")
        kind_name, block, block_bytes = _TENSOR_LAYOUT.get(info.kind, (str(info.kind), 0, 0))
        if not block:
            raise GGUFError(f"{self.path.name}: tensor {name} has unsupported type {kind_name}")
        count = int(np.prod(info.shape))
        size = count // block * block_bytes
        raw = np.fromfile(self.path, dtype=np.uint8, count=size, offset=self.data_start + info.offset)
        if raw.size != size:
            raise GGUFError(f"{self.path.name} is truncated (tensor {name})")
        values = _dequantize(raw, info.kind, count)
        return values.reshape(tuple(reversed(info.shape)))


def _dequantize(raw: np.ndarray, kind: int, count: int) -> np.ndarray:
    if kind == _F32:
        return raw.view(np.float32).copy()
    if kind == _F16:
        return raw.view(np.float16).astype(np.float32)
    if kind == _Q8_0:
        # Blocks of 32: one float16 scale, then 32 signed bytes.
        blocks = raw.reshape(-1, 34)
        scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
        quants = blocks[:, 2:].view(np.int8).astype(np.float32)
        return (quants * scale).reshape(count)
    # Q4_1 blocks of 32: float16 scale and minimum, then 16 bytes holding the low nibbles
    # (elements 0-15) and the high nibbles (elements 16-31).
    blocks = raw.reshape(-1, 20)
    scale = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    minimum = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    packed = blocks[:, 4:]
    quants = np.concatenate([packed & 0x0F, packed >> 4], axis=1).astype(np.float32)
    return (quants * scale + minimum).reshape(count)


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise GGUFError("the GGUF header is truncated")
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return value

    def string(self) -> str:
        length = self.take("<Q")
        end = self.at + length
        if end > len(self.data):
            raise GGUFError("the GGUF header is truncated")
        text = self.data[self.at:end].decode("utf-8", errors="replace")
        self.at = end
        return text

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind = self.take("<I")
            length = self.take("<Q")
            if item_kind in _SCALAR_FORMATS:
                fmt = _SCALAR_FORMATS[item_kind]
                size = struct.calcsize(fmt)
                values = list(struct.unpack_from(f"<{length}{fmt[1:]}", self.data, self.at))
                self.at += size * length
                return values
            return [self.value(item_kind) for _ in range(length)]
        fmt = _SCALAR_FORMATS.get(kind)
        if fmt is None:
            raise GGUFError(f"unknown GGUF metadata type {kind}")
        return self.take(fmt)


def read_gguf(path: str | Path, header_bytes: int = 64 * 1024 * 1024) -> GGUFFile:
    """Read a GGUF file's metadata and tensor table (tensor data is read on demand)."""
    path = Path(path)
    with path.open("rb") as handle:
        data = handle.read(header_bytes)
    if data[:4] != _MAGIC:
        raise GGUFError(f"{path.name} is not a GGUF file")
    reader = _Reader(data)
    reader.at = 4
    version = reader.take("<I")
    if version not in (2, 3):
        raise GGUFError(f"{path.name} is GGUF version {version}; versions 2 and 3 are supported")
    tensor_count = reader.take("<Q")
    kv_count = reader.take("<Q")
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string()
        metadata[key] = reader.value(reader.take("<I"))
    gguf = GGUFFile(path=path, metadata=metadata)
    for _ in range(tensor_count):
        name = reader.string()
        dims = reader.take("<I")
        shape = tuple(reader.take("<Q") for _ in range(dims))
        kind = reader.take("<I")
        offset = reader.take("<Q")
        gguf.tensors[name] = _TensorInfo(name=name, shape=shape, kind=kind, offset=offset)
    alignment = int(metadata.get("general.alignment", _DEFAULT_ALIGNMENT))
    gguf.data_start = (reader.at + alignment - 1) // alignment * alignment
    return gguf


# -- the tokenizer -----------------------------------------------------------------------------


def build_tokenizer(gguf: GGUFFile) -> Any:
    """A `tokenizers.Tokenizer` for the file's GPT-2 style BPE vocabulary (SmolLM2's pre-tokenizer)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    meta = gguf.metadata
    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise GGUFError(f"{gguf.path.name}: only GPT-2 style BPE vocabularies are supported")
    tokens: list[str] = meta["tokenizer.ggml.tokens"]
    merges = [tuple(merge.split(" ", 1)) for merge in meta.get("tokenizer.ggml.merges", [])]
    vocab = {token: index for index, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    types = meta.get("tokenizer.ggml.token_type") or []
    special = [tokens[i] for i, kind in enumerate(types) if kind in _SPECIAL_TOKEN_TYPES]
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special])
    return tokenizer


# -- the model ---------------------------------------------------------------------------------


def _unpermute(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo the row order llama.cpp's converter gives attn_q/attn_k for its rotary embedding."""
    half = weight.shape[0] // heads // 2
    return weight.reshape(heads, half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def build_llama_model(gguf: GGUFFile) -> Any:
    """A transformers LlamaForCausalLM (float32, eval mode) with the file's weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    meta = gguf.metadata
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise GGUFError(f"{gguf.path.name}: architecture {arch!r} is not supported (llama only)")
    heads = int(meta["llama.attention.head_count"])
    kv_heads = int(meta.get("llama.attention.head_count_kv", heads))
    layers = int(meta["llama.block_count"])
    tied = "output.weight" not in gguf.tensors
    config = LlamaConfig(
        vocab_size=len(meta["tokenizer.ggml.tokens"]),
        hidden_size=int(meta["llama.embedding_length"]),
        intermediate_size=int(meta["llama.feed_forward_length"]),
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=int(meta.get("llama.context_length", 2048)),
        rms_norm_eps=float(meta.get("llama.attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(meta.get("llama.rope.freq_base", 10000.0)),
        bos_token_id=meta.get("tokenizer.ggml.bos_token_id"),
        eos_token_id=meta.get("tokenizer.ggml.eos_token_id"),
        tie_word_embeddings=tied,
        torch_dtype="float32",
    )
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    if not tied:
        names["output.weight"] = "lm_head.weight"
    parts = {
        "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
        "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }
    for layer in range(layers):
        for ggml_part, hf_part in parts.items():
            names[f"blk.{layer}.{ggml_part}.weight"] = f"model.layers.{layer}.{hf_part}.weight"
    state: dict[str, Any] = {}
    for ggml_name, hf_name in names.items():
        weight = gguf.tensor(ggml_name)
        if ".attn_q." in ggml_name:
            weight = _unpermute(weight, heads)
        elif ".attn_k." in ggml_name:
            weight = _unpermute(weight, kv_heads)
        state[hf_name] = torch.from_numpy(np.ascontiguousarray(weight))
    # Made without memory or random initialisation, then given the file's weights.
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    missing = [name for name in missing if not (tied and name == "lm_head.weight")]
    if missing or unexpected:
        raise GGUFError(f"{gguf.path.name} does not fit the llama model: {', '.join((missing + unexpected)[:3])}")
    if tied:
        model.lm_head.weight = model.model.embed_tokens.weight
    # The rotary frequencies are computed, not stored: compute them on the CPU.
    model.model.rotary_emb = LlamaRotaryEmbedding(config=config)
    still_meta = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if still_meta:
        raise GGUFError(f"{gguf.path.name} does not fit the llama model: no weights for {', '.join(still_meta[:3])}")
    return model.eval()
