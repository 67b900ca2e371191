"""Running SmolLM2 in-process: the transformers Llama model, its tokenizer and chat template, and a decoding loop.

The loop decodes one token at a time, keeps the key/value cache of the previous call and reuses
the part of it that the next prompt shares (the system message and tool descriptions, usually),
applies llama.cpp's repeat penalty, and, when given a grammar, masks every token llguidance says
cannot continue the answer (and feeds the tokens it says are forced without sampling them).
"""

from __future__ import annotations

import inspect
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frontdesk.llm.local_gguf import build_llama_model, build_tokenizer, read_gguf

__all__ = ["Completion", "SmolLM2Runner", "load_runner"]

# llama.cpp's defaults: the repeat penalty looks at the last 64 tokens.
REPEAT_WINDOW = 64


@dataclass
class Completion:
    text: str
    finish_reason: str  # "stop" or "length"
    prompt_tokens: int
    completion_tokens: int


@dataclass
class _Formatted:
    prompt: str
    stop: list[str]


class SmolLM2Runner:
    """One loaded model: tokenize, render a chat, and complete a prompt (optionally under a grammar)."""

    def __init__(self, model: Any, tokenizer: Any, chat_template: str, eos_token_id: int, bos_token_id: int | None,
                 threads: int):
        import torch

        self._torch = torch
        self.model = model
        self.tokenizer = tokenizer
        self.eos_token_id = eos_token_id
        self.eos_text = tokenizer.id_to_token(eos_token_id) or ""
        self.bos_text = tokenizer.id_to_token(bos_token_id) if bos_token_id is not None else ""
        self.vocab_size = int(model.config.vocab_size)
        self.threads = threads
        self._template = _compile_template(chat_template)
        self._guidance_tokenizer: Any = None
        self._cache: Any = None
        self._cached_ids: list[int] = []
        self._cache_keyword: str | None = None

    # -- text <-> tokens ------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def render(self, messages: list[dict[str, str]]) -> _Formatted:
        prompt = self._template.render(
            messages=messages, add_generation_prompt=True, eos_token=self.eos_text, bos_token=self.bos_text)
        return _Formatted(prompt=prompt, stop=[self.eos_text])

    def guidance_tokenizer(self) -> Any:
        """The llguidance view of the vocabulary (built once; about a second)."""
        if self._guidance_tokenizer is None:
            from llguidance import LLTokenizer

            self._guidance_tokenizer = LLTokenizer(
                self.tokenizer.to_str(), n_vocab=self.vocab_size, eos_token=self.eos_token_id)
        return self._guidance_tokenizer

    # -- generation ------------------------------------------------------------------------

    def complete(self, prompt: str, max_tokens: int, temperature: float = 0.0, seed: int = 0,
                 repeat_penalty: float = 1.0, matcher: Any = None) -> Completion:
        torch = self._torch
        torch.set_num_threads(self.threads)
        prompt_ids = self.tokenize(prompt)
        generator = torch.Generator().manual_seed(seed) if temperature > 0 else None
        generated: list[int] = []
        finish = "length"
        with torch.inference_mode():
            logits = self._feed(prompt_ids)
            while len(generated) < max_tokens:
                forced = matcher.compute_ff_tokens() if matcher is not None else []
                if forced:
                    forced = forced[: max_tokens - len(generated)]
                    if not matcher.consume_tokens(forced):
                        raise RuntimeError(f"the grammar refused its own tokens: {matcher.get_error()[:200]}")
                    generated.extend(forced)
                    if matcher.is_stopped():
                        finish = "stop"
                        break
                    logits = self._feed(prompt_ids + generated)
                    continue
                scores = logits.clone()
                _penalise_repeats(scores, (prompt_ids + generated)[-REPEAT_WINDOW:], repeat_penalty)
                if matcher is not None:
                    allowed = _allowed_tokens(matcher.compute_bitmask(), self.vocab_size)
                    scores[~torch.from_numpy(allowed)] = float("-inf")
                token = _choose(scores, temperature, generator)
                if token == self.eos_token_id:
                    finish = "stop"
                    break
                if matcher is not None:
                    if not matcher.consume_token(token):
                        raise RuntimeError(f"the grammar refused a token it allowed: {matcher.get_error()[:200]}")
                generated.append(token)
                if matcher is not None and matcher.is_stopped():
                    finish = "stop"
                    break
                if len(generated) < max_tokens:
                    logits = self._feed(prompt_ids + generated)
        text = self.tokenizer.decode(generated, skip_special_tokens=False)
        return Completion(text=text, finish_reason=finish, prompt_tokens=len(prompt_ids),
                          completion_tokens=len(generated))

    def _feed(self, ids: list[int]) -> Any:
        """The next-token logits after `ids`, computing only what the cache does not hold yet."""
        torch = self._torch
        from transformers import DynamicCache

        shared = 0
        limit = min(len(self._cached_ids), len(ids) - 1)  # always compute at least the last token
        while shared < limit and self._cached_ids[shared] == ids[shared]:
            shared += 1
        if self._cache is None or shared == 0:
            self._cache = DynamicCache(config=self.model.config)
            shared = 0
        elif shared < len(self._cached_ids):
            self._cache.crop(shared - len(self._cached_ids))  # a negative count drops that many tokens
        new = torch.tensor([ids[shared:]], dtype=torch.long)
        try:
            # transformers renamed `past_key_values` to `cache` in 5.2x; both are accepted within our bounds
            if self._cache_keyword is None:
                params = inspect.signature(self.model.forward).parameters
                self._cache_keyword = "cache" if "cache" in params else "past_key_values"
            output = self.model(input_ids=new, use_cache=True, **{self._cache_keyword: self._cache})
        except BaseException:
            self._cache, self._cached_ids = None, []
            raise
        self._cache = getattr(output, "cache", None) or output.past_key_values
        self._cached_ids = list(ids)
        return output.logits[0, -1].float()


