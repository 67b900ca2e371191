"""YAML source files with positions: every front end and test format that reads YAML reads it here.

`read_yaml_text` checks a file (type, size, encoding, YAML size) before it is parsed; `compose_yaml`
turns the text into located nodes (`YMap`, `YSeq`, `YScalar`); `load_settings` reads a program's
`config.yml`. Problems are reported under the codes of the format being read (`YamlCodes`).
"""

from .codes import YamlCodes
from .config import CONFIG_NAMES, find_config, load_settings
from .nodes import YMap, YNode, YScalar, YSeq, compose_yaml, kind_name, lone_surrogate_span, to_python
from .reading import MAX_YAML_DEPTH, MAX_YAML_NODES, read_yaml_text, yaml_size_problem

__all__ = [
    "CONFIG_NAMES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "YMap", "YNode", "YScalar", "YSeq", "YamlCodes",
    "compose_yaml", "find_config", "kind_name", "load_settings", "lone_surrogate_span", "read_yaml_text",
    "to_python", "yaml_size_problem",
]
