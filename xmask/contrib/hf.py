"""A ``transformers`` logits processor that keeps ``model.generate`` inside a grammar.

Importing this module imports torch and transformers (``import xmask`` does neither; it is
loaded on first access to ``xmask.contrib.hf``).
"""

from __future__ import annotations

from typing import List, Sequence, Union

import transformers

from ..bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from ..compiler.compiled import CompiledGrammar
from ..errors import InvalidTokenError, XmaskError
from ..runtime.matcher import GrammarMatcher


class LogitsProcessor(transformers.LogitsProcessor):
    """Masks ``model.generate`` scores so every sequence follows its compiled grammar.

    ``compiled_grammars``: one ``CompiledGrammar`` for every row, or a list with one per batch
    row.  Compile them with a ``TokenizerInfo`` built with the model's vocab size (its logits
    width, e.g. 151,936 for Qwen2.5 whose tokenizer has 151,665 ids).  On the first call the
    processor creates one matcher per row; on each later call it accepts the token sampled in
    the previous step (``input_ids[:, -1]``), then fills the next-token bitmask and applies it
    to ``scores`` in place (CPU, or the torch-ops path on the scores' device).

    A row whose matcher has accepted a stop token is finished: it is no longer advanced (HF
    pads it) and keeps its last mask, which allows only stop tokens, so its scores stay finite.

    Like XGrammar's processor it is single-use: make a new one for every ``generate`` call.
    One deliberate difference: if the scores are wider than the tokenizer's vocab size the
    extra (padding) columns are set to -inf (XGrammar leaves them unmasked with a warning),
    since no grammar can accept those ids.

    Example::

        >>> info = xmask.TokenizerInfo.from_huggingface(tokenizer, vocab_size=config.vocab_size)  # doctest: +SKIP
        >>> compiled = xmask.GrammarCompiler(info).compile_json_schema(schema)  # doctest: +SKIP
        >>> processor = xmask.contrib.hf.LogitsProcessor(compiled)  # doctest: +SKIP
        >>> model.generate(input_ids, logits_processor=[processor])  # doctest: +SKIP
    """

    supports_continuous_batching = False

    def __init__(self, compiled_grammars: Union[CompiledGrammar, Sequence[CompiledGrammar]]):
        grammars = (
            [compiled_grammars] if isinstance(compiled_grammars, CompiledGrammar)
            else list(compiled_grammars)
        )
        if not grammars:
            raise XmaskError("LogitsProcessor needs at least one compiled grammar")
        for i, g in enumerate(grammars):
            if not isinstance(g, CompiledGrammar):
                raise TypeError(
                    f"compiled_grammars[{i}] must be a CompiledGrammar, got {type(g).__name__}"
                )
        sizes = {g.tokenizer_info.vocab_size for g in grammars}
        if len(sizes) != 1:
            raise XmaskError(
                f"the compiled grammars use tokenizers of different vocab sizes {sorted(sizes)}"
            )
        self.compiled_grammars: List[CompiledGrammar] = grammars
        self.full_vocab_size: int = sizes.pop()
        self.matchers: List[GrammarMatcher] = []
        self.token_bitmask = None
        self.batch_size = 0
        self.prefilled = False
        self._seq_len = -1

    def __call__(self, input_ids, scores):
        """Accept the last sampled tokens, fill the bitmask, mask ``scores`` in place."""
        batch, seq_len = int(input_ids.shape[0]), int(input_ids.shape[1])
        if not self.matchers:
            self._start(batch)
        if batch != self.batch_size:
            raise XmaskError(
                f"input_ids has {batch} rows but this LogitsProcessor serves a batch of "
                f"{self.batch_size}"
            )
        if self.prefilled:
            if seq_len != self._seq_len + 1:
                raise XmaskError(
                    f"input_ids grew from {self._seq_len} to {seq_len} tokens; a LogitsProcessor "
                    "serves one generate() call that adds one token per step (make a new one)"
                )
            self._accept_last(input_ids[:, -1].tolist())
        self.prefilled = True
        self._seq_len = seq_len
        for i, matcher in enumerate(self.matchers):
            if not matcher.is_terminated():
                matcher.fill_next_token_bitmask(self.token_bitmask, i)
        width = min(int(scores.shape[-1]), self.full_vocab_size)
        apply_token_bitmask_inplace(scores, self.token_bitmask, vocab_size=width)
        if scores.shape[-1] > self.full_vocab_size:
            scores[:, self.full_vocab_size:] = float("-inf")  # model padding rows: never valid
        return scores

    def _start(self, batch: int) -> None:
        if len(self.compiled_grammars) == 1:
            self.compiled_grammars = self.compiled_grammars * batch
        if len(self.compiled_grammars) != batch:
            raise XmaskError(
                f"{len(self.compiled_grammars)} compiled grammars for a batch of {batch} rows; "
                "pass one grammar, or one per row"
            )
        self.batch_size = batch
        self.matchers = [GrammarMatcher(g) for g in self.compiled_grammars]
        self.token_bitmask = allocate_token_bitmask(batch, self.full_vocab_size)

    def _accept_last(self, tokens: List[int]) -> None:
        for i, (matcher, token) in enumerate(zip(self.matchers, tokens)):
            if matcher.is_terminated():
                continue  # a finished row: HF feeds it padding
            if not matcher.accept_token(token):
                raise InvalidTokenError(
                    f"row {i}: the sampled token {token} is not allowed by its grammar (was "
                    "another logits processor or a custom sampler applied after this one?)"
                )
