"""subword: train, compare and use subword tokenizers, with a Rust core.

>>> from subword import BPE, Tokenizer
>>> from subword.pre_tokenizers import Whitespace
>>> tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]), pre_tokenizer=Whitespace())
>>> tok.get_vocab_size()
3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from subword import decoders as decoders
from subword import errors as errors
from subword import normalizers as normalizers
from subword import pre_tokenizers as pre_tokenizers
from subword import processors as processors
from subword.errors import FormatError as FormatError
from subword.errors import SubwordError as SubwordError
from subword.errors import UnsupportedComponentError as UnsupportedComponentError
from subword.model import BPE as BPE
from subword.model import Unigram as Unigram
from subword.model import WordPiece as WordPiece
from subword.model_spm import SentencePieceBPE as SentencePieceBPE
from subword.model_spm import SentencePieceUnigram as SentencePieceUnigram
from subword.tokenizer import AddedToken as AddedToken
from subword.tokenizer import Tokenizer as Tokenizer

# ``subword.compare`` is the function; binding it here, before anything imports the package's modules,
# keeps the name the function's (the package's __init__ imports nothing heavy: numpy loads on the first call).
from subword.compare import compare as compare  # noqa: E402

if TYPE_CHECKING:
    from subword._core import Encoding as Encoding
    from subword.spm import SpmBpeTrainer as SpmBpeTrainer
    from subword.trainers import BpeTrainer as BpeTrainer
    from subword.trainers import ByteLevelBpeTrainer as ByteLevelBpeTrainer
    from subword.trainers import Trainer as Trainer
    from subword.trainers import WordPieceTrainer as WordPieceTrainer
    from subword.trainers import train as train
    from subword.trainers import train_bpe as train_bpe
    from subword.trainers import train_wordpiece as train_wordpiece
    from subword.unigram import UnigramTrainer as UnigramTrainer

    from subword.counts import WordCounts as WordCounts
    from subword.counts import count_words as count_words

__all__ = [
    "Tokenizer",
    "Encoding",
    "AddedToken",
    "BPE",
    "WordPiece",
    "Unigram",
    "SentencePieceUnigram",
    "SentencePieceBPE",
    "train",
    "Trainer",
    "BpeTrainer",
    "ByteLevelBpeTrainer",
    "WordPieceTrainer",
    "UnigramTrainer",
    "SpmBpeTrainer",
    "train_bpe",
    "train_wordpiece",
    "count_words",
    "WordCounts",
    "normalizers",
    "pre_tokenizers",
    "decoders",
    "processors",
    "errors",
    "SubwordError",
    "FormatError",
    "UnsupportedComponentError",
    "compare",
]

# Resolved on first use: `Encoding` lives in the compiled core and the trainers pull in the training
# machinery; neither should make `import subword` fail or slow for users who only load files.
_LAZY = {
    "Encoding": ("subword._core", "Encoding"),
    "train": ("subword.trainers", "train"),
    "Trainer": ("subword.trainers", "Trainer"),
    "BpeTrainer": ("subword.trainers", "BpeTrainer"),
    "ByteLevelBpeTrainer": ("subword.trainers", "ByteLevelBpeTrainer"),
    "WordPieceTrainer": ("subword.trainers", "WordPieceTrainer"),
    "UnigramTrainer": ("subword.unigram", "UnigramTrainer"),
    "SpmBpeTrainer": ("subword.spm", "SpmBpeTrainer"),
    "train_bpe": ("subword.trainers", "train_bpe"),
    "train_wordpiece": ("subword.trainers", "train_wordpiece"),

    "count_words": ("subword.counts", "count_words"),
    "WordCounts": ("subword.counts", "WordCounts"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        try:
            value = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            # AttributeError keeps hasattr() and `from subword import *` tooling well-behaved.
            raise AttributeError(f"subword.{name} is unavailable: {exc}") from exc
        globals()[name] = value
        return value
    raise AttributeError(f"module 'subword' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
