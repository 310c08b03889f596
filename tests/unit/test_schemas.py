"""The committed JSON Schemas of the plan and the results file are the models' own."""

from __future__ import annotations

from bot.contracts.schema import SCHEMAS, schema_text
from tests.paths import ROOT


def test_committed_schemas_are_current() -> None:
    for name, model in SCHEMAS.items():
        committed = (ROOT / "docs" / "schema" / name).read_text(encoding="utf-8")
        assert committed == schema_text(model), (
            f"docs/schema/{name} is out of date: run `python -m bot.contracts.schema docs/schema`"
        )


def test_a_results_file_validates_against_the_fields_its_schema_names() -> None:
    schema = SCHEMAS["results.schema.json"].model_json_schema()
    assert set(schema["required"]) >= {"head_sha", "base_sha", "vendor", "evidence"}
    assert schema["additionalProperties"] is False
