# Typed stubs for the private native module `subword._core` (hand-written; keep in step with rust/src/py*.rs).
# R-TRAIN owns the training section, R-ENC the tokenizer section; add your own lines there.
from collections.abc import Callable, Iterable
from typing import Literal

__version__: str

# ==== training (rust/src/py/train.rs) ====

class WordCounter:
    """Parallel word counter: pre-tokenizes (and optionally normalizes) lines and counts the pieces."""

    def __init__(self, pre_tokenizer: str, normalizer: str | None = None, threads: int | None = None) -> None: ...
    def feed(self, lines: list[str]) -> None: ...
    def words(self) -> list[tuple[str, int]]: ...
    def __len__(self) -> int: ...

def train_bpe(
    source: WordCounter | Iterable[tuple[str, int]],
    *,
    vocab_size: int,
    min_frequency: int = 0,
    special_tokens: list[str] = ...,
    initial_alphabet: list[str] = ...,
    limit_alphabet: int | None = None,
    max_token_length: int | None = None,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    threads: int | None = None,
) -> tuple[list[str], list[tuple[str, str]]]: ...

# ---- WordPiece training (py/wordpiece.rs): returns the vocab in id order ----
def train_wordpiece(
    source: WordCounter | Iterable[tuple[str, int]],
    *,
    vocab_size: int,
    criterion: Literal["likelihood", "frequency"] = "likelihood",
    min_frequency: int = 0,
    special_tokens: list[str] = ...,
    initial_alphabet: list[str] = ...,
    limit_alphabet: int | None = None,
    max_token_length: int | None = None,
    continuing_subword_prefix: str = "##",
    progress: Callable[[str, int, int], None] | None = None,
    threads: int | None = None,
) -> list[str]: ...

# ==== tokenizer (rust/src/py/tokenizer.rs) ====

class Encoding:
    """Immutable result of encoding one text; offsets are character spans of the original text.

    Fields are converted to Python objects lazily, on first read.
    """

    @property
    def ids(self) -> list[int]: ...
    @property
    def type_ids(self) -> list[int]: ...
    @property
    def tokens(self) -> list[str]: ...
    @property
    def offsets(self) -> list[tuple[int, int]]: ...
    @property
    def byte_offsets(self) -> list[tuple[int, int]]: ...
    @property
    def attention_mask(self) -> list[int]: ...
    @property
    def special_tokens_mask(self) -> list[int]: ...
    @property
    def sequence_ids(self) -> list[int | None]: ...
    @property
    def overflowing(self) -> list[Encoding]: ...
    def __len__(self) -> int: ...
    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> Encoding: ...
    def pad(
        self, length: int, pad_id: int = 0, pad_type_id: int = 0, pad_token: str = "[PAD]", direction: str = "right"
    ) -> Encoding: ...

class CoreTokenizer:
    """The whole pipeline, built from the full HF tokenizer.json text (ValueError names an unsupported part).

    Truncation and padding come from the JSON's "truncation"/"padding" sections and are applied as HF does.
    """

    def __init__(self, tokenizer_json: str) -> None: ...
    def encode(self, text: str, add_special_tokens: bool = True, pair: str | None = None) -> Encoding: ...
    def encode_batch(
        self, texts: list[str], add_special_tokens: bool = True, pairs: list[str | None] | None = None
    ) -> list[Encoding]: ...
    def encode_ids(self, text: str, add_special_tokens: bool = True) -> list[int]: ...
    def encode_batch_ids(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]: ...
    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str: ...
    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = True) -> list[str]: ...
    def token_to_id(self, token: str) -> int | None: ...
    def id_to_token(self, id: int) -> str | None: ...
    def vocab_size(self) -> int: ...
    def set_dropout(self, p: float | None, seed: int = 0) -> None: ...

class PreTokenizer:
    """A pre-tokenizer built from its HF JSON dict text, e.g. '{"type":"Whitespace"}'."""

    def __init__(self, spec_json: str) -> None: ...
    def pre_tokenize_str(self, text: str) -> list[tuple[str, tuple[int, int]]]: ...

