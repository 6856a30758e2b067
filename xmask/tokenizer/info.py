"""``TokenizerInfo``: the vocabulary as the grammar engine sees it (as ``xgrammar.TokenizerInfo``).

A ``TokenizerInfo`` is a plain, immutable-by-convention Python object holding, for every token
id in ``[0, vocab_size)``:

* the **bytes** the token appends to the output (``decoded_vocab``);
* whether it is **special** (``special_token_ids``): never produced by a grammar as text.
  Special are: added tokens flagged ``special`` (``<|eot_id|>``, ``<s>``, reserved tokens, ...),
  the model's unk token, every id whose bytes are empty (unused ids and the padding ids past
  the tokenizer, e.g. Qwen2.5's 151,665 ids padded to a 151,936-wide mask), and every stop
  token;
* whether it is a **stop** token (``stop_token_ids``): allowed only where the grammar may end.

So ``stop_token_ids`` is a subset of ``special_token_ids``, and the tokens a grammar can emit as
text are exactly those *not* in ``special_token_ids``.  (XGrammar keeps the two lists disjoint;
ours are a superset so "not special" is the single test for text tokens.)

Example::

    >>> info = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    >>> info.decoded_vocab, info.special_token_ids, info.stop_token_ids
    ([b'a', b'b', b'</s>'], [2], [2])
"""

from __future__ import annotations

import hashlib
import json
import operator
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Union

from ..errors import InvalidJSONError, InvalidTokenError, TokenizerError
from .bytes import VocabType, coerce_vocab_type, decode_vocab
from .vocab import STOP_TOKEN_NAMES, detect_add_prefix_space, detect_vocab_type, load_huggingface

__all__ = ["TokenizerInfo", "VocabType"]

_HASH_VERSION = b"xmask-tokenizer-info-v1"


def _as_id_list(ids: Union[int, Iterable[int]], what: str) -> List[int]:
    if isinstance(ids, int) and not isinstance(ids, bool):
        return [ids]
    try:
        items = list(ids)
    except TypeError:
        raise TokenizerError(
            f"{what} must be an int or a sequence of ints, got {type(ids).__name__}"
        ) from None
    out = []
    for item in items:
        if isinstance(item, bool):
            raise TokenizerError(f"{what} must contain ints, got {item!r}")
        try:
            out.append(operator.index(item))  # accepts numpy integers, rejects floats
        except TypeError:
            raise TokenizerError(f"{what} must contain ints, got {item!r}") from None
    return out


def _check_range(ids: List[int], vocab_size: int, what: str) -> None:
    for i in ids:
        if not 0 <= i < vocab_size:
            raise InvalidTokenError(
                f"{what} {i} is out of range: token ids must lie in [0, {vocab_size})"
            )


