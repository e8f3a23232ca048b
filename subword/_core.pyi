# Typed stubs for the private native module `subword._core` (hand-written; keep in step with rust/src/py*.rs).
# R-TRAIN owns the training section, R-ENC the tokenizer section; add your own lines there.
from collections.abc import Callable, Iterable
from typing import Any, Literal

__version__: str
#: Fingerprint of the Rust sources this extension was built from (rust/build.rs; tests/test_extension.py).
SOURCE_HASH: str

# ==== training (rust/src/py/train.rs) ====

class InputDigest:
    """The SHA-256 and UTF-8 length of an input's lines, hashed by ``WordCounter.feed`` beside the counting."""

    def __init__(self) -> None: ...
    def hexdigest(self) -> str: ...
    @property
    def bytes(self) -> int: ...

class WordCounter:
    """Parallel word counter: pre-tokenizes (and optionally normalizes) lines and counts the pieces."""

    def __init__(self, pre_tokenizer: str, normalizer: str | None = None, threads: int | None = None) -> None: ...
    def feed(self, lines: list[str], digest: InputDigest | None = None) -> None: ...
    def words(self) -> list[tuple[str, int]]: ...
    def __len__(self) -> int: ...
    # ---- mergeable counts and .swc record streams (subword/counts.py, subword/formats/counts.py) ----
    def memory_bytes(self) -> int: ...
    def peak_after_next_feed(self) -> int: ...
    def occurrences(self) -> int: ...
    def merge(self, other: WordCounter) -> None: ...
    def set_threads(self, threads: int | None = None) -> None: ...
    def retain_min_count(self, min_count: int) -> None: ...
    def spill(self, path: str) -> tuple[int, int, int, int]: ...
    def append_records(
        self, path: str, runs: list[tuple[str, int, int]] = ..., min_count: int = 0
    ) -> tuple[tuple[int, int, int, int], list[int]]: ...
    def read_records(self, path: str, offset: int, length: int, min_count: int = 0) -> int: ...
    def to_records(self) -> bytes: ...
    def add_records(self, records: bytes) -> None: ...

class TrainingWords:
    """The words a BPE/WordPiece trainer needs for one set of options (rust/src/bpe/select.rs): with
    min_frequency >= 2, the words none of whose initial pairs can reach it are left out, exactly."""

    @staticmethod
    def select(
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
        criterion: Literal["likelihood", "pmi", "frequency"] | None = None,
        prune: bool = True,
        threads: int | None = None,
    ) -> TrainingWords: ...
    @staticmethod
    def from_file(
        path: str,
        offset: int,
        length: int,
        pre_tokenizer: str,
        *,
        vocab_size: int,
        min_count: int = 0,
        min_frequency: int = 0,
        special_tokens: list[str] = ...,
        initial_alphabet: list[str] = ...,
        limit_alphabet: int | None = None,
        max_token_length: int | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        criterion: Literal["likelihood", "pmi", "frequency"] | None = None,
        prune: bool = True,
        threads: int | None = None,
    ) -> tuple[TrainingWords, int]: ...
    @property
    def loaded(self) -> int: ...
    @property
    def distinct(self) -> int: ...
    @property
    def occurrences(self) -> int: ...
    def words(self) -> list[tuple[str, int]]: ...
    def __len__(self) -> int: ...