def _penalise_repeats(scores: Any, recent: list[int], penalty: float) -> None:
    if penalty == 1.0 or not recent:
        return
    import torch

    index = torch.tensor(sorted(set(recent)), dtype=torch.long)
    values = scores[index]
    scores[index] = torch.where(values > 0, values / penalty, values * penalty)


def _allowed_tokens(bitmask: bytes, vocab_size: int) -> np.ndarray:
    """llguidance's bitmask (bit i of 32-bit little-endian word i//32 = token i allowed) as booleans."""
    bits = np.unpackbits(np.frombuffer(bitmask, dtype=np.uint8), bitorder="little")
    allowed = np.zeros(vocab_size, dtype=bool)
    count = min(vocab_size, bits.size)
    allowed[:count] = bits[:count].astype(bool)
    return allowed


def _choose(scores: Any, temperature: float, generator: Any) -> int:
    import torch

    if temperature <= 0 or generator is None:
        return int(torch.argmax(scores))
    probabilities = torch.softmax(scores / temperature, dim=-1)
    return int(torch.multinomial(probabilities, 1, generator=generator))


def _compile_template(source: str) -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    environment.globals["raise_exception"] = raise_exception
    return environment.from_string(source)


_loaded: dict[str, tuple] = {}  # the model file's real path -> (model, tokenizer, template, eos, bos)
_loaded_lock = threading.Lock()


def load_runner(path: str | Path, threads: int) -> SmolLM2Runner:
    """Build a runner for the GGUF file; the file is read and the model built once per process (about 3 s
    for SmolLM2-135M), and every runner of it shares those weights (each keeps its own key/value cache)."""
    from frontdesk.nlu.embeddings import set_torch_threads

    set_torch_threads(threads)
    key = os.path.realpath(path)
    with _loaded_lock:
        parts = _loaded.get(key)
        if parts is None:
            gguf = read_gguf(path)
            template = gguf.metadata.get("tokenizer.chat_template")
            if not template:
                raise ValueError(f"{Path(path).name} has no chat template")
            tokenizer = build_tokenizer(gguf)
            model = build_llama_model(gguf)
            eos = gguf.metadata.get("tokenizer.ggml.eos_token_id")
            bos = gguf.metadata.get("tokenizer.ggml.bos_token_id")
            if not isinstance(eos, int):
                raise ValueError(f"{Path(path).name} names no end-of-sequence token")
            parts = _loaded[key] = (model, tokenizer, template, eos, bos if isinstance(bos, int) else None)
    model, tokenizer, template, eos, bos = parts
    return SmolLM2Runner(model, tokenizer, template, eos, bos, threads)
