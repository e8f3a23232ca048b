"""``subword study`` checks every tokenizer against the model's special tokens before anything runs.

For every model family the plan with a tiktoken name and a trained spec is accepted and the tokenizers it
will pretrain on have the roles (``[PAD]``, ``[CLS]``, ``[SEP]``, ``[MASK]``) at ids the model's configuration
takes; a given file without a role, or with one the model cannot use, is refused in one line naming the file
and the role, exit 1, with nothing written. No pretraining runs here (the plan and a 300-token BPE only).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli.main import cli
from models.pretrain import DEFAULTS, check_tokenizer_fits
from subword import Tokenizer, WordPiece
from subword.pre_tokenizers import Whitespace
from subword.study import StudyError, StudyPlan, parse_spec, prepare
from subword.study.runner import ROLE_TOKENS, _train, _with_roles, check_fits

MODELS = sorted(DEFAULTS)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import corpora

    root = tmp_path_factory.mktemp("specials")
    lines = [line for _, line in zip(range(800), open(corpora.builtin_corpus(), encoding="utf-8"))]
    train = root / "train.txt"
    train.write_text("".join(lines), encoding="utf-8")
    return train


@pytest.fixture(scope="module")
def tiktoken_plan(corpus):
    """The plan's view of ``cl100k_base`` (RoBERTa: the model the appended layout did not fit)."""
    try:
        return prepare(StudyPlan(tokenizers=["cl100k_base", "bpe:300"], train=[str(corpus)], model="roberta",
                                 seq_len=32))
    except StudyError as exc:
        if "cannot load the tiktoken encoding" in str(exc):
            pytest.skip(f"cl100k_base is not available offline here: {exc}")
        raise


@pytest.fixture(scope="module")
def trained(corpus):
    return _train(parse_spec("bpe:300"), [str(corpus)])


def _plan(model, **kw):
    return StudyPlan(tokenizers=["a", "b"], model=model, seq_len=32, **kw)


@pytest.mark.parametrize("model", MODELS)
def test_every_model_accepts_the_plans_tiktoken_and_trained_tokenizers(model, tiktoken_plan, trained, corpus):
    plan = _plan(model)
    for tok in (tiktoken_plan.given["cl100k_base"], trained):
        check_fits(tok, plan, "tok")
        ids = check_tokenizer_fits(model, tok, preset=plan.preset, objective=plan.objective(), seq_len=32)
        assert ids == {"pad": 0, "cls": 2, "sep": 3, "mask": 4}
        assert [tok.id_to_token(i) for i in range(5)] == ROLE_TOKENS
    # The whole plan step for this model: a tiktoken name and a trained spec are accepted.
    if model != "roberta":  # roberta's plan is the fixture's
        from subword.study import runner

        # Only the check differs between models: reuse the loaded encoding instead of converting it again.
        given = tiktoken_plan.given["cl100k_base"]
        original = runner._roles_first
        runner._roles_first = lambda tok: given
        try:
            prepared = prepare(StudyPlan(tokenizers=["cl100k_base", "bpe:300"], train=[str(corpus)], model=model,
                                         seq_len=32))
        finally:
            runner._roles_first = original
        assert set(prepared.given) == {"cl100k_base"}


def test_tiktoken_with_the_roles_first_encodes_as_tiktoken_shifted(tiktoken_plan):
    import corpora

    from subword.compare.sources import load

    plain, _ = load("cl100k_base")
    lines = [line.rstrip("\n") for _, line in zip(range(300), open(corpora.builtin_corpus(), encoding="utf-8"))]
    shifted = [[i - len(ROLE_TOKENS) for i in e.ids] for e in tiktoken_plan.given["cl100k_base"].encode_batch(lines)]
    assert shifted == [e.ids for e in plain.encode_batch(lines)]
    assert tiktoken_plan.given["cl100k_base"].token_to_id("<|endoftext|>") == plain.token_to_id("<|endoftext|>") + 5


def test_roles_appended_after_tiktoken_do_not_fit_roberta(tiktoken_plan):
    """The check can fail: the old layout ([PAD] at 100,280, after the encoding's specials) leaves RoBERTa
    no positions."""
    from subword.compare.sources import load

    appended = _with_roles(load("cl100k_base")[0])
    check_fits(appended, _plan("bert"), "cl100k_base")
    with pytest.raises(StudyError, match=r"-t cl100k_base: cannot pretrain roberta on it: .*padding offset 100281"):
        check_fits(appended, _plan("roberta"), "cl100k_base")


def _file_without(tmp_path, missing: str):
    vocab = [t for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] if t != missing] + list("abcdefgh")
    tok = Tokenizer(WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"), pre_tokenizer=Whitespace())
    path = tmp_path / f"no-{missing.strip('[]').lower()}.json"
    tok.save(path)
    return path


@pytest.mark.parametrize("model", MODELS)
def test_a_file_without_a_special_is_refused_before_anything_is_written(model, tmp_path, corpus):
    path = _file_without(tmp_path, "[MASK]")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(corpus), "-t", str(path), "-t", "bpe:300", "-o", str(out),
                                      "--model", model, "--seq-len", "32", "-q"])
    assert result.exit_code == 1, result.output
    message = [line for line in result.output.splitlines() if line.strip()]
    assert len(message) == 1 and str(path) in message[0] and "mask ([MASK] or <mask>)" in message[0], message
    assert not out.exists()


def test_a_file_missing_two_roles_names_both(tmp_path):
    vocab = ["[UNK]", "[CLS]", "[SEP]", "a"]
    path = tmp_path / "two.json"
    Tokenizer(WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]")).save(path)
    with pytest.raises(StudyError, match=r"two\.json: lacks the special token for mask .*; pad \(\[PAD\] or <pad>\)"):
        prepare(StudyPlan(tokenizers=[str(path), "bpe:300"], model="bert"))


def test_a_trained_spec_the_model_cannot_take_is_refused_in_the_plan(tmp_path, corpus):
    """The trained layout is checked before training: here the sequence is longer than the preset's positions."""
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(corpus), "-t", "bpe:300", "-t", "wordpiece:300", "-o", str(out),
                                      "--model", "roberta", "--seq-len", "4096", "-q"])
    assert result.exit_code == 1 and "-t bpe:300: cannot pretrain roberta" in result.output, result.output
    assert "--seq-len 4096 exceeds" in result.output and not out.exists()
