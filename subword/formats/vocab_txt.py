"""BERT ``vocab.txt`` (one WordPiece token per line, id = line number), loaded as HF's
``BertWordPieceTokenizer(vocab)`` builds it, with the same defaults.

The file holds the vocabulary only; the rest is BERT's pipeline: ``BertNormalizer`` (clean-up, CJK
spacing, lowercasing and accent stripping: HF's default ``lowercase=True``, so a cased vocabulary needs
``lowercase=False``), ``BertPreTokenizer``, the ``WordPiece`` model (``[UNK]``, ``##``), ``[CLS] A [SEP]``
(when both tokens are in the vocab) and the ``WordPiece`` decoder. ``[PAD] [UNK] [CLS] [SEP] [MASK]`` are
special tokens when present.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "vocab.txt"
>>> _ = p.write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nhello\\n##s\\n")
>>> load(p).encode("Hellos").tokens
['[CLS]', 'hello', '##s', '[SEP]']
"""

from __future__ import annotations

import logging
import os
import re

from subword.errors import FormatError, ModelError

__all__ = ["load", "sniff", "BERT_SPECIALS"]

log = logging.getLogger(__name__)

#: What never occurs inside a vocab.txt token: whitespace, C0 control characters, DEL.
_INSIDE_A_TOKEN = re.compile(r"[\s\x00-\x1f\x7f]")

#: The special tokens HF's ``BertWordPieceTokenizer`` registers when the vocabulary has them (its order).
BERT_SPECIALS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")


def sniff(head: bytes) -> bool:
    """Whether ``head`` (the start of a file) looks like a ``vocab.txt``: UTF-8 text, one token per line,
    no whitespace or control character inside a token.

    >>> sniff(b"[PAD]\\n[UNK]\\nthe\\n##s\\n"), sniff(b"hello world\\n"), sniff(b"\\x0a\\x05\\x0a")
    (True, False, False)
    """
    if not head or b"\0" in head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(head) < 4096 or exc.start < len(head) - 3:
            return False
        text = head[:exc.start].decode("utf-8")  # a character cut at the end of the head
    from subword.normalizers import WHITE_SPACE

    lines = text.split("\n")  # HF's line breaks: \n only (U+2028 and the like are inside a line)
    if len(head) >= 4096 and lines:
        lines = lines[:-1]  # the last line may be cut
    white = "".join(WHITE_SPACE)
    tokens = [t for t in (line.rstrip(white) for line in lines) if t]
    if not tokens:
        return False
    # no whitespace and no C0 control character inside a token (binary data has them); `\s` of a str
    # pattern is str.isspace, and joining the tokens adds no character
    return _INSIDE_A_TOKEN.search("".join(tokens)) is None


def load(path: str | os.PathLike[str], *, lowercase: bool = True, strip_accents: bool | None = None,
         clean_text: bool = True, handle_chinese_chars: bool = True):  # -> Tokenizer
    """A BERT tokenizer over ``vocab.txt`` (HF ``BertWordPieceTokenizer`` with the same options).

    Raises:
        FormatError: the file is not UTF-8 or holds no token (the message names it).
    """
    from subword import decoders, normalizers, pre_tokenizers, processors
    from subword.model import WordPiece
    from subword.tokenizer import AddedToken, Tokenizer

    native = _read_native(path)
    if native is not None:
        model = _deferred_model(native, path)
        ids = {t: native.token_to_id(t) for t in ("[UNK]", *BERT_SPECIALS)}
        ids = {t: i for t, i in ids.items() if i is not None}
    else:
        try:
            model = WordPiece.from_vocab_file(path)
        except ModelError as exc:
            raise FormatError(f"{exc} (read as a BERT vocab.txt)") from None
        ids = {t: model.vocab[t] for t in ("[UNK]", *BERT_SPECIALS) if t in model.vocab}
    tok = Tokenizer(
        model,
        normalizer=normalizers.BertNormalizer(clean_text=clean_text, handle_chinese_chars=handle_chinese_chars,
                                              strip_accents=strip_accents, lowercase=lowercase),
        pre_tokenizer=pre_tokenizers.BertPreTokenizer(),
        decoder=decoders.WordPiece(prefix="##"),
    )
    added = [(ids[t], AddedToken(t, special=True)) for t in BERT_SPECIALS if t in ids]
    if native is not None:
        tok._added = added  # vocab tokens at their own ids: what _set_added checks holds by construction
    else:
        tok._set_added(added)
    if "[SEP]" in ids and "[CLS]" in ids:
        tok.post_processor = processors.BertProcessing(("[SEP]", ids["[SEP]"]), ("[CLS]", ids["[CLS]"]))
    else:
        log.warning("%s has no [CLS] or no [SEP]: no BERT post-processor (HF's BertWordPieceTokenizer refuses "
                    "such a vocabulary)", path)
    return tok


def _read_native(path: str | os.PathLike[str]):
    """``_core.read_vocab_txt`` of the file: the vocab read in Rust when the file is clean (UTF-8, no blank or
    repeated token: what :meth:`~subword.model.WordPiece.from_vocab_file` would log), else None."""
    from subword._native import has_core_class

    if not has_core_class("read_vocab_txt"):
        return None
    from pathlib import Path

    from subword import _core

    return _core.read_vocab_txt(Path(path).read_bytes())


def _deferred_model(native, path: str | os.PathLike[str]):  # -> WordPiece
    """The WordPiece of a vocab.txt read in Rust; its Python vocab is read from the same bytes when asked for."""
    from subword.model import WordPiece

    def loader() -> dict:
        return {"vocab": WordPiece._vocab_of_text(native.source.decode("utf-8"), path)}

    if native.token_to_id("[UNK]") is None:
        # what WordPiece() says about such a vocab
        logging.getLogger("subword.model").warning(
            "WordPiece unk_token %r is not in the vocab: words it cannot spell will fail to encode", "[UNK]")
    return WordPiece._deferred(loader, native)
