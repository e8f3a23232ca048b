"""Where the tests find real text: the shared corpora next to the repository, or stand-ins built from the
built-in corpus on a user's own clone.

Most tests that read ``tinyshakespeare.txt`` or ``gutenberg_en_20M.txt`` need real English text, not that
particular book: a cross-check against HF tokenizers or sentencepiece is as strong on any real prose. So
:data:`CORPORA` is the shared folder when it holds both files (as in CI), and otherwise a folder of
stand-ins under the same names, cut from the built-in corpus (the running Python's standard-library
docstrings and comments, :func:`corpora.builtin_corpus`): ``tinyshakespeare.txt`` is its first ~1.1 MB,
``gutenberg_en_20M.txt`` all of it (~4.6 MB). Tests tied to a specific corpus (its size, its hash, figures
measured on it) use :data:`SHARED_CORPORA` and skip when it is absent.
"""

from __future__ import annotations

from pathlib import Path

#: ``../shared/corpora`` next to the repository (present in CI).
SHARED_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"

_NAMES = ("tinyshakespeare.txt", "gutenberg_en_20M.txt")
#: The stand-ins' sizes: tinyshakespeare's own size; gutenberg's role is "a few MB of real text".
_STAND_IN_BYTES = {"tinyshakespeare.txt": 1_115_394, "gutenberg_en_20M.txt": None}


def _stand_ins() -> Path:
    """Builds (once, in the cache) the stand-in folder from the built-in corpus."""
    import corpora
    from corpora.builtin import cache_dir

    source = corpora.builtin_corpus()
    folder = cache_dir() / f"test-corpora-{source.stem}"
    folder.mkdir(parents=True, exist_ok=True)
    text: str | None = None
    for name in _NAMES:
        target = folder / name
        if target.exists():
            continue
        if text is None:
            text = source.read_text(encoding="utf-8")
        limit = _STAND_IN_BYTES[name]
        body = text if limit is None else text[: text.rfind("\n", 0, limit) + 1]
        tmp = target.with_suffix(".tmp")
        tmp.write_text(body, encoding="utf-8")
        tmp.replace(target)  # atomic: parallel test processes never read half a file
    return folder


def _real_corpora() -> Path:
    if all((SHARED_CORPORA / name).exists() for name in _NAMES):
        return SHARED_CORPORA
    return _stand_ins()


#: The folder with ``tinyshakespeare.txt`` and ``gutenberg_en_20M.txt``: the real ones or the stand-ins.
CORPORA = _real_corpora()
#: Whether :data:`CORPORA` holds the shared corpora themselves.
USING_SHARED = CORPORA == SHARED_CORPORA
