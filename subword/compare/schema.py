"""The JSON schema of the ``subword compare`` document (``schema.json`` beside this file).

>>> schema()["properties"]["schema_version"]
{'const': 2}
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["schema", "validate", "SCHEMA_PATH"]

SCHEMA_PATH = Path(__file__).with_name("schema.json")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The schema as a dict."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(doc: dict[str, Any]) -> None:
    """Checks ``doc`` against the schema with the ``jsonschema`` package (a dev dependency).

    Raises:
        jsonschema.ValidationError: the document does not match (the message says where).
    """
    import jsonschema

    jsonschema.validate(doc, schema(), cls=jsonschema.Draft202012Validator)
