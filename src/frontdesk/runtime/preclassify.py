"""ABL 3.15: the settings of a supervisor's pre-classification pipeline (a fast classifier reads the
message before the routing call; runtime/routing.py runs it, runtime/describe.py describes its call)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from frontdesk.ir.models import Program, RouterAgent


@dataclass
class PipelineConfig:
    """EXECUTION.pipeline of a supervisor, resolved as abl-specification 3.15 says: the agent's own block,
    then the project's defaults (`pipeline:` in config.yml), then the system's.

    `model` is the classifier's model when the agent or the project names one (`model_from` says which);
    otherwise None: the call goes to the configured chat model. (The spec's system default, qwen3-30b, is
    a model few servers have; sending it would make every classify call fail.)"""

    enabled: bool = False
    mode: str = "parallel"
    model: str | None = None
    model_from: str = "system default"
    short_circuit: bool = True
    threshold: float = 0.85
    tool_filter: bool = True
    max_tools: int = 6
    veto: bool = True
    keywords: tuple[str, ...] = ()

    @classmethod
    def of(cls, router: RouterAgent, program: Program | None = None) -> PipelineConfig:
        own = router.rules.execution.pipeline
        own = own if isinstance(own, dict) else {}
        settings = getattr(program, "settings", None) if program is not None else None
        project = getattr(settings, "pipeline", None) or {}
        project = project if isinstance(project, dict) else {}
        raw = _merged(project, own)
        if not raw:
            return cls()

        def block(name: str) -> dict:
            value = raw.get(name)
            return value if isinstance(value, dict) else {}

        def number(value: Any, default: float) -> float:
            try:
                return float(value)
            except (TypeError, ValueError):
                return default

        short, tools, veto = block("shortCircuit"), block("toolFilter"), block("keywordVeto")
        words = veto.get("keywords") or []
        model = own.get("model") or project.get("model") or None
        model_from = "agent" if own.get("model") else "project config" if project.get("model") else "system default"
        return cls(enabled=bool(raw.get("enabled", False)),
                   mode=str(raw.get("mode") or "parallel").lower(),
                   model=str(model) if model else None, model_from=model_from,
                   short_circuit=bool(short.get("enabled", True)),
                   threshold=number(short.get("confidenceThreshold"), cls.threshold),
                   tool_filter=bool(tools.get("enabled", True)),
                   max_tools=max(1, int(number(tools.get("maxTools"), cls.max_tools))),
                   veto=bool(veto.get("enabled", True)),
                   keywords=tuple(str(w) for w in (words if isinstance(words, list) else [words])))

    def vetoed_by(self, text: str) -> list[str]:
        if not self.veto:
            return []
        return [w for w in self.keywords if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text, re.IGNORECASE)]


def _merged(base: dict, over: dict) -> dict:
    """`over` on top of `base`, block by block (shortCircuit, toolFilter, keywordVeto merge key by key)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