class Normalizer:
    """A normalizer built from its HF JSON dict text, e.g. '{"type":"NFKC"}'."""

    def __init__(self, spec_json: str) -> None: ...
    def normalize_str(self, text: str) -> str: ...
    def normalize_with_alignment(self, text: str) -> tuple[str, list[tuple[int, int]]]: ...

# ==== SentencePiece pipeline and SentencePiece-compatible BPE (rust/src/py/spm.rs) ====

def spm_prepare(
    lines: list[str], spec_json: str, threads: int | None = None
) -> tuple[list[tuple[str, int]], list[tuple[str, int]], list[tuple[int, str, int]], dict[str, int]]: ...
def spm_parse_model(
    data: bytes, pieces: bool = True,
) -> tuple[list[tuple[str, float, int]], list[tuple[int, int, tuple[int, int], tuple[int, int]]]]: ...
def spm_words(lines: list[str], spec_json: str) -> list[tuple[str, int]]: ...
def spm_normalize(text: str, spec_json: str) -> str: ...

class SpmTextNormalizer:
    def __init__(self, spec_json: str, charsmap: bytes | None = None) -> None: ...
    def normalize(self, text: str) -> str: ...
    def normalize_aligned(self, text: str) -> tuple[str, list[int]]: ...

def spm_is_valid_piece(piece: str, spec_json: str) -> bool: ...
def train_spm_bpe(
    lines: list[str],
    spec_json: str,
    progress: Callable[[str, int, int], None] | None = None,
    threads: int | None = None,
) -> tuple[list[tuple[str, float, int]], dict[str, int]]: ...

class SpmBpeEncoder:
    """Encoder of a SentencePiece BPE model (pieces with ModelProto types, optional precompiled charsmap)."""

    def __init__(
        self, pieces: list[tuple[str, float, int]], spec_json: str, charsmap: bytes | None = None,
        byte_fallback: bool = False,
    ) -> None: ...
    @staticmethod
    def from_model_bytes(
        data: bytes, spec_json: str, charsmap: bytes | None = None, byte_fallback: bool = False,
    ) -> SpmBpeEncoder: ...
    def encode(self, text: str) -> list[int]: ...
    def encode_batch(self, texts: list[str]) -> list[list[int]]: ...
    def normalize(self, text: str) -> str: ...

# ==== Unigram (rust/src/py/unigram.rs) ====

class UnigramModel:
    def __init__(
        self,
        pieces: list[tuple[str, float]],
        kinds: list[int] | None = None,
        unk_id: int | None = None,
        byte_fallback: bool = False,
        compat: str = "spm",
    ) -> None: ...
    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]: ...
    def encode_batch_ids(self, texts: list[str], word_cache: bool = True) -> list[list[int]]: ...
    def encode_batch_spm(self, texts: list[str], normalizer: SpmTextNormalizer, word_cache: bool = True) -> list[list[int]]: ...
    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]: ...
    def sample(
        self, text: str, alpha: float, nbest_size: int = -1, seed: int = 0, count: int = 1
    ) -> list[tuple[list[int], list[tuple[int, int]]]]: ...
    def __len__(self) -> int: ...

def train_unigram(
    sentences: list[tuple[str, int]],
    words: list[tuple[str, int]],
    required_chars: list[tuple[str, int]],
    *,
    vocab_size: int,
    meta_pieces: int = 3,
    compat: str = "spm",
    shrinking_factor: float = 0.75,
    num_sub_iterations: int = 2,
    max_piece_length: int = 16,
    seed_size: int = 1000000,
    num_threads: int = 16,
    split_by_whitespace: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[tuple[str, float]]: ...
def train_unigram_spm(
    lines: list[str],
    spec_json: str,
    *,
    shrinking_factor: float = 0.75,
    num_sub_iterations: int = 2,
    seed_sentencepiece_size: int = 1000000,
    num_threads: int = 16,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[list[tuple[str, float, int]], dict[str, int]]: ...
