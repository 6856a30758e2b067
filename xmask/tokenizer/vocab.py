"""Reading Hugging Face tokenizers: vocabulary, added tokens, special and stop tokens.

:func:`load_huggingface` accepts a ``tokenizers.Tokenizer``, a ``transformers`` fast tokenizer
(anything with a ``backend_tokenizer``), or a path to ``tokenizer.json`` or to the directory
holding it, and returns an :class:`HFVocabulary`: the per-id encoded strings plus the metadata
needed to turn them into bytes (:mod:`xmask.tokenizer.bytes`).

Where the information comes from
--------------------------------
* **model vocabulary**: ``model.vocab`` of tokenizer.json (a dict for BPE / WordPiece /
  WordLevel, a ``[piece, score]`` list for Unigram), or ``Tokenizer.get_vocab(False)``.  A path
  is read with :func:`json.loads` directly -- about 3x faster than ``Tokenizer.from_file`` for
  Llama-3 (0.16 s vs 0.48 s) -- and a ``Tokenizer`` object is never serialised whole: its
  normalizer / pre-tokenizer / decoder are read through their small ``__getstate__`` JSON.
* **added tokens**: ``added_tokens`` (``id``, ``content``, ``special``).
* **vocab type** (:func:`detect_vocab_type`): a ``ByteLevel`` decoder or pre-tokenizer means
  BYTE_LEVEL; a ``ByteFallback`` decoder or ``model.byte_fallback`` means BYTE_FALLBACK; a
  ``Metaspace`` decoder or a ``Replace("\u2581" -> " ")`` decoder (sentencepiece without byte
  pieces, e.g. T5) is also decoded as BYTE_FALLBACK, which is exact for it; else RAW.
* **add_prefix_space** (:func:`detect_add_prefix_space`): a ``Prepend("\u2581")`` normalizer or
  a ``Metaspace`` pre-tokenizer whose ``prepend_scheme`` is not ``"never"``.
* **stop tokens** (:meth:`HFVocabulary.default_stop_token_ids`): ``eos_token`` of a
  ``tokenizer_config.json`` and ``eos_token_id`` of a ``generation_config.json`` next to the
  tokenizer.json (paths only), plus every *added* token named in :data:`STOP_TOKEN_NAMES`.
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from ..errors import TokenizerError
from .bytes import SPACE_MARKER, VocabType, decode_vocab

__all__ = [
    "STOP_TOKEN_NAMES",
    "AddedTokenSpec",
    "HFVocabulary",
    "load_huggingface",
    "detect_vocab_type",
    "detect_add_prefix_space",
]

#: Token names treated as stop tokens whenever they are in the vocabulary (the union over
#: GPT-2, Llama-2/3, Qwen, Phi-3, DeepSeek and gpt-oss chat formats).
STOP_TOKEN_NAMES: Tuple[str, ...] = (
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|eom_id|>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",
    "<|return|>",
    "<|call|>",
)


@dataclass(frozen=True)
class AddedTokenSpec:
    """One entry of tokenizer.json's ``added_tokens``.

    Examples
    --------
    >>> AddedTokenSpec(128009, "<|eot_id|>", special=True)
    AddedTokenSpec(id=128009, content='<|eot_id|>', special=True)
    """

    id: int
    content: str
    special: bool


@dataclass
class HFVocabulary:
    """What xmask reads from a Hugging Face tokenizer, before byte decoding.

    Examples
    --------
    >>> v = HFVocabulary({"a": 0, "\u0120b": 1}, [AddedTokenSpec(2, "<|endoftext|>", True)],
    ...                  VocabType.BYTE_LEVEL, False)
    >>> v.size, v.decode()
    (3, ([b'a', b' b', b'<|endoftext|>'], [2]))
    >>> v.default_stop_token_ids()
    [2]
    """

    model_vocab: Dict[str, int]  # encoded piece -> id, model tokens only
    added_tokens: List[AddedTokenSpec]  # tokenizer.json ``added_tokens``
    vocab_type: VocabType
    add_prefix_space: bool
    eos_tokens: List[str] = field(default_factory=list)  # eos names from configs
    eos_token_ids: List[int] = field(default_factory=list)  # eos ids from configs
    unk_token: Optional[str] = None  # model.unk_token, special when in the vocab
    source: str = "<tokenizer>"  # for error messages

    @property
    def size(self) -> int:
        """Number of ids: the largest id (model or added) plus one."""
        top = max(self.model_vocab.values(), default=-1)
        for tok in self.added_tokens:
            top = max(top, tok.id)
        return top + 1

    def token_to_id(self) -> Dict[str, int]:
        """Name -> id over model pieces and added-token contents (added tokens win)."""
        mapping = dict(self.model_vocab)
        for tok in self.added_tokens:
            mapping[tok.content] = tok.id
        return mapping

    def decode(self) -> Tuple[List[bytes], List[int]]:
        """Return ``(decoded_vocab, special_ids)`` for ids ``0 .. size - 1``.

        Model pieces are decoded by ``vocab_type``.  An added token is decoded the same way when
        it is the model piece of its own id (Llama-2's ``<unk>``), otherwise it is its content's
        UTF-8 bytes: added tokens are matched verbatim in the input text, so those are the
        bytes they stand for (e.g. Qwen's non-special ``<tool_call>``).

        Special: every added token flagged ``special``, the model's ``unk_token``, and every id
        whose bytes are empty (unused ids, empty pieces).
        """
        n = self.size
        encoded: List[Optional[str]] = [None] * n
        for piece, idx in self.model_vocab.items():
            if idx < 0:
                raise TokenizerError(f"{self.source}: model token {piece!r} has id {idx}")
            encoded[idx] = piece
        decoded = decode_vocab(encoded, self.vocab_type)
        special: Set[int] = set()
        for tok in self.added_tokens:
            if not 0 <= tok.id < n:
                raise TokenizerError(f"{self.source}: added token {tok.content!r} has id {tok.id}")
            if encoded[tok.id] != tok.content:
                decoded[tok.id] = tok.content.encode("utf-8", "surrogatepass")
            if tok.special:
                special.add(tok.id)
        if self.unk_token is not None and self.unk_token in self.model_vocab:
            special.add(self.model_vocab[self.unk_token])
        special.update(i for i, b in enumerate(decoded) if not b)
        return decoded, sorted(special)

    def default_stop_token_ids(self) -> List[int]:
        """Sorted stop ids: config eos tokens and added tokens named in :data:`STOP_TOKEN_NAMES`.

        The names are looked up among *added* tokens only: an ordinary BPE piece may be spelled
        the same way (Qwen2.5's id 128247 is the text ``</s>``, not an end of sequence).  The
        config's ``eos_token`` is looked up everywhere.
        """
        n = self.size
        stops = {i for i in self.eos_token_ids if 0 <= i < n}
        if self.eos_tokens:
            token_to_id = self.token_to_id()
            for name in self.eos_tokens:
                idx = token_to_id.get(name)
                if idx is not None:
                    stops.add(idx)
        names = set(STOP_TOKEN_NAMES)
        stops.update(tok.id for tok in self.added_tokens if tok.content in names)
        return sorted(stops)


# --------------------------------------------------------------------------------------------
# Metadata detection over tokenizer.json components
# --------------------------------------------------------------------------------------------


def _flatten(component: Any, key: str) -> Iterator[dict]:
    """Yield ``component`` and, recursively, the members of ``Sequence`` components."""
    if not isinstance(component, dict):
        return
    if component.get("type") == "Sequence" and isinstance(component.get(key), list):
        for child in component[key]:
            yield from _flatten(child, key)
    else:
        yield component


def detect_vocab_type(spec: dict) -> VocabType:
    """Vocab type of a tokenizer.json document (only ``decoder``, ``pre_tokenizer`` and
    ``model`` are consulted).

    Examples
    --------
    >>> detect_vocab_type({"decoder": {"type": "ByteLevel"}})
    <VocabType.BYTE_LEVEL: 2>
    >>> detect_vocab_type({"decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}]}})
    <VocabType.BYTE_FALLBACK: 1>
    >>> detect_vocab_type({"model": {"type": "WordPiece"}})
    <VocabType.RAW: 0>
    """
    decoders = list(_flatten(spec.get("decoder"), "decoders"))
    pre_tokenizers = list(_flatten(spec.get("pre_tokenizer"), "pretokenizers"))
    if any(d.get("type") == "ByteLevel" for d in decoders) or any(
        p.get("type") == "ByteLevel" for p in pre_tokenizers
    ):
        return VocabType.BYTE_LEVEL
    model = spec.get("model") if isinstance(spec.get("model"), dict) else {}
    if any(d.get("type") == "ByteFallback" for d in decoders) or model.get("byte_fallback") is True:
        return VocabType.BYTE_FALLBACK
    for d in decoders:
        if d.get("type") == "Metaspace":
            return VocabType.BYTE_FALLBACK
        if (
            d.get("type") == "Replace"
            and (d.get("pattern") or {}).get("String") == SPACE_MARKER
            and d.get("content") == " "
        ):
            return VocabType.BYTE_FALLBACK
    return VocabType.RAW


def detect_add_prefix_space(spec: dict) -> bool:
    """Whether the tokenizer prepends a space (``"\u2581"``) to the input, sentencepiece-style.

    Examples
    --------
    >>> detect_add_prefix_space({"normalizer": {"type": "Prepend", "prepend": "\u2581"}})
    True
    >>> detect_add_prefix_space({"pre_tokenizer": {"type": "Metaspace", "prepend_scheme": "never"}})
    False
    """
    for norm in _flatten(spec.get("normalizer"), "normalizers"):
        if norm.get("type") == "Prepend" and norm.get("prepend") == SPACE_MARKER:
            return True
    for pre in _flatten(spec.get("pre_tokenizer"), "pretokenizers"):
        if pre.get("type") == "Metaspace":
            scheme = pre.get("prepend_scheme")
            if scheme is None:  # tokenizers < 0.14 spelled it as a boolean
                return bool(pre.get("add_prefix_space", True))
            return scheme != "never"
    return False


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def _model_vocab_from_json(model: Any) -> Optional[Dict[str, int]]:
    if not isinstance(model, dict):
        return None
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        return vocab
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...], id = position
        try:
            return {entry[0]: i for i, entry in enumerate(vocab)}
        except (TypeError, IndexError, KeyError):
            return None
    return None


def _added_from_json(entries: Any, source: str) -> List[AddedTokenSpec]:
    out = []
    for entry in entries or ():
        try:
            out.append(
                AddedTokenSpec(
                    int(entry["id"]), str(entry["content"]), bool(entry.get("special", False))
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TokenizerError(f"{source}: malformed added_tokens entry {entry!r}") from exc
    return out


def _eos_name(value: Any) -> Optional[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _read_json_file(path: pathlib.Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _read_configs(directory: pathlib.Path) -> Tuple[List[str], List[int]]:
    """eos names from ``tokenizer_config.json`` and eos ids from ``generation_config.json``."""
    names: List[str] = []
    ids: List[int] = []
    config = _read_json_file(directory / "tokenizer_config.json")
    if isinstance(config, dict):
        name = _eos_name(config.get("eos_token"))
        if name:
            names.append(name)
    gen = _read_json_file(directory / "generation_config.json")
    if isinstance(gen, dict):
        eos = gen.get("eos_token_id")
        for value in eos if isinstance(eos, list) else [eos]:
            if isinstance(value, int) and not isinstance(value, bool):
                ids.append(value)
    return names, ids


def _from_json_document(data: Any, text: str, source: str) -> HFVocabulary:
    if not isinstance(data, dict) or "model" not in data:
        raise TokenizerError(f"{source}: not a Hugging Face tokenizer.json (no 'model' field)")
    model_vocab = _model_vocab_from_json(data["model"])
    if model_vocab is None:
        tokenizers = _import_tokenizers()
        try:
            model_vocab = tokenizers.Tokenizer.from_str(text).get_vocab(with_added_tokens=False)
        except Exception as exc:  # tokenizers raises a bare Exception on bad input
            raise TokenizerError(f"{source}: cannot read the model vocabulary: {exc}") from exc
    unk = data["model"].get("unk_token") if isinstance(data["model"], dict) else None
    return HFVocabulary(
        model_vocab=model_vocab,
        added_tokens=_added_from_json(data.get("added_tokens"), source),
        vocab_type=detect_vocab_type(data),
        add_prefix_space=detect_add_prefix_space(data),
        unk_token=unk if isinstance(unk, str) else None,
        source=source,
    )


def _load_path(path: pathlib.Path) -> HFVocabulary:
    path = path.expanduser()
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        where = (
            f"directory {str(path)!r} has no tokenizer.json"
            if path.is_dir()
            else f"{str(path)!r} does not exist"
        )
        raise TokenizerError(f"cannot load tokenizer: {where}")
    try:
        text = file.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TokenizerError(f"cannot read {str(file)!r} as tokenizer.json: {exc}") from exc
    vocab = _from_json_document(data, text, str(file))
    vocab.eos_tokens, vocab.eos_token_ids = _read_configs(file.parent)
    return vocab


def _component_state(component: Any) -> Any:
    if component is None:
        return None
    return json.loads(component.__getstate__())


def _load_tokenizer_object(tok: Any, source: str) -> HFVocabulary:
    try:
        spec = {
            "normalizer": _component_state(tok.normalizer),
            "pre_tokenizer": _component_state(tok.pre_tokenizer),
            "decoder": _component_state(tok.decoder),
            "model": {
                "type": type(tok.model).__name__,
                "byte_fallback": bool(getattr(tok.model, "byte_fallback", False)),
            },
        }
        unk = getattr(tok.model, "unk_token", None)
        added = [
            AddedTokenSpec(int(i), str(t.content), bool(t.special))
            for i, t in tok.get_added_tokens_decoder().items()
        ]
        model_vocab = tok.get_vocab(with_added_tokens=False)
    except Exception:  # older tokenizers without these accessors: serialise the whole thing
        text = tok.to_str()
        return _from_json_document(json.loads(text), text, source)
    return HFVocabulary(
        model_vocab=model_vocab,
        added_tokens=added,
        vocab_type=detect_vocab_type(spec),
        add_prefix_space=detect_add_prefix_space(spec),
        unk_token=unk if isinstance(unk, str) else None,
        source=source,
    )


def _import_tokenizers():
    try:
        import tokenizers
    except ImportError as exc:  # pragma: no cover - tokenizers is a hard dependency
        raise TokenizerError(
            "the 'tokenizers' package is required to read Hugging Face tokenizers"
        ) from exc
    return tokenizers


def load_huggingface(tokenizer: Any) -> HFVocabulary:
    """Read a Hugging Face tokenizer into an :class:`HFVocabulary`.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer, transformers fast tokenizer, str or os.PathLike
        A tokenizer object, or the path of a ``tokenizer.json`` file or of a directory holding
        one (then ``tokenizer_config.json`` / ``generation_config.json`` beside it supply eos
        tokens).

    Examples
    --------
    >>> v = load_huggingface("path/to/llama3")               # doctest: +SKIP
    >>> v.vocab_type, v.size                                  # doctest: +SKIP
    (<VocabType.BYTE_LEVEL: 2>, 128256)
    """
    if isinstance(tokenizer, (str, os.PathLike)):
        return _load_path(pathlib.Path(tokenizer))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # transformers PreTrainedTokenizerFast
        vocab = _load_tokenizer_object(backend, type(tokenizer).__name__)
        name = _eos_name(getattr(tokenizer, "eos_token", None))
        if name:
            vocab.eos_tokens.append(name)
        return vocab
    tokenizers = _import_tokenizers()
    if isinstance(tokenizer, tokenizers.Tokenizer):
        return _load_tokenizer_object(tokenizer, "tokenizers.Tokenizer")
    raise TokenizerError(
        "expected a tokenizers.Tokenizer, a transformers fast tokenizer, or a path to "
        f"tokenizer.json (or its directory); got {type(tokenizer).__name__}"
    )
