"""Program settings: `config.yml` beside a program (ADL or ABL), read into ProgramSettings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from frontdesk.diagnostics import DiagnosticBag, did_you_mean
from frontdesk.ir.models import ORCHESTRATION_STRATEGIES, ProgramSettings, ThresholdSettings, ToolLimits

from .codes import YamlCodes
from .nodes import YMap, YScalar, compose_yaml, kind_name, to_python
from .reading import read_yaml_text

# problems are first reported under role names and then given the codes of the program's language
WRONG_TYPE = "wrong_type"
CONFIG_IGNORED = "ignored"

CONFIG_NAMES = ("config.yml", "config.yaml")
_INT_KEYS = ("max_consecutive_fallbacks", "history_window")
_KNOWN_KEYS = ("llm", "understanding", "tools", "pipeline", "orchestration") + _INT_KEYS
_TOOL_LIMITS = ("timeout", "output_chars", "result_chars")
_DECISIONS = ("route", "claims")
_THRESHOLDS = ("accept", "margin", "reject")
_MICA_ONLY_KEYS = ("unsafe_mode",)


def find_config(folder: Path) -> Path | None:
    """The settings file beside a program; anything but a folder by that name counts (and is checked when read)."""
    for name in CONFIG_NAMES:
        candidate = folder / name
        try:
            if not stat.S_ISDIR(os.stat(candidate).st_mode):
                return candidate
        except (OSError, ValueError):
            continue
    return None


def load_settings(path: Path, shown: str, bag: DiagnosticBag, codes: YamlCodes) -> ProgramSettings:
    """Read a config file; problems are reported under `codes` and the defaults kept."""
    settings = ProgramSettings()
    text = read_yaml_text(path, shown, bag, codes, what="the settings file")
    if text is None:
        return settings
    root = compose_yaml(text, shown, bag, codes)
    if root is None:
        return settings
    found = DiagnosticBag()
    if not isinstance(root, YMap):
        found.error(WRONG_TYPE, f"the settings file must be a mapping, found {kind_name(root)}", root.span,
                    hint="write settings as key: value lines, e.g. llm:")
    else:
        for key, value in root.pairs:
            _apply_setting(settings, key, value, found)
    codes.recode(found, bag)
    return settings


def _apply_setting(settings: ProgramSettings, key: YScalar, value, bag: DiagnosticBag) -> None:
    name = key.text
    if name == "llm":
        if isinstance(value, YMap):
            settings.llm = to_python(value)
        elif not (isinstance(value, YScalar) and value.value is None):
            bag.error(WRONG_TYPE, f"'llm' must be a mapping, found {kind_name(value)}", value.span,
                      hint="write llm: followed by indented chat: / embedding: settings")
    elif name == "pipeline":  # ABL supervisors' pre-classification defaults (abl-specification 3.15)
        if _is_mapping("pipeline", value, bag, "pipeline:\n  enabled: true\n  model: small-model"):
            settings.pipeline = to_python(value)
    elif name == "orchestration":  # the strategy of ensembles that name none (runtime/orchestration.py)
        text = value.text.strip().lower() if isinstance(value, YScalar) and value.value is not None else ""
        if text in ORCHESTRATION_STRATEGIES:
            settings.orchestration = text
        else:
            guess = did_you_mean(text, list(ORCHESTRATION_STRATEGIES)) if text else None
            bag.error(WRONG_TYPE, f"'orchestration' must be one of {', '.join(ORCHESTRATION_STRATEGIES)}", value.span,
                      hint=f"did you mean '{guess}'?" if guess else "for example orchestration: adaptive")
    elif name == "understanding":
        _apply_understanding(settings, value, bag)
    elif name == "tools":
        _apply_tools(settings, value, bag)
    elif name in _INT_KEYS:
        number = value.value if isinstance(value, YScalar) else None
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            bag.error(WRONG_TYPE, f"'{name}' must be a positive whole number", value.span, hint=f"for example {name}: 3")
        else:
            setattr(settings, name, number)
    elif name in _MICA_ONLY_KEYS:
        bag.info(CONFIG_IGNORED, f"setting '{name}' is a MICA option that Frontdesk ignores", key.span,
                 hint="it can stay; Frontdesk never runs tool code unsafely")
    else:
        guess = did_you_mean(name, _KNOWN_KEYS)
        bag.info(CONFIG_IGNORED, f"unknown setting '{name}' is ignored", key.span,
                 hint=f"did you mean '{guess}'?" if guess else f"known settings: {', '.join(_KNOWN_KEYS)}")


def _is_mapping(name: str, value, bag: DiagnosticBag, example: str) -> bool:
    """Whether a setting's value is a mapping; if not, says so with an example."""
    if isinstance(value, YMap):
        return True
    bag.error(WRONG_TYPE, f"'{name}' must be a mapping, found {kind_name(value)}", value.span,
              hint=f"for example {example}")
    return False


