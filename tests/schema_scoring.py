"""Generic scoring helpers for schema / grammar conformance tests.

Walk a tokenized instance through a :class:`xmask.GrammarMatcher`, classify the outcome
against the expected validity, and keep per-key pass counts in a JSON baseline that must not
regress.

API
---
``walk_tokens(matcher, ids, bitmask, stop_ids=None) -> Walk``
    Feed ``ids`` one by one to ``matcher`` (fresh or reset by the caller).  Then fill the
    mask and require every stop token (``stop_ids``, default ``matcher.stop_token_ids``) to be
    allowed, and the first stop token to be accepted and to terminate the matcher.
    ``Walk(accepted, reason, step)``: ``accepted`` is True iff all of that held; otherwise
    ``reason`` says why (``"token"`` -- a token was rejected, ``"stop-masked"`` -- a stop
    token was not set in the final mask, ``"stop-rejected"``, ``"not-terminated"``) and
    ``step`` is the index of the rejected token (``len(ids)`` for the end-of-text checks).
    The matcher is left in whatever state the walk reached.

``classify(valid, walk) -> str``
    ``PASS`` (accepted valid / rejected invalid), ``VALID_REJECTED`` or ``INVALID_ACCEPTED``.

``Baseline(path, env_var="XMASK_UPDATE_BASELINE")``
    ``check(counts: dict[str, int]) -> list[str]``: regressions (keys whose count went down,
    or disappeared); when ``env_var`` is ``1`` the file is rewritten with ``counts`` instead
    and nothing is reported.  ``hint`` is the one-line instruction to update it.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Dict, Iterable, List, NamedTuple, Optional

from maskutil import bit

PASS = "pass"
VALID_REJECTED = "valid-rejected"
INVALID_ACCEPTED = "invalid-accepted"
UNSUPPORTED = "unsupported"


class Walk(NamedTuple):
    accepted: bool
    reason: str  # "" when accepted, else "token" / "stop-masked" / "stop-rejected" / "not-terminated"
    step: int  # index of the rejected token, len(ids) for end-of-text checks


def walk_tokens(matcher, ids: Iterable[int], bitmask, stop_ids: Optional[List[int]] = None) -> Walk:
    """Walk ``ids`` through ``matcher``, then check the stop token(s); see the module doc."""
    ids = list(ids)
    for k, tid in enumerate(ids):
        if not matcher.accept_token(tid):
            return Walk(False, "token", k)
    stops = list(matcher.stop_token_ids if stop_ids is None else stop_ids)
    if not stops:
        raise ValueError("walk_tokens needs at least one stop token")
    matcher.fill_next_token_bitmask(bitmask)
    if not all(bit(bitmask, s) for s in stops):
        return Walk(False, "stop-masked", len(ids))
    if not matcher.accept_token(stops[0]):
        return Walk(False, "stop-rejected", len(ids))
    if not matcher.is_terminated():
        return Walk(False, "not-terminated", len(ids))
    return Walk(True, "", len(ids))


def classify(valid: bool, walk: Walk) -> str:
    """``PASS`` iff the walk's verdict matches ``valid``; otherwise the kind of error."""
    if walk.accepted == bool(valid):
        return PASS
    return INVALID_ACCEPTED if walk.accepted else VALID_REJECTED


class Baseline:
    """Per-key pass counts stored as JSON; counts may only go up (see the module doc)."""

    def __init__(self, path, env_var: str = "XMASK_UPDATE_BASELINE"):
        self.path = pathlib.Path(path)
        self.env_var = env_var

    @property
    def hint(self) -> str:
        return (f"if the drop is intended, update the baseline with "
                f"{self.env_var}=1 (rewrites {self.path.name})")

    @property
    def updating(self) -> bool:
        return os.environ.get(self.env_var, "") == "1"

    def load(self) -> Dict[str, int]:
        if not self.path.exists():
            return {}
        with open(self.path, encoding="utf-8") as f:
            return json.load(f)

    def write(self, counts: Dict[str, int]) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(dict(sorted(counts.items())), f, indent=1)
            f.write("\n")

    def check(self, counts: Dict[str, int]) -> List[str]:
        if self.updating:
            self.write(counts)
            return []
        old = self.load()
        out = []
        for key, n in sorted(old.items()):
            now = counts.get(key)
            if now is None:
                out.append(f"{key}: missing (baseline {n})")
            elif now < n:
                out.append(f"{key}: {now} < baseline {n}")
        return out