def train_bpe(
    source: WordCounter | TrainingWords | Iterable[tuple[str, int]],
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
    source: WordCounter | TrainingWords | Iterable[tuple[str, int]],
    *,
    vocab_size: int,
    criterion: Literal["likelihood", "pmi", "frequency"] = "likelihood",
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

class FlatBuffer:
    """Bytes the core filled, lent through the buffer protocol (``numpy.frombuffer`` views them, writable)."""

    def __len__(self) -> int: ...

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
    def ids_offsets_u32(self) -> tuple[bytes, bytes]: ...
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
    @staticmethod
    def from_parts(skeleton: str, model: NativeModel) -> CoreTokenizer:
        """The pipeline of ``skeleton`` (a tokenizer.json whose model section holds its options only) with
        the data of ``model``, read from a file by :func:`read_hf_json`, :func:`read_tiktoken` or
        :func:`read_vocab_txt`."""
    def encode(self, text: str, add_special_tokens: bool = True, pair: str | None = None) -> Encoding: ...
    def encode_batch(
        self, texts: list[str], add_special_tokens: bool = True, pairs: list[str | None] | None = None
    ) -> list[Encoding]: ...
    def encode_ids(self, text: str, add_special_tokens: bool = True) -> list[int]: ...
    def encode_batch_ids(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]: ...
    def encode_batch_ids_flat(self, texts: list[str], add_special_tokens: bool = True) -> tuple[FlatBuffer, FlatBuffer]:
        """Every text's ids back to back (native-endian uint32) and len(texts) + 1 int64 offsets."""
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
class NativeModel:
    """The data of a model (vocab, merges) read from a file in Rust, for :meth:`CoreTokenizer.from_parts`;
    it keeps the file's bytes to read the data again."""

    def token_to_id(self, token: str) -> int | None: ...
    def added_tokens_fit(self, added: list[tuple[int, str]]) -> bool:
        """Whether added tokens ``(id, content)`` agree with the vocab as ``Tokenizer._set_added`` checks."""
    def __len__(self) -> int: ...
    @property
    def source(self) -> bytes: ...
    @property
    def kind(self) -> str: ...
    def tiktoken_vocab_merges(self) -> tuple[dict[str, int], list[tuple[str, str]]]:
        """For a tiktoken file: the BPE vocab (file order) and merges, as ``formats.tiktoken.from_ranks`` makes them."""

def read_hf_json(data: bytes) -> tuple[str, NativeModel] | None:
    """The skeleton (the file with the model's vocab and merges emptied) and the model data of a tokenizer.json
    whose BPE / WordPiece data passes the Python model's checks; None otherwise."""
def read_tiktoken(data: bytes, id_offset: int = 0) -> NativeModel | None:
    """The byte-level BPE of a clean tiktoken rank file, each id ``id_offset`` above its rank (Tekken files);
    None otherwise."""
def read_vocab_txt(data: bytes) -> NativeModel | None:
    """The WordPiece vocab of a clean vocab.txt (no blank or repeated line); None otherwise."""
def spm_parse_model(
    data: bytes, pieces: bool = True,
) -> tuple[list[tuple[str, float, int]], list[tuple[int, int, tuple[int, int], tuple[int, int]]]]: ...
def spm_words(lines: list[str], spec_json: str) -> list[tuple[str, int]]: ...
def spm_normalize(text: str, spec_json: str) -> str: ...

class SpmTextNormalizer:
    def __init__(self, spec_json: str, charsmap: bytes | None = None) -> None: ...
    def normalize(self, text: str) -> str: ...
    def normalize_aligned(self, text: str) -> tuple[str, list[int]]: ...

class CoreSpmTokenizer:
    """The SentencePiece pipeline of Tokenizer (normalizer + Unigram or BPE model), same Encoding."""

    def __init__(
        self,
        pieces: list[tuple[str, float, int]],
        model_type: int,
        spec_json: str,
        charsmap: bytes | None = None,
        byte_fallback: bool = False,
        unk_surface: str = " \u2047 ",
    ) -> None: ...
    @staticmethod
    def from_model_bytes(
        data: bytes,
        model_type: int,
        spec_json: str,
        charsmap: bytes | None = None,
        byte_fallback: bool = False,
        unk_surface: str = " \u2047 ",
    ) -> CoreSpmTokenizer:
        """The pipeline of a ``.model`` file's bytes (its pieces parsed in Rust); ValueError unless exactly one
        piece is UNKNOWN."""
    def encode(self, text: str, add_special_tokens: bool = True, pair: str | None = None) -> Encoding: ...
    def encode_batch(
        self, texts: list[str], add_special_tokens: bool = True, pairs: list[str | None] | None = None
    ) -> list[Encoding]: ...
    def encode_ids(self, text: str, add_special_tokens: bool = True) -> list[int]: ...
    def encode_batch_ids(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]: ...
    def encode_batch_ids_flat(self, texts: list[str], add_special_tokens: bool = True) -> tuple[FlatBuffer, FlatBuffer]:
        """Every text's ids back to back (native-endian uint32) and len(texts) + 1 int64 offsets."""
    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str: ...
    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = True) -> list[str]: ...
    def nbest(self, text: str, n: int) -> list[tuple[Encoding, float]]: ...
    def sample(
        self, text: str, alpha: float, nbest_size: int = -1, seed: int = 0, count: int = 1
    ) -> list[Encoding]: ...
    def normalize(self, text: str) -> str: ...
    def token_to_id(self, token: str) -> int | None: ...
    def id_to_token(self, id: int) -> str | None: ...
    def vocab_size(self) -> int: ...

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

# ---- subword compare (rust/src/compare, rust/src/py/compare.rs) ----

class CompareCollector:
    """Per chunk, in order: ``segment(lines, last_chunk)``, ``classify(is_word, script)`` for the new types,
    ``reduce(lines, block_lines)``."""

    def __init__(
        self,
        cores: list[CoreTokenizer | CoreSpmTokenizer],
        unk_ids: list[int | None],
        byte_token_masks: list[bytes],
        scripts: int,
    ) -> None: ...
    def segment(self, lines: list[str], last_chunk: bool) -> tuple[list[str], list[int]]: ...
    def ascii_classes(self, latin: int, common: int) -> tuple[bytes, bytes, list[int]]: ...
    def classify(self, is_word: bytes, script: bytes) -> None: ...
    def types(self) -> int: ...
    def reduce(self, lines: list[str], block_lines: int) -> dict[str, Any]: ...

def round_trip_verdicts(
    core: CoreTokenizer | CoreSpmTokenizer, id_lists: list[list[int]], lines: list[str]
) -> tuple[bytes, bytes]: ...
def word_segments(text: str) -> list[tuple[int, int]]: ...

WORD_BREAK_UNICODE_VERSION: str
def compare_vocab_table(
    core: CoreTokenizer | CoreSpmTokenizer,
    added: list[tuple[int, str]],
    byte_level: bool,
    metaspace: str | None,
    prefix: str,
    byte_pieces: bool,
) -> dict[str, Any]: ...
