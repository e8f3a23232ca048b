"""Readable pure-Python reference algorithms: the oracle the Rust core is tested against.

Each module is short, says how it differs from its neighbours, and favours clarity over speed
(while staying usable on real corpora).

- :mod:`subword.reference.bpe`: the HF-compatible BPE trainer and the rank-based BPE encoder.
- :mod:`subword.reference.unigram`: the Unigram lattice, Viterbi, sampling and EM trainer (sentencepiece
  0.2.3 and HF modes; identical output to ``rust/src/unigram``).
"""