class TokenizerInfo:
    """Vocabulary, special tokens and stop tokens of a tokenizer, decoded to bytes.

    Parameters
    ----------
    encoded_vocab : sequence of str or bytes
        One entry per token id, in the tokenizer's own spelling (see ``vocab_type``).  ``None``
        marks an unused id (decoded to ``b""``, special).
    vocab_type : VocabType, int or str, default RAW
        ``RAW``: UTF-8 text (bytes pass through).  ``BYTE_FALLBACK``: sentencepiece, ``<0xNN>``
        is one byte and ``"\u2581"`` a space.  ``BYTE_LEVEL``: GPT-2's byte-to-unicode alphabet.
    vocab_size : int, optional
        Width of the token mask (the model's logits).  Defaults to ``len(encoded_vocab)``; may be
        larger (the extra ids are padding: ``b""`` and special) but not smaller.
    stop_token_ids : int or sequence of int, optional
        Default: every entry spelled like one of
        :data:`~xmask.tokenizer.vocab.STOP_TOKEN_NAMES` (``</s>``, ``<|endoftext|>``, ...).
    add_prefix_space : bool, default False
        Whether the tokenizer prepends a space to its input (sentencepiece).
    special_token_ids : sequence of int, optional
        Extra special ids; stop, padding and empty tokens are always special.

    Raises
    ------
    TokenizerError
        Bad ``vocab_type``, malformed vocabulary, or ``vocab_size`` below the vocabulary length.
    InvalidTokenError
        A stop or special id outside ``[0, vocab_size)``.

    Examples
    --------
    >>> info = TokenizerInfo(["a", "\u0120b", "<|endoftext|>"], VocabType.BYTE_LEVEL, vocab_size=4)
    >>> info.decoded_vocab
    [b'a', b' b', b'<|endoftext|>', b'']
    >>> info.stop_token_ids, info.special_token_ids
    ([2], [2, 3])
    """

    def __init__(
        self,
        encoded_vocab: Sequence[Union[str, bytes, None]],
        vocab_type: Union[VocabType, int, str] = VocabType.RAW,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, Sequence[int]]] = None,
        add_prefix_space: bool = False,
        special_token_ids: Optional[Sequence[int]] = None,
    ) -> None:
        vocab_type = coerce_vocab_type(vocab_type)
        if isinstance(encoded_vocab, (str, bytes, dict)) or not hasattr(encoded_vocab, "__iter__"):
            raise TokenizerError(
                "encoded_vocab must be a sequence of str/bytes (one per id), "
                f"got {type(encoded_vocab).__name__}"
            )
        encoded = list(encoded_vocab)
        for i, tok in enumerate(encoded):
            if tok is not None and not isinstance(tok, (str, bytes, bytearray)):
                raise TokenizerError(
                    f"encoded_vocab[{i}] must be str or bytes, got {type(tok).__name__}"
                )
        decoded = decode_vocab(encoded, vocab_type)
        if stop_token_ids is None:
            names = set(STOP_TOKEN_NAMES)
            name_bytes = {name.encode("utf-8") for name in STOP_TOKEN_NAMES}
            stop_token_ids = [
                i
                for i, tok in enumerate(encoded)
                if (
                    tok in names
                    if isinstance(tok, str)
                    else tok is not None and bytes(tok) in name_bytes
                )
            ]
        self._setup(
            decoded, vocab_type, vocab_size, stop_token_ids, special_token_ids, (), add_prefix_space
        )

    def _setup(
        self,
        decoded: List[bytes],
        vocab_type: VocabType,
        vocab_size: Optional[int],
        stop_token_ids: Union[int, Iterable[int]],
        special_token_ids: Optional[Iterable[int]],
        base_special: Iterable[int],
        add_prefix_space: bool,
    ) -> None:
        """Validate sizes and ids, pad, and fill every field (the one place that does)."""
        n_tokens = len(decoded)
        if vocab_size is None:
            vocab_size = n_tokens
        else:
            if isinstance(vocab_size, bool):
                raise TokenizerError(f"vocab_size must be an int, got {vocab_size!r}")
            try:
                vocab_size = operator.index(vocab_size)
            except TypeError:
                raise TokenizerError(f"vocab_size must be an int, got {vocab_size!r}") from None
            if vocab_size < n_tokens:
                raise TokenizerError(
                    f"vocab_size={vocab_size} is smaller than the tokenizer, "
                    f"which has {n_tokens} token ids"
                )
        decoded.extend([b""] * (vocab_size - n_tokens))

        stops = sorted(set(_as_id_list(stop_token_ids, "stop_token_ids")))
        _check_range(stops, vocab_size, "stop token id")
        special: Set[int] = set(base_special)
        if special_token_ids is not None:
            extra = _as_id_list(special_token_ids, "special_token_ids")
            _check_range(extra, vocab_size, "special token id")
            special.update(extra)
        special.update(stops)
        special.update(i for i in range(n_tokens) if not decoded[i])
        special.update(range(n_tokens, vocab_size))

        self._decoded_vocab: List[bytes] = decoded
        self._vocab_type = vocab_type
        self._vocab_size = vocab_size
        self._stop_token_ids: List[int] = stops
        self._special_token_ids: List[int] = sorted(special)
        self._add_prefix_space = bool(add_prefix_space)
        self._vocab_hash: Optional[str] = None

    # ----------------------------------------------------------------------------------------
    # Constructors
    # ----------------------------------------------------------------------------------------

    @staticmethod
    def from_huggingface(
        tokenizer: Any,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, Sequence[int]]] = None,
    ) -> TokenizerInfo:
        """Build from a Hugging Face tokenizer.

        Parameters
        ----------
        tokenizer : tokenizers.Tokenizer, transformers fast tokenizer, str or os.PathLike
            A tokenizer object (``transformers.PreTrainedTokenizerFast`` included), or the path
            of a ``tokenizer.json`` or of its directory.  With a path, ``tokenizer_config.json``
            (``eos_token``) and ``generation_config.json`` (``eos_token_id``) next to it add
            stop tokens.  ``vocab_size`` and ``stop_token_ids`` are keyword-only, as in
            XGrammar.
        vocab_size : int, optional
            Mask width (the model's logits, e.g. 151936 for Qwen2.5); defaults to the
            tokenizer's id count.  Must not be smaller than that.
        stop_token_ids : int or sequence of int, optional
            Overrides detection.  Default, as XGrammar: ``[tokenizer.eos_token_id]`` for a
            transformers tokenizer that has one; otherwise detected (config eos plus known
            end-of-turn names among the added tokens).

        Returns
        -------
        TokenizerInfo
            ``vocab_type`` and ``add_prefix_space`` detected from tokenizer.json.

        Raises
        ------
        TokenizerError
            Unreadable tokenizer, or ``vocab_size`` too small.
        InvalidTokenError
            A stop id outside ``[0, vocab_size)``.

        Examples
        --------
        >>> info = TokenizerInfo.from_huggingface("data/tokenizers/llama3")  # doctest: +SKIP
        >>> info.vocab_type, info.vocab_size, info.stop_token_ids             # doctest: +SKIP
        (<VocabType.BYTE_LEVEL: 2>, 128256, [128001, 128008, 128009])
        """
        hf = load_huggingface(tokenizer)
        decoded, special = hf.decode()
        if stop_token_ids is None:
            eos_id = getattr(tokenizer, "eos_token_id", None)
            if hasattr(tokenizer, "backend_tokenizer") and isinstance(eos_id, int) and not (
                isinstance(eos_id, bool)
            ):
                # a transformers tokenizer that knows its eos: exactly that, as XGrammar does
                stop_token_ids = [eos_id]
            else:
                stop_token_ids = hf.default_stop_token_ids()
        info = TokenizerInfo.__new__(TokenizerInfo)
        info._setup(
            decoded, hf.vocab_type, vocab_size, stop_token_ids, None, special, hf.add_prefix_space
        )
        return info

    @staticmethod
    def from_vocab_and_metadata(
        encoded_vocab: Sequence[Union[str, bytes, None]], metadata: Union[str, dict]
    ) -> TokenizerInfo:
        """Rebuild from an encoded vocabulary and the :meth:`dump_metadata` JSON string (a dict
        with the same keys is accepted too).

        Examples
        --------
        >>> a = TokenizerInfo(["x", "</s>"], vocab_size=3)
        >>> b = TokenizerInfo.from_vocab_and_metadata(["x", "</s>"], a.dump_metadata())
        >>> b.vocab_size, b.stop_token_ids
        (3, [1])
        """
        if isinstance(metadata, (str, bytes)):
            try:
                metadata = json.loads(metadata)
            except ValueError as exc:
                raise TokenizerError(f"metadata is not valid JSON: {exc}") from exc
        if not isinstance(metadata, dict):
            raise TokenizerError(
                f"metadata must be a dict or JSON object, got {type(metadata).__name__}"
            )
        missing = {
            "vocab_type",
            "vocab_size",
            "add_prefix_space",
            "stop_token_ids",
        } - metadata.keys()
        if missing:
            raise TokenizerError(f"metadata is missing {sorted(missing)}")
        return TokenizerInfo(
            encoded_vocab,
            metadata["vocab_type"],
            vocab_size=metadata["vocab_size"],
            stop_token_ids=metadata["stop_token_ids"],
            add_prefix_space=metadata["add_prefix_space"],
        )

    # ----------------------------------------------------------------------------------------
    # Properties (treat returned lists as read-only: they are the object's own storage)
    # ----------------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Mask width: number of token ids, including padding.

        Examples
        --------
        >>> TokenizerInfo(["a", "b"], vocab_size=8).vocab_size
        8
        """
        return self._vocab_size

    @property
    def decoded_vocab(self) -> List[bytes]:
        """Bytes of every token id (``len == vocab_size``; padding ids are ``b""``).

        The list is the object's own storage, returned without copying: do not mutate it.

        Examples
        --------
        >>> TokenizerInfo(["\u2581hi", "<0x0A>"], VocabType.BYTE_FALLBACK).decoded_vocab
        [b' hi', b'\\n']
        """
        return self._decoded_vocab

    @property
    def stop_token_ids(self) -> List[int]:
        """Sorted ids that end generation (a subset of :attr:`special_token_ids`).

        Examples
        --------
        >>> TokenizerInfo(["a", "<|im_end|>"]).stop_token_ids
        [1]
        """
        return self._stop_token_ids

    @property
    def special_token_ids(self) -> List[int]:
        """Sorted ids a grammar never emits as text: special, stop, empty and padding ids.

        Examples
        --------
        >>> TokenizerInfo(["a", "", "</s>"], vocab_size=4).special_token_ids
        [1, 2, 3]
        """
        return self._special_token_ids

    @property
    def vocab_type(self) -> VocabType:
        """How the encoded vocabulary was spelled.

        Examples
        --------
        >>> TokenizerInfo(["a"], "byte_level").vocab_type
        <VocabType.BYTE_LEVEL: 2>
        """
        return self._vocab_type

    @property
    def add_prefix_space(self) -> bool:
        """Whether the tokenizer prepends a space to its input (sentencepiece-style).

        Examples
        --------
        >>> TokenizerInfo(["a"], add_prefix_space=True).add_prefix_space
        True
        """
        return self._add_prefix_space

    @property
    def prepend_space_in_tokenization(self) -> bool:
        """Deprecated XGrammar alias of :attr:`add_prefix_space`.

        Examples
        --------
        >>> TokenizerInfo(["a"]).prepend_space_in_tokenization
        False
        """
        return self._add_prefix_space

    @property
    def vocab_hash(self) -> str:
        """Stable SHA-256 hex digest of everything that determines token masks.

        Covers the vocab type, the bytes of every id (so also ``vocab_size``), the special ids
        and the stop ids; use it as a cache key for compiled grammars.

        Examples
        --------
        >>> a, b = TokenizerInfo(["a", "b"]), TokenizerInfo(["a", "b"], vocab_size=3)
        >>> len(a.vocab_hash), a.vocab_hash == b.vocab_hash
        (64, False)
        """
        if self._vocab_hash is None:
            h = hashlib.sha256(_HASH_VERSION)
            h.update(b"|type=%d|size=%d|" % (int(self._vocab_type), self._vocab_size))
            # Length-prefix every token so that different splits cannot collide.
            h.update(b"".join(len(tok).to_bytes(4, "little") + tok for tok in self._decoded_vocab))
            h.update(b"|special=" + ",".join(map(str, self._special_token_ids)).encode())
            h.update(b"|stop=" + ",".join(map(str, self._stop_token_ids)).encode())
            self._vocab_hash = h.hexdigest()
        return self._vocab_hash

    # ----------------------------------------------------------------------------------------
    # Serialization and introspection
    # ----------------------------------------------------------------------------------------

    def dump_metadata(self) -> str:
        """Metadata needed (with the encoded vocabulary) to rebuild this object, as the JSON
        string XGrammar returns; :meth:`from_vocab_and_metadata` reads it back.

        Returns
        -------
        str
            ``{"vocab_type": int, "vocab_size": int, "add_prefix_space": bool,
            "stop_token_ids": list[int]}`` as compact JSON.

        Examples
        --------
        >>> TokenizerInfo(["a", "</s>"]).dump_metadata()
        '{"vocab_type":0,"vocab_size":2,"add_prefix_space":false,"stop_token_ids":[1]}'
        """
        return json.dumps(
            {
                "vocab_type": int(self._vocab_type),
                "vocab_size": self._vocab_size,
                "add_prefix_space": self._add_prefix_space,
                "stop_token_ids": list(self._stop_token_ids),
            },
            separators=(",", ":"),
        )

    @staticmethod
    def _detect_metadata_from_hf(backend_str: str) -> Dict[str, Any]:
        """Vocab type and prefix-space flag of a serialized Hugging Face tokenizer (XGrammar's
        helper; ``backend_str`` is ``tokenizer.backend_tokenizer.to_str()``).

        Returns
        -------
        dict
            ``{"vocab_type": VocabType, "add_prefix_space": bool}``.

        Raises
        ------
        InvalidJSONError
            ``backend_str`` is not JSON.

        Examples
        --------
        >>> TokenizerInfo._detect_metadata_from_hf('{"decoder": {"type": "ByteLevel"}}')
        {'vocab_type': <VocabType.BYTE_LEVEL: 2>, 'add_prefix_space': False}
        """
        try:
            spec = json.loads(backend_str)
        except (TypeError, ValueError) as exc:
            raise InvalidJSONError(
                f"the tokenizer backend string is not JSON: {exc}", getattr(exc, "pos", None)
            ) from None
        if not isinstance(spec, dict):
            raise InvalidJSONError(
                f"the tokenizer backend string must be a JSON object, got {type(spec).__name__}"
            )
        return {
            "vocab_type": detect_vocab_type(spec),
            "add_prefix_space": detect_add_prefix_space(spec),
        }

    def serialize_json(self) -> str:
        """This tokenizer info as a JSON string (XGrammar's name and role): the bytes of every
        token, the special and stop ids and the metadata, in the versioned, checksummed format
        of :mod:`xmask.serialization.format`.

        Examples
        --------
        >>> info = TokenizerInfo(["a", "\u0120b", "</s>"], VocabType.BYTE_LEVEL, vocab_size=4)
        >>> again = TokenizerInfo.deserialize_json(info.serialize_json())
        >>> again.decoded_vocab, again.vocab_hash == info.vocab_hash
        ([b'a', b' b', b'</s>', b''], True)
        """
        import numpy as np

        from ..serialization.fields import encode_array
        from ..serialization.format import dump_document

        vocab = self._decoded_vocab
        lengths = np.fromiter(map(len, vocab), dtype=np.int32, count=len(vocab))
        body = {
            "vocab_type": int(self._vocab_type),
            "vocab_size": self._vocab_size,
            "add_prefix_space": self._add_prefix_space,
            "stop_token_ids": list(self._stop_token_ids),
            "special_token_ids": list(self._special_token_ids),
            "token_lengths": encode_array(lengths),
            "token_bytes": encode_array(np.frombuffer(b"".join(vocab), dtype=np.uint8)),
            "vocab_hash": self.vocab_hash,
        }
        return dump_document("tokenizer_info", body)

    @staticmethod
    def deserialize_json(json_string: str) -> TokenizerInfo:
        """Rebuild from :meth:`serialize_json` text.

        Raises
        ------
        DeserializeVersionError
            Data written by another serialization format version (both versions named).
        DeserializeFormatError
            Corrupt, truncated or malformed data, or another kind of object (the field and the
            problem named).

        Examples
        --------
        >>> info = TokenizerInfo(["x", "</s>"])
        >>> TokenizerInfo.deserialize_json(info.serialize_json()).stop_token_ids
        [1]
        """
        import numpy as np

        from ..serialization.fields import get_array, get_bool, get_int, get_int_list, get_str
        from ..serialization.format import format_error, load_document

        where = "TokenizerInfo"
        body = load_document(json_string, "tokenizer_info")
        vocab_size = get_int(body, "vocab_size", where, minimum=0, maximum=2**31 - 1)
        try:
            vocab_type = coerce_vocab_type(get_int(body, "vocab_type", where))
        except TokenizerError as exc:
            raise format_error(where + ".vocab_type", str(exc)) from None
        lengths = get_array(body, "token_lengths", where, "<i4")
        data = get_array(body, "token_bytes", where, "|u1").tobytes()
        if lengths.shape[0] != vocab_size:
            raise format_error(where + ".token_lengths",
                               f"{lengths.shape[0]} tokens for vocab_size {vocab_size}")
        if (lengths < 0).any() or int(lengths.sum(dtype=np.int64)) != len(data):
            raise format_error(where + ".token_lengths",
                               f"lengths do not add up to the {len(data)} stored bytes")
        ends = np.cumsum(lengths, dtype=np.int64).tolist()
        starts = [0] + ends[:-1]
        decoded = [data[a:b] for a, b in zip(starts, ends)]
        info = TokenizerInfo.__new__(TokenizerInfo)
        try:
            info._setup(decoded, vocab_type, vocab_size, get_int_list(body, "stop_token_ids", where),
                        get_int_list(body, "special_token_ids", where), (),
                        get_bool(body, "add_prefix_space", where))
        except (TokenizerError, InvalidTokenError) as exc:
            raise format_error(where, str(exc)) from None
        stored = get_str(body, "vocab_hash", where)
        if info.vocab_hash != stored:
            raise format_error(where + ".vocab_hash", f"the rebuilt vocabulary hashes to "
                               f"{info.vocab_hash}, the data says {stored}")
        return info

    def __reduce__(self):
        return (TokenizerInfo.deserialize_json, (self.serialize_json(),))

    def __repr__(self) -> str:
        stops = self._stop_token_ids
        stop_text = repr(stops) if len(stops) <= 8 else f"[{', '.join(map(str, stops[:8]))}, ...]"
        return (
            f"TokenizerInfo(vocab_type={self._vocab_type.name}, vocab_size={self._vocab_size}, "
            f"special={len(self._special_token_ids)}, stop_token_ids={stop_text}, "
            f"add_prefix_space={self._add_prefix_space})"
        )
