"""Fetch the real tokenizer files that PyPI packages ship only in their sdists (openai-whisper's tiktoken files,
the sentencepiece sdist's test models) into the compatibility corpus folder the tests read.

The folder is ``$SUBWORD_COMPAT_DIR`` or ``~/.cache/subword-compat``; ``tests/test_compat_files.py`` uses the
files found there and skips the others with the reason. Uses ``pip download`` (the ordinary registry client),
pinned versions, no build and no install.

    python benchmarks/fetch_compat_files.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: (sdist requirement, member path inside the sdist, file name in the corpus folder)
SDIST_FILES = [
    ("openai-whisper==20250625", "openai_whisper-20250625/whisper/assets/gpt2.tiktoken", "whisper-gpt2.tiktoken"),
    ("openai-whisper==20250625", "openai_whisper-20250625/whisper/assets/multilingual.tiktoken",
     "whisper-multilingual.tiktoken"),
    ("sentencepiece==0.2.3", "sentencepiece-0.2.3/test/botchan_en_bpe_1000.model", "botchan_en_bpe_1000.model"),
    ("sentencepiece==0.2.3", "sentencepiece-0.2.3/test/botchan_en_unigram_1000.model", "botchan_en_unigram_1000.model"),
    ("sentencepiece==0.2.3", "sentencepiece-0.2.3/test/kyoto_ja_unigram_8000.model", "kyoto_ja_unigram_8000.model"),
]


def compat_dir() -> Path:
    """Where the fetched files live."""
    return Path(os.environ.get("SUBWORD_COMPAT_DIR") or Path.home() / ".cache" / "subword-compat")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=compat_dir())
    args = parser.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for requirement in sorted({r for r, _, _ in SDIST_FILES}):
            name = requirement.split("==")[0]
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name, "-q",
                            "-d", tmp, requirement], check=True)
        for sdist in Path(tmp).glob("*.tar.gz"):
            with tarfile.open(sdist) as tar:
                for _, member, name in SDIST_FILES:
                    try:
                        data = tar.extractfile(member)
                    except KeyError:
                        continue
                    if data is not None:
                        (args.dest / name).write_bytes(data.read())
                        print(f"{args.dest / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
