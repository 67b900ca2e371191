"""The ACDL front end: parse, check and pretty-print Agentic Context Description Language files."""
