"""Generated CJK text for tests and benchmarks, made here without a download.

No CJK corpus ships with the project, and the few kilobytes of CJK prose a Python install carries
(CPython's codec test files) are too small to train or time a tokenizer on. :func:`cjk_lines`
generates text with the statistics that matter to a subword tokenizer instead:

* a lexicon of words of 1 to 4 characters, drawn with Zipf-like weights from the CJK Unified
  Ideographs block (so a few hundred characters carry most of the text and thousands are rare,
  as in real Chinese; the rare ones exercise ``<unk>`` and byte fallback);
* word frequencies Zipf-distributed too, words joined without spaces (Chinese, Japanese) into
  clauses ended by ``，``/``、`` and sentences ended by ``。``/``！``/``？``;
* Japanese-style lines with Hiragana particles and Katakana loan words between the Han words,
  Korean-style lines of Hangul syllable words separated by spaces, and now and then an ASCII
  number or Latin word, as in real CJK web text.

The output is deterministic for a given seed.

>>> lines = cjk_lines(2_000, seed=1)
>>> sum(len(x.encode("utf-8")) + 1 for x in lines) >= 2_000
True
>>> any("\\u4e00" <= c <= "\\u9fff" for c in lines[0])
True
>>> cjk_lines(500, seed=1) == cjk_lines(500, seed=1)
True
"""

from __future__ import annotations

import functools
import itertools
import random

__all__ = ["cjk_lines"]

_HAN = (0x4E00, 0x9FFF)
_HANGUL = (0xAC00, 0xD7A3)
_PARTICLES = ["の", "は", "が", "を", "に", "で", "と", "も", "から", "まで", "です", "ます", "した", "する", "ない"]
_LATIN = ["Python", "AI", "GPU", "OK", "CPU", "Unicode", "WiFi", "app", "USB", "iPhone"]


def _zipf_cum(n: int, s: float = 1.05) -> list[float]:
    return list(itertools.accumulate(1.0 / (k + 1) ** s for k in range(n)))


def _word(rng: random.Random, chars: list[str], cum: list[float], lo: int, hi: int) -> str:
    return "".join(rng.choices(chars, cum_weights=cum, k=rng.choice(range(lo, hi + 1))))


@functools.lru_cache(maxsize=1)
def _lexicon() -> tuple[list[str], list[float], list[str], list[float], list[str]]:
    """The "languages": the same characters, words and frequencies whatever the text's seed, so
    text made with one seed (training) and another (held out) share their frequent words."""
    rng = random.Random(20260)
    han = [chr(c) for c in range(*_HAN)]
    rng.shuffle(han)
    han_cum = _zipf_cum(len(han), 1.15)  # steeper than words: ~3,000 characters carry ~97% of the text
    hangul = [chr(c) for c in range(*_HANGUL)]
    rng.shuffle(hangul)
    hangul = hangul[:3000]
    hangul_cum = _zipf_cum(len(hangul))
    han_words = [_word(rng, han, han_cum, 1, 4) for _ in range(30_000)]
    ko_words = [_word(rng, hangul, hangul_cum, 1, 4) for _ in range(10_000)]
    katakana = [chr(c) for c in range(0x30A1, 0x30FB)]
    return han_words, _zipf_cum(len(han_words)), ko_words, _zipf_cum(len(ko_words)), katakana


def cjk_lines(n_bytes: int, seed: int = 0) -> list[str]:
    """Lines of generated CJK text (Chinese-, Japanese- and Korean-like), at least ``n_bytes``
    bytes of UTF-8 counting one newline per line.

    Args:
        n_bytes: how much text to make.
        seed: the random seed (same seed, same text).

    >>> len(cjk_lines(300, seed=2)) >= 1
    True
    """
    han_words, han_words_cum, ko_words, ko_words_cum, katakana = _lexicon()
    rng = random.Random(seed)

    def extra() -> str:
        r = rng.random()
        if r < 0.02:
            return str(rng.choice([rng.randrange(10), rng.randrange(100), rng.randrange(1990, 2030)]))
        if r < 0.03:
            return rng.choice(_LATIN)
        return ""

    def chinese() -> str:
        out = []
        for _ in range(rng.randint(1, 4)):
            words = rng.choices(han_words, cum_weights=han_words_cum, k=rng.randint(3, 12))
            out.append("".join(w + extra() for w in words) + rng.choice("，，，、"))
        return "".join(out)[:-1] + rng.choice("。。。！？")

    def japanese() -> str:
        out = []
        for _ in range(rng.randint(1, 3)):
            for w in rng.choices(han_words, cum_weights=han_words_cum, k=rng.randint(2, 8)):
                if rng.random() < 0.15:
                    w = "".join(rng.choices(katakana, k=rng.randint(2, 5)))
                out.append(w + rng.choice(_PARTICLES) + extra())
            out.append("、")
        return "".join(out)[:-1] + "。"

    def korean() -> str:
        words = rng.choices(ko_words, cum_weights=ko_words_cum, k=rng.randint(3, 15))
        return " ".join(w + extra() for w in words) + rng.choice(".?!")

    lines: list[str] = []
    size = 0
    while size < n_bytes:
        kind = rng.random()
        make = chinese if kind < 0.7 else japanese if kind < 0.9 else korean
        line = "".join(make() for _ in range(rng.randint(1, 3)))
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    return lines