def _apply_understanding(settings: ProgramSettings, value, bag: DiagnosticBag) -> None:
    """`understanding: {route: {accept: 0.6, margin: 0.05, reject: 0.3}, claims: {...}}`."""
    example = "understanding:\n  route:\n    accept: 0.6"
    if not _is_mapping("understanding", value, bag, example):
        return
    for decision, limits in value.pairs:
        if decision.text not in _DECISIONS:
            guess = did_you_mean(decision.text, _DECISIONS)
            bag.error(WRONG_TYPE, f"unknown decision '{decision.text}' under understanding", decision.span,
                      hint=f"did you mean '{guess}'?" if guess else "use route or claims")
            continue
        if not isinstance(limits, YMap):
            bag.error(WRONG_TYPE, f"'{decision.text}' must be a mapping of thresholds", limits.span,
                      hint=f"for example {example}")
            continue
        found = {}
        for key, number in limits.pairs:
            raw = number.value if isinstance(number, YScalar) else None
            if key.text not in _THRESHOLDS:
                guess = did_you_mean(key.text, _THRESHOLDS)
                bag.error(WRONG_TYPE, f"unknown threshold '{key.text}'", key.span,
                          hint=f"did you mean '{guess}'?" if guess else "use accept, margin or reject")
            elif isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw <= 1:
                bag.error(WRONG_TYPE, f"threshold '{key.text}' must be a number from 0 to 1", number.span,
                          hint=f"for example {key.text}: 0.5")
            else:
                found[key.text] = float(raw)
        settings.understanding[decision.text] = ThresholdSettings(**found)


def _apply_tools(settings: ProgramSettings, value, bag: DiagnosticBag) -> None:
    """`tools: {timeout: 10, output_chars: 5000, result_chars: 5000, place_order: {timeout: 60}}`:
    the limits of every tool call, and a tool's own limits under its name."""
    if not _is_mapping("tools", value, bag, "tools:\n  timeout: 10\n  place_order:\n    timeout: 60"):
        return
    for key, item in value.pairs:
        if key.text in _TOOL_LIMITS:
            number = _tool_limit(key, item, bag)
            if number is not None:
                setattr(settings.tools, key.text, number)
        elif isinstance(item, YMap):
            found = {}
            for limit, raw in item.pairs:
                if limit.text not in _TOOL_LIMITS:
                    guess = did_you_mean(limit.text, _TOOL_LIMITS)
                    bag.error(WRONG_TYPE, f"unknown tool limit '{limit.text}'", limit.span,
                              hint=f"did you mean '{guess}'?" if guess else f"use {', '.join(_TOOL_LIMITS)}")
                    continue
                number = _tool_limit(limit, raw, bag)
                if number is not None:
                    found[limit.text] = number
            settings.tools.per_tool[key.text] = ToolLimits(**found)
        else:
            guess = did_you_mean(key.text, _TOOL_LIMITS)
            bag.error(WRONG_TYPE, f"'{key.text}' under tools is neither a limit nor a tool's own limits",
                      key.span, hint=f"did you mean '{guess}'?" if guess else
                      f"use {', '.join(_TOOL_LIMITS)}, or a tool's name with its limits below it")


def _tool_limit(key: YScalar, value, bag: DiagnosticBag) -> float | int | None:
    raw = value.value if isinstance(value, YScalar) else None
    if key.text == "timeout":
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 < raw <= 3600:
            bag.error(WRONG_TYPE, "'timeout' must be a number of seconds above 0 and at most 3600", value.span,
                      hint="for example timeout: 10")
            return None
        return float(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 100:
        bag.error(WRONG_TYPE, f"'{key.text}' must be a whole number of characters, at least 100", value.span,
                  hint=f"for example {key.text}: 5000")
        return None
    return raw
