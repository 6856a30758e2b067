"""Structural tags without pydantic: :mod:`.spec` parses and validates a structural tag (JSON
text, dict or pydantic model) into frozen format objects, :mod:`.lower` turns those into a
grammar.  The pydantic models users build structural tags with live in
:mod:`xmask.structural_tag`.  :mod:`.tool_params` checks OpenAI-style ``tools`` /
``tool_choice`` and :mod:`.families` builds the per-model tool-call formats
(``xmask.get_model_structural_tag``).

Example::

    >>> from xmask.structural import structural_tag_to_grammar
    >>> g = structural_tag_to_grammar('{"format": {"type": "const_string", "value": "hi"}}')
    >>> g.root
    'root'
"""

from .lower import structural_tag_to_grammar
from .spec import parse_structural_tag

__all__ = ["parse_structural_tag", "structural_tag_to_grammar"]
