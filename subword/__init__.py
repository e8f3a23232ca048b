"""subword: train, compare and use subword tokenizers, with a Rust core."""
