"""Structural-tag support: OpenAI-style tool specs and the per-model tool-call formats."""
