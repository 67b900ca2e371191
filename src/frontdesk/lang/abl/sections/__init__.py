"""Compilers of ABL's declarative sections (GATHER, MEMORY, CONSTRAINTS, GUARDRAILS, ...), each turning an outline node into IR."""
