"""The diagnostic codes a YAML source reports under: each format that reads YAML passes its own."""

from __future__ import annotations

from dataclasses import dataclass, replace

from frontdesk.diagnostics import DiagnosticBag


@dataclass(frozen=True)
class YamlCodes:
    """Which code each kind of problem gets, and what the document is called in hints."""

    read_error: str  # the file cannot be read, is not UTF-8, or is binary
    syntax: str  # not YAML, too large or too deep
    duplicate_key: str
    wrong_type: str = ""  # a settings value of the wrong kind (config.yml)
    ignored: str = ""  # a settings key that has no effect (config.yml)
    document: str = "the document"  # "an ADL program", "a scenario file", ...

    def recode(self, source: DiagnosticBag, into: DiagnosticBag) -> None:
        """Copy `source` into `into`, a role name ("syntax", "wrong_type", ...) becoming this format's code."""
        for diag in source.items:
            into.add(replace(diag, code=getattr(self, diag.code, "") or diag.code))

