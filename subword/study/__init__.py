"""``subword study``: train several vocabularies, compare them, pretrain the same small model on each under
an equal budget, score the models with measures that do not depend on the tokenizer, and report whether the
intrinsic metrics predicted the outcome.

It composes the other rooms and has no algorithm of its own: the trainer registry
(:func:`subword.trainers.train`), :func:`subword.compare`, :func:`models.pretrain.pretrain` (exact resume),
:mod:`models.scoring` and :mod:`models.shared_init`. See ``docs/study.md``.

>>> from subword.study import parse_spec
>>> parse_spec("unigram:4000:compat=hf").name
'unigram-4000-hf'
"""

from __future__ import annotations

from subword.study.runner import StudyPlan, prepare, run_study
from subword.study.spec import Budget, StudyError, TokenizerSpec, parse_budget, parse_spec

__all__ = ["StudyPlan", "StudyError", "TokenizerSpec", "Budget", "prepare", "run_study", "parse_spec",
           "parse_budget"]
