"""File formats: ``hf_json`` (HF ``tokenizer.json``, the one serialisation standard) and friends."""
